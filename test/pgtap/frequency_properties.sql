-- Property tests: every frequency figure equals its plain-SQL reference on
-- randomised tables (5 seeds, 0 to 150,000 rows, 7 column types, NULLs, heavy
-- ties, 1 to 6 columns), serially and, from 60 rows, as partial aggregates in
-- launched parallel workers (each such query run by EXPLAIN ANALYZE, which
-- shows that it did; the planner gives tables of 0 and 1 rows no partial
-- aggregate, so those run serially only).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- seeds x subsets x 2 figures, serially at 4 sizes and in workers at 2 (60
-- and 4,000 rows); the first seed also runs a table large enough for
-- partitioned states, both ways; then 12 checks of one-column int4 and date
-- QIDs (counted per value) and 36 of the front table of recent classes, the
-- row log and merges
SELECT plan(5 * 10 * 2 * (4 + 2) + 10 * 2 * 2 + 12 + 40);

CREATE COLLATION pg_temp.case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- A random table of heavily tied values of many types, about 10% NULL each
CREATE FUNCTION pg_temp.make_random_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (
		c_int integer,
		c_big bigint,
		c_text_c text COLLATE "C",
		c_text_ci text COLLATE pg_temp.case_insensitive,
		c_num numeric,
		c_date date,
		c_float float8
	);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * greatest(8, nrows / 2))::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 5)::bigint * 1000000000000 END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B', 'ab', 'AB'])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B', 'ab', 'AB'])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 1.00, 2.5, 2.50, 3.000, 7])[1 + floor(random() * 7)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 6)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['-0', '0', 'NaN', '1.5', 'Infinity', '-Infinity'])[1 + floor(random() * 6)::int]::float8 END
	FROM generate_series(1, nrows);
	ANALYZE r;
	-- two workers whatever its size, so that 60 rows (one page) get them too
	ALTER TABLE r SET (parallel_workers = 2);
END
$$;

\ir parallel_plans.psql

