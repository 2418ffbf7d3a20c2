-- Property tests of spilling: with the smallest budget that
-- still spills (512 kB) every frequency figure, class_profile histogram and
-- _key form equals both the in-memory answer (default budget) and the plain-SQL
-- GROUP BY reference, on random tables (3 seeds, NULLs, heavy ties, 1 to 6
-- columns), serially, in forced parallel plans and partitionwise.  Window
-- aggregates keep the error past the budget; with qidrisk.spill off the error
-- stays too.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- 3 seeds x 3 modes x 6 subsets x 3 checks, plus 3 plan checks, the window
-- and spill-off errors, received states (a plan check and 4 budgets), lent
-- states (4), and the temporary directory
SELECT plan(3 * 3 * 6 * 3 + 3 + 4 + 5 + 4 + 1);

-- A random table: a many-valued integer (so that states spill), heavy ties and
-- about 10% NULLs in the other columns, and a hash-partitioned copy
CREATE FUNCTION pg_temp.make_random_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	DROP TABLE IF EXISTS r_parts;
	CREATE TABLE r (
		g integer,
		c_int integer,
		c_text text COLLATE "C",
		c_small integer,
		c_date date,
		c_float float8,
		c_num numeric
	);
	INSERT INTO r
	SELECT i % 2,
		CASE WHEN random() < 0.05 THEN NULL ELSE floor(random() * nrows * 2)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'ab', 'AB'])[1 + floor(random() * 5)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 7)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 400)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['-0', '0', 'NaN', '1.5', 'Infinity'])[1 + floor(random() * 5)::int]::float8 END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 2.5, 2.50, 7])[1 + floor(random() * 5)::int] END
	FROM generate_series(1, nrows) i;
	CREATE TABLE r_parts (LIKE r) PARTITION BY HASH (c_small);
	CREATE TABLE r_parts_0 PARTITION OF r_parts FOR VALUES WITH (MODULUS 3, REMAINDER 0);
	CREATE TABLE r_parts_1 PARTITION OF r_parts FOR VALUES WITH (MODULUS 3, REMAINDER 1);
	CREATE TABLE r_parts_2 PARTITION OF r_parts FOR VALUES WITH (MODULUS 3, REMAINDER 2);
	INSERT INTO r_parts SELECT * FROM r;
	ANALYZE r;
	ANALYZE r_parts;
END
$$;

