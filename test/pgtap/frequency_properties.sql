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
-- QIDs (counted per value)
SELECT plan(5 * 10 * 2 * (4 + 2) + 10 * 2 * 2 + 12);

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

SELECT * FROM finish();
ROLLBACK;