-- One test: our figure (the query's column ours) = reference, computed
-- serially or (in_workers) by partial aggregates in launched workers
CREATE FUNCTION pg_temp.check_figure(query text, reference text, in_workers boolean, label text)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	run pg_temp.explained_run;
	ours text;
BEGIN
	IF NOT in_workers THEN
		EXECUTE query INTO ours;
		RETURN NEXT is(ours, reference, label);
		RETURN;
	END IF;
	PERFORM pg_temp.force_parallel_plans();
	run := pg_temp.explained(query);
	PERFORM pg_temp.serial_plans();
	ours := run.answer ->> 'ours';
	RETURN QUERY SELECT pg_temp.ok_in_workers(run, ours IS NOT DISTINCT FROM reference, label,
											  format('ours %s, GROUP BY %s', ours, reference));
END
$$;

-- Compare our aggregates with GROUP BY (run serially) over one column subset
CREATE FUNCTION pg_temp.check_subset(cols text[], label text, in_workers boolean) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	collist text := (SELECT string_agg(quote_ident(c), ', ') FROM unnest(cols) c);
	reference text;
BEGIN
	EXECUTE format($q$
		WITH c AS (SELECT count(*) AS n FROM r GROUP BY %1$s)
		SELECT ROW((SELECT count(*) FROM c WHERE n = 1), (SELECT count(*) FROM c),
			(SELECT min(n) FROM c), (SELECT coalesce(sum(n), 0) FROM c WHERE n < 3))::text
	$q$, collist) INTO reference;
	RETURN QUERY SELECT pg_temp.check_figure(
		format('SELECT ROW(singleton_count(%1$s), class_count(%1$s), k_anonymity(%1$s), rows_below_k(3, %1$s))::text AS ours FROM r',
			   collist),
		reference, in_workers, label || ': singletons, classes, k level, rows below 3');

	EXECUTE format($q$
		WITH c AS (SELECT count(*) AS n FROM r GROUP BY %1$s),
		totals AS (SELECT coalesce(sum(n), 0)::bigint AS rows, count(*) AS classes,
			count(*) FILTER (WHERE n = 1) AS singletons, min(n) AS smallest, max(n) AS largest FROM c),
		histogram AS (SELECT coalesce(array_agg(n ORDER BY n), '{}') AS sizes,
			coalesce(array_agg(k ORDER BY n), '{}') AS counts
			FROM (SELECT n, count(*) AS k FROM c GROUP BY n) h)
		SELECT ROW(t.rows, t.classes, t.singletons,
			CASE WHEN t.rows > 0 THEN t.singletons::float8 / t.rows END,
			t.smallest, t.largest, h.sizes, h.counts)::qid_profile::text
		FROM totals t, histogram h
	$q$, collist) INTO reference;
	RETURN QUERY SELECT pg_temp.check_figure(format('SELECT class_profile(%s)::text AS ours FROM r', collist),
											 reference, in_workers, label || ': class_profile');
END
$$;

-- Run every subset over one table, serially or in workers
CREATE FUNCTION pg_temp.check_all_subsets(label text, in_workers boolean) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	subsets text[] := ARRAY[
		'c_int', 'c_text_ci', 'c_num', 'c_float',
		'c_int,c_text_c', 'c_text_c,c_text_ci', 'c_text_ci,c_num,c_date',
		'c_big,c_float,c_int,c_date', 'c_int,c_big,c_text_c,c_num,c_date',
		'c_int,c_big,c_text_ci,c_num,c_date,c_float'];
	subset text;
BEGIN
	FOREACH subset IN ARRAY subsets LOOP
		RETURN QUERY SELECT pg_temp.check_subset(string_to_array(subset, ','), label || ' {' || subset || '}',
												 in_workers);
	END LOOP;
END
$$;

CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	seed float8;
	nrows integer;
BEGIN
	FOREACH seed IN ARRAY ARRAY[0.11, 0.23, 0.37, 0.51, 0.79] LOOP
		FOREACH nrows IN ARRAY CASE WHEN seed = 0.11 THEN ARRAY[0, 1, 60, 4000, 150000]
			ELSE ARRAY[0, 1, 60, 4000] END LOOP
			PERFORM pg_temp.make_random_table(seed, nrows);
			PERFORM pg_temp.serial_plans();
			RETURN QUERY SELECT pg_temp.check_all_subsets(format('seed %s, %s rows, serial', seed, nrows), false);
			IF nrows >= 60 THEN
				RETURN QUERY SELECT pg_temp.check_all_subsets(format('seed %s, %s rows, parallel', seed, nrows), true);
			END IF;
		END LOOP;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_all();

-- A one-column int4 or date QID is counted per value before its values are
-- fingerprinted: past the table of held values (98,304 values), with the
-- extreme int4 values and NULLs, when the budget is too small to hold many
-- values, in workers, and as a window aggregate (which never holds values)
CREATE TABLE held AS
SELECT CASE WHEN i % 11 = 0 THEN NULL WHEN i % 7 = 0 THEN -2147483648
			WHEN i % 5 = 0 THEN 2147483647 ELSE (i::bigint * 7919 % 120000 - 60000)::int END AS v,
	date '2000-01-01' + i % 5000 AS d
FROM generate_series(1, 300000) i;
ANALYZE held;

-- Our figures and GROUP BY's for one column of held, rows filtered by cond;
-- the run of our query, and how many states it partitioned
CREATE FUNCTION pg_temp.held_figures(col text, cond text, OUT ours text, OUT reference text,
									 OUT run pg_temp.explained_run, OUT partitioned bigint)
LANGUAGE plpgsql AS $$
BEGIN
	partitioned := -(SELECT e.partitioned FROM qidrisk_internal.state_events() e);
	run := pg_temp.explained(format('SELECT ROW(singleton_count(%1$I), class_count(%1$I), k_anonymity(%1$I), rows_below_k(3, %1$I))::text AS ours FROM held WHERE %2$s', col, cond));
	partitioned := partitioned + (SELECT e.partitioned FROM qidrisk_internal.state_events() e);
	ours := run.answer ->> 'ours';
	EXECUTE format($q$
		WITH c AS (SELECT count(*) AS n FROM held WHERE %2$s GROUP BY %1$I)
		SELECT ROW((SELECT count(*) FROM c WHERE n = 1), (SELECT count(*) FROM c),
			(SELECT min(n) FROM c), (SELECT coalesce(sum(n), 0) FROM c WHERE n < 3))::text
	$q$, col, cond) INTO reference;
END
$$;

SET LOCAL max_parallel_workers_per_gather = 0;
SELECT is(ours, reference, 'held int4 values past the table''s capacity = GROUP BY')
FROM pg_temp.held_figures('v', 'true');
SELECT is(ours, reference, 'held int4 values, a few hundred of them = GROUP BY')
FROM pg_temp.held_figures('v', 'v BETWEEN -300 AND 300 OR v IS NULL');
SELECT is(ours, reference, 'held date values = GROUP BY')
FROM pg_temp.held_figures('d', 'true');
SET LOCAL qidrisk.max_state_memory = '1MB';
SELECT is(ours, reference, 'held int4 values within a 1MB budget = GROUP BY')
FROM pg_temp.held_figures('v', 'true');
-- all held until the final function, whose flush outgrows the single table
CREATE TEMP TABLE held_run AS SELECT * FROM pg_temp.held_figures('v', 'v BETWEEN -12000 AND 12000');
SELECT is(ours, reference, 'held int4 values partitioned when counted, 1MB budget = GROUP BY') FROM held_run;
SELECT cmp_ok(partitioned, '>', 0::bigint, 'held int4 values, 1MB budget: the query partitioned a state')
FROM held_run;
-- ... and spills (the counters must then come from streaming the runs)
SET LOCAL qidrisk.max_state_memory = '600kB';
CREATE TEMP TABLE spilled_run AS
SELECT * FROM pg_temp.explained('SELECT ROW(class_count(i), singleton_count(i))::text AS ours FROM generate_series(1, 40000) i, generate_series(1, 2) j');
SELECT is(answer ->> 'ours', '(40000,0)', 'held int4 values spilled when counted, 600kB budget: the exact counts')
FROM spilled_run;
SELECT cmp_ok(spilled_blocks, '>', 0::bigint, 'held int4 values counted, 600kB budget: the aggregate wrote temporary blocks')
FROM spilled_run;
SET LOCAL qidrisk.max_state_memory = '1MB';
TRUNCATE spilled_run;
INSERT INTO spilled_run
SELECT * FROM pg_temp.explained('SELECT kl_uniform(v)::numeric(20, 12) AS kl FROM held WHERE v BETWEEN -12000 AND 12000');
SELECT is((SELECT (answer ->> 'kl')::numeric FROM spilled_run),
		  (SELECT sum(p * ln(p * m)) FROM (SELECT count(*)::float8 / sum(count(*)) OVER () AS p,
				count(*) OVER () AS m FROM held WHERE v BETWEEN -12000 AND 12000 GROUP BY v) s)::numeric(20, 12),
		  'kl_uniform of held int4 values spilled when read, 1MB budget = plain SQL');
SELECT cmp_ok(spilled_blocks, '>', 0::bigint, 'kl_uniform of held int4 values, 1MB budget: the aggregate wrote temporary blocks')
FROM spilled_run;
RESET qidrisk.max_state_memory;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT pg_temp.ok_in_workers(run, ours IS NOT DISTINCT FROM reference, 'held int4 values in workers = GROUP BY',
							 format('ours %s, GROUP BY %s', ours, reference))
FROM pg_temp.held_figures('v', 'true');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET LOCAL max_parallel_workers_per_gather = 0;
SELECT is((SELECT singleton_count(d) OVER () FROM held LIMIT 1),
		  (SELECT count(*) FROM (SELECT 1 FROM held GROUP BY d HAVING count(*) = 1) c),
		  'a window aggregate over a date column = GROUP BY');


-- The front table of recent classes (started after 4,096 rows of a state,
-- judged every 16,384, given up when it misses more often than it holds, tried
-- again 1,048,576 rows later): fr's rows come in order of i (a new table, read
-- by a serial scan): 60,000 rows of 291 classes, 1,040,000 distinct rows, then
-- 50,000 rows of the first classes again; h puts three rows in four into 100
-- hot classes and the fourth into a class of its own (a QID of h alone would
-- be counted per value, so h goes with b).  The four figures of a query come
-- from two states (rows_below_k keeps its own): each event counts twice.
CREATE TABLE fr AS
SELECT i, CASE WHEN i <= 60000 OR i > 1100000 THEN i % 97 ELSE i END AS a,
	(i % 3)::text AS b, CASE WHEN i % 4 <> 0 THEN i % 100 ELSE i END AS h