-- Every figure of one column subset, per group g, as text: the VARIADIC
-- aggregates, class_profile and the _key forms
CREATE FUNCTION pg_temp.ours(tab text, collist text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format($q$
		SELECT string_agg(x, ';' ORDER BY g) FROM (
			SELECT g, ROW(singleton_count(%2$s), class_count(%2$s), k_anonymity(%2$s),
				rows_below_k(3, %2$s), class_profile(%2$s),
				singleton_count_key(qid_key(%2$s)), class_count_key(qid_key(%2$s)),
				k_anonymity_key(qid_key(%2$s)), rows_below_k_key(3, qid_key(%2$s)),
				class_profile_key(qid_key(%2$s)))::text AS x
			FROM %1$s GROUP BY g) s
	$q$, tab, collist) INTO result;
	RETURN result;
END
$$;

-- The same figures by GROUP BY
CREATE FUNCTION pg_temp.reference(collist text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format($q$
		WITH c AS (SELECT g, count(*) AS n FROM r GROUP BY g, %1$s),
		totals AS (SELECT g, sum(n)::bigint AS rows, count(*) AS classes,
			count(*) FILTER (WHERE n = 1) AS singletons, min(n) AS smallest, max(n) AS largest,
			coalesce(sum(n) FILTER (WHERE n < 3), 0) AS below FROM c GROUP BY g),
		histogram AS (SELECT g, array_agg(n ORDER BY n) AS sizes, array_agg(k ORDER BY n) AS counts
			FROM (SELECT g, n, count(*) AS k FROM c GROUP BY g, n) h GROUP BY g),
		profile AS (SELECT t.g, t.singletons, t.classes, t.smallest, t.below,
			ROW(t.rows, t.classes, t.singletons, t.singletons::float8 / t.rows,
				t.smallest, t.largest, h.sizes, h.counts)::qid_profile AS p
			FROM totals t JOIN histogram h USING (g))
		SELECT string_agg(ROW(singletons, classes, smallest, below, p,
			singletons, classes, smallest, below, p)::text, ';' ORDER BY g) FROM profile
	$q$, collist) INTO result;
	RETURN result;
END
$$;

CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	seed float8;
	subset text;
	mode text;
	tab text;
	in_memory text;
	spilled text;
	reference text;
	subsets text[] := ARRAY['c_int', 'c_int,c_text', 'c_date,c_int,c_small',
		'c_int,c_float,c_num,c_text', 'c_small,c_date,c_float,c_num,c_text',
		'c_int,c_text,c_small,c_date,c_float,c_num'];
BEGIN
	FOREACH seed IN ARRAY ARRAY[0.13, 0.42, 0.77] LOOP
		PERFORM pg_temp.make_random_table(seed, 60000);
		FOREACH mode IN ARRAY ARRAY['serial', 'parallel', 'partitionwise'] LOOP
			IF mode = 'serial' THEN
				SET LOCAL max_parallel_workers_per_gather = 0;
				tab := 'r';
			ELSIF mode = 'parallel' THEN
				SET LOCAL parallel_setup_cost = 0;
				SET LOCAL parallel_tuple_cost = 0;
				SET LOCAL min_parallel_table_scan_size = 0;
				SET LOCAL parallel_leader_participation = off;
				SET LOCAL max_parallel_workers_per_gather = 2;
				SET LOCAL enable_hashagg = off;
				tab := 'r';
			ELSE
				SET LOCAL enable_partitionwise_aggregate = on;
				SET LOCAL max_parallel_workers_per_gather = 0;
				tab := 'r_parts';
			END IF;
			FOREACH subset IN ARRAY subsets LOOP
				RESET qidrisk.max_state_memory;
				in_memory := pg_temp.ours(tab, subset);
				SET LOCAL qidrisk.max_state_memory = '512kB';
				spilled := pg_temp.ours(tab, subset);
				RESET qidrisk.max_state_memory;
				reference := pg_temp.reference(subset);
				RETURN NEXT is(spilled, in_memory,
							   format('seed %s, %s, {%s}: spilled = in memory', seed, mode, subset));
				RETURN NEXT is(spilled, reference,
							   format('seed %s, %s, {%s}: spilled = GROUP BY', seed, mode, subset));
				RETURN NEXT ok(spilled IS NOT NULL AND spilled LIKE '%;%',
							   format('seed %s, %s, {%s}: both groups answered', seed, mode, subset));
			END LOOP;
			IF mode = 'parallel' THEN
				RETURN NEXT ok(EXISTS (
					SELECT 1 FROM pg_temp.explain_lines(
						'SELECT g, singleton_count(c_int) FROM r GROUP BY g') l
					WHERE l LIKE '%Partial%Aggregate%'),
					format('seed %s: the parallel plan has partial aggregates', seed));
			END IF;
			RESET parallel_setup_cost;
			RESET parallel_tuple_cost;
			RESET min_parallel_table_scan_size;
			RESET parallel_leader_participation;
			RESET max_parallel_workers_per_gather;
			RESET enable_partitionwise_aggregate;
			RESET enable_hashagg;
		END LOOP;
	END LOOP;
END
$$;

CREATE FUNCTION pg_temp.explain_lines(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		RETURN NEXT line;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_all();

-- window aggregates never spill: past the budget they stop with an error
SET LOCAL qidrisk.max_state_memory = '512kB';
SELECT throws_ok($$SELECT max(s) FROM (SELECT singleton_count(i) OVER (ORDER BY i ROWS BETWEEN 40000 PRECEDING AND CURRENT ROW) AS s FROM generate_series(1, 50000) i) w$$,
	'54000', NULL, 'moving window frame past the budget: 54000');
SELECT throws_ok($$SELECT max(s) FROM (SELECT class_count_key(qid_key(i)) OVER (ORDER BY i) AS s FROM generate_series(1, 50000) i) w$$,
	'54000', NULL, 'growing window frame past the budget: 54000');
-- with spilling off a state past the budget stops too
SET LOCAL qidrisk.spill = off;
SELECT throws_ok($$SELECT singleton_count(c_int) FROM r$$, '54000', NULL, 'qidrisk.spill off: 54000');
SET LOCAL qidrisk.spill = on;
SELECT is((SELECT singleton_count(c_int) FROM r),
	(SELECT count(*) FROM (SELECT 1 FROM r GROUP BY c_int HAVING count(*) = 1) c),
	'qidrisk.spill on again: the exact answer');
RESET qidrisk.max_state_memory;

-- States received from parallel workers with more classes than a single
-- table holds (through temporary files, as their encoding can take 1 MB or
-- more) are merged straight from their files (default budget), decoded into
-- arrays when attaching one more would pass the budget (4MB), or decoded into
-- runs when they do not fit (2MB, 600kB): the GROUP BY answer every way
CREATE TABLE received AS
SELECT (i::bigint * 7919) % 250000 AS a, (i / 7) % 2 AS b FROM generate_series(1, 400000) i;
ANALYZE received;
CREATE TEMP TABLE received_reference AS
SELECT ROW(count(*) FILTER (WHERE n = 1), count(*), min(n))::text AS figures
FROM (SELECT count(*) AS n FROM received GROUP BY a, b) c;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
CREATE FUNCTION pg_temp.received_figures() RETURNS text
LANGUAGE sql AS $$
SELECT ROW(singleton_count(a, b), class_count(a, b), k_anonymity(a, b))::text FROM received
$$;
SELECT ok(EXISTS (SELECT 1 FROM pg_temp.explain_lines(
			  'SELECT singleton_count(a, b) FROM received') l WHERE l LIKE '%Partial%Aggregate%'),
		  'received states: the plan has partial aggregates');
-- The leader's own partial state is lent to its finalize instead of being
-- serialized, once for each of the three aggregates sharing it: beside the
-- workers' states at 8MB, where attaching it would pass the budget so it is
-- merged in (and left as it is for the other aggregates), and alone, when no
-- worker may start (max_parallel_workers 0), at 8MB (spilled, so serialized),
-- 16MB and the default budget
CREATE FUNCTION pg_temp.received_check(budget text, max_workers text, label text)
RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config(name, coalesce(value, reset_val), true)
	FROM pg_settings s, (VALUES ('qidrisk.max_state_memory', budget),
						('max_parallel_workers', max_workers)) v(wanted, value)
	WHERE s.name = v.wanted;
	RETURN is(pg_temp.received_figures(), (SELECT figures FROM received_reference),
			  label || ': = GROUP BY');
END
$$;
SELECT pg_temp.received_check(budget, workers, label)
FROM (VALUES (1, NULL, NULL, 'received states, default budget'),
			 (2, '4MB', NULL, 'received states, 4MB'),
			 (3, '2MB', NULL, 'received states, 2MB'),
			 (4, '600kB', NULL, 'received states, 600kB'),
			 (5, '8MB', NULL, 'lent and received states, 8MB'),
			 (6, '8MB', '0', 'the leader alone, 8MB'),
			 (7, '16MB', '0', 'the leader alone, its state lent, 16MB'),
			 (8, NULL, '0', 'the leader alone, its state lent')) c(n, budget, workers, label)
ORDER BY n;
RESET qidrisk.max_state_memory;
RESET max_parallel_workers;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- every temporary file was removed at the end of its query
SELECT is((SELECT count(*) FROM pg_ls_tmpdir()), 0::bigint, 'no temporary files left');

SELECT * FROM finish();
ROLLBACK;