FROM generate_series(1, 1150000) i;
ANALYZE fr;

-- Our figures and GROUP BY's for QID columns qid of fr, rows filtered by cond,
-- and the front tables this process's states started and gave up meanwhile
-- (suffix '_key': the aggregates over qid_key's uuid; tab: another table)
CREATE FUNCTION pg_temp.front_figures(qid text, cond text, suffix text DEFAULT '', tab text DEFAULT 'fr',
									  OUT ours text, OUT reference text,
									  OUT started bigint, OUT given_up bigint, OUT partitioned bigint,
									  OUT from_front bigint, OUT logged bigint, OUT log_counted bigint,
									  OUT log_flushed bigint, OUT into_partitions bigint, OUT crowded bigint)
LANGUAGE plpgsql AS $$
DECLARE
	before record;
	after record;
BEGIN
	SELECT * INTO before FROM qidrisk_internal.state_events();
	EXECUTE format('SELECT ROW(singleton_count%3$s(%1$s), class_count%3$s(%1$s), k_anonymity%3$s(%1$s), rows_below_k%3$s(3, %1$s))::text FROM %4$I WHERE %2$s',
				   qid, cond, suffix, tab) INTO ours;
	SELECT * INTO after FROM qidrisk_internal.state_events();
	started := after.fronts_started - before.fronts_started;
	given_up := after.fronts_given_up - before.fronts_given_up;
	partitioned := after.partitioned - before.partitioned;
	from_front := after.merges_from_front - before.merges_from_front;
	logged := after.logs_started - before.logs_started;
	log_counted := after.logs_counted - before.logs_counted;
	log_flushed := after.logs_flushed - before.logs_flushed;
	into_partitions := after.logs_into_partitions - before.logs_into_partitions;
	crowded := after.logs_crowded - before.logs_crowded;
	EXECUTE format($q$
		WITH c AS (SELECT count(*) AS n FROM %3$I WHERE %2$s GROUP BY %1$s)
		SELECT ROW((SELECT count(*) FROM c WHERE n = 1), (SELECT count(*) FROM c),
			(SELECT min(n) FROM c), (SELECT coalesce(sum(n), 0) FROM c WHERE n < 3))::text
	$q$, qid, cond, tab) INTO reference;
END
$$;

SET LOCAL max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE front_runs AS
SELECT 'few' AS run, * FROM pg_temp.front_figures('a, b', 'i <= 60000')
UNION ALL SELECT 'few, distinct', * FROM pg_temp.front_figures('a, b', 'i <= 260000')
UNION ALL SELECT 'few, distinct, few', * FROM pg_temp.front_figures('a, b', 'true')
UNION ALL SELECT 'hot', * FROM pg_temp.front_figures('h, b', 'true')
UNION ALL SELECT 'key', * FROM pg_temp.front_figures('qid_key(a, b)', 'i <= 260000', '_key')
UNION ALL SELECT 'hot, key', * FROM pg_temp.front_figures('qid_key(h, b)', 'true', '_key')
UNION ALL SELECT 'repeated', * FROM pg_temp.front_figures('a % 100000, b', 'true');
-- budgets: with room for the log to grow and be counted into arrays (every
-- eighth row joins the class of the row before it), and without (the log is
-- counted into partitions whose buffers merge, and which spill)
SET LOCAL qidrisk.max_state_memory = '12MB';
INSERT INTO front_runs SELECT 'pairs, 12 MB', * FROM pg_temp.front_figures('a - (a % 8 = 0)::int, b IS NULL', 'i <= 260000');
SET LOCAL qidrisk.max_state_memory = '9MB';
INSERT INTO front_runs SELECT 'pairs, 9 MB', * FROM pg_temp.front_figures('a - (a % 8 = 0)::int, b IS NULL', 'i <= 260000');
SET LOCAL qidrisk.max_state_memory = '12MB';
INSERT INTO front_runs SELECT 'few, distinct, few, 12 MB', * FROM pg_temp.front_figures('a, b', 'true');
RESET qidrisk.max_state_memory;
SELECT ok(logged = 2 AND log_flushed = 2 AND into_partitions = 2 AND partitioned = 2,
		  'distinct rows that begin to repeat: logged, then counted straight into sorted partitions')
FROM front_runs WHERE run = 'repeated';
SELECT is(ours, reference, 'pairs logged within a budget = GROUP BY') FROM front_runs WHERE run = 'pairs, 12 MB';
SELECT ok(logged = 2 AND log_counted = 3 AND log_flushed = 0, 'pairs logged within a budget: counted in place')
FROM front_runs WHERE run = 'pairs, 12 MB';
SELECT is(ours, reference, 'pairs logged near the budget = GROUP BY') FROM front_runs WHERE run = 'pairs, 9 MB';
SELECT ok(logged = 2 AND log_flushed = 2 AND into_partitions = 2,
		  'pairs logged near the budget: counted into sorted partitions before it grows past it')
FROM front_runs WHERE run = 'pairs, 9 MB';
SELECT is(ours, reference, 'rows logged near the budget, then more = GROUP BY') FROM front_runs WHERE run = 'few, distinct, few, 12 MB';
SELECT ok(logged = 2 AND log_flushed = 2 AND into_partitions = 2 AND partitioned = 2,
		  'rows logged near the budget, then more: counted into sorted partitions, whose buffers merge')
FROM front_runs WHERE run = 'few, distinct, few, 12 MB';
SELECT is(ours, reference, 'front table, 291 classes = GROUP BY') FROM front_runs WHERE run = 'few';
SELECT ok(started = 2 AND given_up = 0, 'front table, 291 classes: started, kept')
FROM front_runs WHERE run = 'few';
SELECT is(ours, reference, 'front table given up on distinct rows = GROUP BY') FROM front_runs WHERE run = 'few, distinct';
-- past 65,536 classes from about as many rows, the next rows are logged; the
-- four figures count the log in place three times (singleton_count and
-- class_count share one count, k_anonymity and rows_below_k visit the classes)
SELECT ok(started = 2 AND given_up = 2 AND logged = 2 AND log_counted = 3 AND partitioned = 0,
		  'front table given up on distinct rows: started, given up, rows logged and counted in place')
FROM front_runs WHERE run = 'few, distinct';
SELECT is(ours, reference, 'front table tried again after a million rows = GROUP BY') FROM front_runs WHERE run = 'few, distinct, few';
SELECT ok(started = 4 AND given_up = 2, 'front table tried again after a million rows: started twice, given up once')
FROM front_runs WHERE run = 'few, distinct, few';
SELECT is(ours, reference, 'front table of 300 hot classes among 287,725 classes = GROUP BY') FROM front_runs WHERE run = 'hot';
SELECT ok(started = 2 AND given_up = 0 AND logged = 2, 'front table of hot classes: kept while the state logged its other rows')
FROM front_runs WHERE run = 'hot';
SELECT is(ours, reference, 'front table of the _key aggregates = GROUP BY') FROM front_runs WHERE run = 'key';
SELECT ok(started = 2 AND given_up = 2, 'front table of the _key aggregates: started, given up') FROM front_runs WHERE run = 'key';
-- a key is remixed as it leaves the front table; the first 4,096 rows, before
-- the table starts, are remixed as they come: a hot class is counted both ways
SELECT is(ours, reference, 'front table of the _key aggregates, hot classes = GROUP BY') FROM front_runs WHERE run = 'hot, key';
SELECT ok(started = 2 AND given_up = 0 AND logged = 2, 'front table of the _key aggregates, hot classes: kept while the state logged its other rows')
FROM front_runs WHERE run = 'hot, key';
-- 300,000 classes of about four rows: a merge into a partition's array from
-- the back leaves the classes both held free before it, and a later run is
-- merged into them from the front
SELECT is(ours, reference, 'runs merged from the front and the back = GROUP BY') FROM front_runs WHERE run = 'repeated';
SELECT cmp_ok(from_front, '>', 0::bigint, 'runs merged from the front and the back: some from the front')
FROM front_runs WHERE run = 'repeated';
-- one class of more rows than a sorted bucket takes (16 times 16,384), logged
-- while the other rows are new: its fingerprint lies outside the sketch's
-- sample (a class in 8, by the low bits of its high half, the uuid's eighth
-- byte), so the sketch sees them repeat only once a in i % 640000 comes
-- round again.  Counted into sorted partitions, its rows crowd one bucket, and
-- the log is counted class by class into partitions instead.
CREATE TABLE crowd AS
SELECT i, CASE WHEN i % 8 IN (1, 4, 7) THEN -5 ELSE i % 640000 END AS a,
	CASE WHEN i % 8 IN (1, 4, 7) THEN 'h' ELSE 'd' END AS b
FROM generate_series(1, 1400000) i;
ANALYZE crowd;
SELECT ok(get_byte(uuid_send(qid_key(-5, 'h'::text)), 7) & 7 <> 0,
		  'the crowding class (-5, ''h'') lies outside the row log''s sketch sample');
INSERT INTO front_runs SELECT 'crowded', * FROM pg_temp.front_figures('a, b', 'true', tab => 'crowd');
SELECT is(ours, reference, 'a class crowding a sorted bucket of the row log = GROUP BY') FROM front_runs WHERE run = 'crowded';
SELECT ok(logged = 2 AND log_flushed = 2 AND crowded = 2 AND into_partitions = 0 AND partitioned = 2,
		  format('a class crowding a sorted bucket of the row log: logged, then counted class by class into partitions (%s)', front_runs))
FROM front_runs WHERE run = 'crowded';
DROP TABLE crowd;
-- a sorted aggregate holds one group's state at a time, a hashed one every
-- group's: front tables in the first only.  Groups keyed by an xid, which
-- hashes but has no order, can only be hashed; by an integer, with hashing
-- off, only sorted.
CREATE FUNCTION pg_temp.group_figures(group_key text, OUT ours text, OUT reference text, OUT started bigint,
									  agg text DEFAULT 'singleton_count(h, a)')
LANGUAGE plpgsql AS $$
DECLARE
	before bigint := (SELECT fronts_started FROM qidrisk_internal.state_events());
BEGIN
	EXECUTE format($q$SELECT string_agg(format('%%s:%%s', g, n), ' ' ORDER BY g::text)
		FROM (SELECT %s AS g, %s AS n FROM fr WHERE i <= 90000 GROUP BY 1) s$q$, group_key, agg)
	INTO ours;
	started := (SELECT fronts_started FROM qidrisk_internal.state_events()) - before;
	SELECT string_agg(format('%s:%s', g, n), ' ' ORDER BY g) INTO reference
	FROM (SELECT g, count(*) FILTER (WHERE n = 1) AS n
		  FROM (SELECT i % 3 AS g, count(*) AS n FROM fr WHERE i <= 90000 GROUP BY i % 3, h, a) c
		  GROUP BY g) s;
END
$$;
SET LOCAL enable_hashagg = off;
CREATE TEMP TABLE group_runs AS SELECT 'sorted' AS strategy, * FROM pg_temp.group_figures('i % 3');
RESET enable_hashagg;
INSERT INTO group_runs SELECT 'hashed', * FROM pg_temp.group_figures('(i % 3)::text::xid');
INSERT INTO group_runs SELECT 'hashed, key', * FROM pg_temp.group_figures('(i % 3)::text::xid', agg => 'singleton_count_key(qid_key(h, a))');
SET LOCAL enable_hashagg = off;
INSERT INTO group_runs SELECT 'sorted, key', * FROM pg_temp.group_figures('i % 3', agg => 'singleton_count_key(qid_key(h, a))');
RESET enable_hashagg;
SELECT is(ours, reference, 'front tables of three groups'' states, sorted aggregate = GROUP BY')
FROM group_runs WHERE strategy = 'sorted';
SELECT is(started, 3::bigint, 'three groups, sorted aggregate: a front table each')
FROM group_runs WHERE strategy = 'sorted';
SELECT is(ours, reference, 'three groups'' states, hashed aggregate = GROUP BY')
FROM group_runs WHERE strategy = 'hashed';
SELECT is(started, 0::bigint, 'three groups, hashed aggregate: no front table')
FROM group_runs WHERE strategy = 'hashed';
-- a hashed aggregate's key states spread each key as it comes, a sorted one's 32 at a time
SELECT is(ours, reference, 'three groups'' _key states, hashed aggregate = GROUP BY')
FROM group_runs WHERE strategy = 'hashed, key';
SELECT is(ours, reference, 'three groups'' _key states, sorted aggregate = GROUP BY')
FROM group_runs WHERE strategy = 'sorted, key';
-- no front table where there is no room for it (an eighth of the budget), and
-- one in a state that spills
SET LOCAL qidrisk.max_state_memory = '600kB';
TRUNCATE front_runs;
INSERT INTO front_runs SELECT 'small budget', * FROM pg_temp.front_figures('h, b', 'i <= 300000');
SELECT is(ours, reference, 'no front table within a 600kB budget = GROUP BY') FROM front_runs;
SELECT is(started, 0::bigint, 'no front table within a 600kB budget: none started') FROM front_runs;
SET LOCAL qidrisk.max_state_memory = '1MB';
TRUNCATE spilled_run;
INSERT INTO spilled_run
SELECT * FROM pg_temp.explained('SELECT ROW(singleton_count(h, b), class_count(h, b), k_anonymity(h, b))::text AS ours FROM fr WHERE i <= 300000');
SELECT is(answer ->> 'ours', (SELECT ROW(count(*) FILTER (WHERE n = 1), count(*), min(n))::text
							  FROM (SELECT count(*) AS n FROM fr WHERE i <= 300000 GROUP BY h, b) c),
		  'front table of a state that spills, 1MB budget = GROUP BY')
FROM spilled_run;
SELECT cmp_ok(spilled_blocks, '>', 0::bigint, 'front table of a state that spills: the aggregate wrote temporary blocks')
FROM spilled_run;
-- arrays with free classes before them, merged from the front, spilled
TRUNCATE front_runs;
INSERT INTO front_runs SELECT 'repeated, 1MB', * FROM pg_temp.front_figures('a % 100000, b', 'true');
SELECT is(ours, reference, 'runs merged from the front in a state that spills, 1MB budget = GROUP BY') FROM front_runs;
SELECT cmp_ok(from_front, '>', 0::bigint, 'runs merged from the front in a state that spills: some from the front') FROM front_runs;
TRUNCATE spilled_run;
INSERT INTO spilled_run
SELECT * FROM pg_temp.explained('SELECT singleton_count(a % 100000, b) AS ours FROM fr');
SELECT cmp_ok(spilled_blocks, '>', 0::bigint, 'runs merged from the front in a state that spills: the aggregate wrote temporary blocks')
FROM spilled_run;
RESET qidrisk.max_state_memory;
-- a window aggregate reads its state after every row: it never starts one
SELECT fronts_started AS started_before FROM qidrisk_internal.state_events() \gset
SELECT is((SELECT n FROM (SELECT i, singleton_count(a, b) OVER (ORDER BY i) AS n FROM fr WHERE i <= 30000) w
		   ORDER BY i DESC LIMIT 1),
		  (SELECT count(*) FROM (SELECT 1 FROM fr WHERE i <= 30000 GROUP BY a, b HAVING count(*) = 1) c),
		  'a window aggregate over 30,000 rows of fr = GROUP BY');
SELECT is(fronts_started - :started_before, 0::bigint, 'a window aggregate over 30,000 rows: no front table started')
FROM qidrisk_internal.state_events();
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT pg_temp.ok_in_workers(run, ours IS NOT DISTINCT FROM reference, 'front tables in workers = GROUP BY',
							 format('ours %s, GROUP BY %s', ours, reference))
FROM pg_temp.explained('SELECT ROW(singleton_count(h, b), class_count(h, b), k_anonymity(h, b), rows_below_k(3, h, b))::text AS ours FROM fr') AS run,
	LATERAL (SELECT run.answer ->> 'ours' AS ours) o,
	LATERAL (SELECT ROW(count(*) FILTER (WHERE n = 1), count(*), min(n), coalesce(sum(n) FILTER (WHERE n < 3), 0))::text AS reference
			 FROM (SELECT count(*) AS n FROM fr GROUP BY h, b) c) r;

SELECT * FROM finish();
ROLLBACK;
