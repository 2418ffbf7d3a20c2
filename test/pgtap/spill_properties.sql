-- Property tests of spilling: with the smallest budget that
-- still spills (512 kB) every frequency figure, class_profile histogram and
-- _key form equals both the in-memory answer (default budget) and the plain-SQL
-- GROUP BY reference, on random tables (3 seeds, NULLs, heavy ties, 1 to 6
-- columns), serially, as partial aggregates in launched parallel workers and
-- partitionwise; each run by EXPLAIN (ANALYZE, BUFFERS), which shows that the
-- 512kB run spilled (its aggregates wrote temporary blocks), that the
-- in-memory one did not, and the plan that ran.  Window aggregates keep the
-- error past the budget; with qidrisk.spill off the error stays too.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- 3 seeds x 3 modes x 6 subsets x 3 checks (2 answers, the path), the window
-- and spill-off errors, 9 cases of received and lent states x 2 checks (the
-- answer, the path), and the temporary directory
SELECT plan(3 * 3 * 6 * 3 + 4 + 9 * 2 + 1);

\ir parallel_plans.psql

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

-- The query of every figure of one column subset, per group g, as text: the
-- VARIADIC aggregates, class_profile and the _key forms
CREATE FUNCTION pg_temp.ours(tab text, collist text) RETURNS text
LANGUAGE sql AS $$
	SELECT format($q$
		SELECT string_agg(x, ';' ORDER BY g) AS figures FROM (
			SELECT g, ROW(singleton_count(%2$s), class_count(%2$s), k_anonymity(%2$s),
				rows_below_k(3, %2$s), class_profile(%2$s),
				singleton_count_key(qid_key(%2$s)), class_count_key(qid_key(%2$s)),
				k_anonymity_key(qid_key(%2$s)), rows_below_k_key(3, qid_key(%2$s)),
				class_profile_key(qid_key(%2$s)))::text AS x
			FROM %1$s GROUP BY g) s
	$q$, tab, collist)
$$;

-- The path test of one subset: the 512kB run spilled and the in-memory one
-- did not, both as partial aggregates in launched workers (parallel), or
-- with an aggregate per partition beneath an Append and no Gather
-- (partitionwise), or with no Gather (serial)
CREATE FUNCTION pg_temp.check_path(mode text, in_memory pg_temp.explained_run,
								   spilled pg_temp.explained_run, label text)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	good boolean := in_memory.spilled_blocks = 0 AND spilled.spilled_blocks > 0;
	detail text := format('temporary blocks written by the aggregates: %s in memory, %s at 512kB',
						  in_memory.spilled_blocks, spilled.spilled_blocks);
	together pg_temp.explained_run := spilled;
BEGIN
	IF mode = 'parallel' THEN
		together.partial_beneath_gather := in_memory.partial_beneath_gather AND spilled.partial_beneath_gather;
		together.launched := least(in_memory.launched, spilled.launched);
		RETURN QUERY SELECT pg_temp.ok_in_workers(together, good, label || ', both in launched workers', detail);
		RETURN;
	END IF;
	good := good AND in_memory.planned = 0 AND spilled.planned = 0;
	detail := detail || format('; workers planned: %s and %s', in_memory.planned, spilled.planned);
	IF mode = 'partitionwise' THEN
		good := good AND in_memory.partition_aggregates = 3 AND spilled.partition_aggregates = 3;
		detail := detail || format('; aggregates beneath an Append: %s and %s',
								   in_memory.partition_aggregates, spilled.partition_aggregates);
		label := label || ', both aggregated per partition';
	END IF;
	RETURN NEXT ok(good, label);
	IF NOT good THEN
		RETURN NEXT diag(detail);
	END IF;
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
	in_memory_run pg_temp.explained_run;
	spilled_run pg_temp.explained_run;
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
				in_memory_run := pg_temp.explained(pg_temp.ours(tab, subset));
				SET LOCAL qidrisk.max_state_memory = '512kB';
				spilled_run := pg_temp.explained(pg_temp.ours(tab, subset));
				RESET qidrisk.max_state_memory;
				in_memory := in_memory_run.answer ->> 'figures';
				spilled := spilled_run.answer ->> 'figures';
				-- the reference has both groups (g), so ours must too
				reference := pg_temp.reference(subset);
				RETURN NEXT is(spilled, in_memory,
							   format('seed %s, %s, {%s}: spilled = in memory', seed, mode, subset));
				RETURN NEXT is(spilled, reference,
							   format('seed %s, %s, {%s}: spilled = GROUP BY', seed, mode, subset));
				RETURN QUERY SELECT pg_temp.check_path(mode, in_memory_run, spilled_run,
					format('seed %s, %s, {%s}: the 512kB run spilled, the in-memory one did not', seed, mode, subset));
			END LOOP;
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
-- table holds, the leader not participating (so each worker reads about half
-- the rows): through temporary files (their encoding can take 1 MB or more),
-- merged straight from the files (default budget), also when the workers
-- spilled and streamed their runs into the files (2MB); through the tuple
-- queue (temp_file_limit set, so no file), kept in their encoding and merged
-- straight from it (default budget), decoded into arrays as far as the budget
-- allows and into runs past it (2MB), or decoded mostly straight into runs
-- (600kB; on 17 a partition or so still fits the budget as arrays).
-- The leader's own partial state is lent to its finalize instead of being
-- serialized: beside the workers' states at 16MB (which the leader's state
-- fits whatever its share of the rows), and alone, when no worker may start
-- (max_parallel_workers 0), at 16MB and the default budget, but not at 8MB,
-- where the leader alone spills (so its state is serialized).  Each case: the
-- GROUP BY answer, and the path shown by EXPLAIN (ANALYZE, BUFFERS) and by
-- qidrisk_internal.state_events() around the query.
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
-- One case under settings: the answer = GROUP BY; path, a condition on what
-- the run showed, holds (workers: the path needs both planned workers, else
-- it is skipped)
CREATE FUNCTION pg_temp.received_case(label text, settings jsonb, workers boolean, path text, claim text)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	before record;
	after record;
	run pg_temp.explained_run;
	shown record;
	good boolean;
BEGIN
	PERFORM set_config(key, value, true) FROM jsonb_each_text(settings);
	SELECT * INTO before FROM qidrisk_internal.state_events();
	run := pg_temp.explained('SELECT ROW(singleton_count(a, b), class_count(a, b), k_anonymity(a, b))::text AS figures FROM received');
	SELECT * INTO after FROM qidrisk_internal.state_events();
	PERFORM set_config(key, (SELECT reset_val FROM pg_settings WHERE name = key), true)
	FROM jsonb_each_text(settings);
	RETURN NEXT is(run.answer ->> 'figures', (SELECT figures FROM received_reference), label || ': = GROUP BY');

	SELECT run.planned, run.launched, run.spilled_blocks AS spilled, after.lent - before.lent AS lent,
		   after.files_received - before.files_received AS files,
		   after.partitions_decoded - before.partitions_decoded AS decoded,
		   after.partitions_to_runs - before.partitions_to_runs AS to_runs
	INTO shown;
	EXECUTE format('SELECT %s FROM (SELECT $1 AS planned, $2 AS launched, $3 AS spilled, $4 AS lent, '
				   '$5 AS files, $6 AS decoded, $7 AS to_runs) s', path)
	INTO good USING shown.planned, shown.launched, shown.spilled, shown.lent, shown.files,
		shown.decoded, shown.to_runs;
	label := label || ': ' || claim;
	IF workers AND shown.planned > 0 AND shown.launched < shown.planned THEN
		RETURN NEXT skip(format('%s: %s of %s planned workers started', label, shown.launched, shown.planned), 1);
		RETURN;
	END IF;
	RETURN NEXT ok(coalesce(good, false), label);
	IF NOT coalesce(good, false) THEN
		RETURN NEXT diag(format('shown: %s', row_to_json(shown)));
	END IF;
END
$$;
SELECT pg_temp.received_case(label, settings::jsonb, workers, path, claim)
FROM (VALUES
	(1, 'received through files, default budget', '{"parallel_leader_participation": "off"}', true,
	 'files = launched AND decoded = 0 AND to_runs = 0 AND spilled = 0', 'merged straight from the files'),
	(2, 'received through files, 2MB', '{"parallel_leader_participation": "off", "qidrisk.max_state_memory": "2MB"}', true,
	 'files = launched AND decoded = 0 AND to_runs = 0 AND spilled > 0',
	 'the workers spilled, their runs merged straight from the files'),
	(3, 'received through the tuple queue, default budget',
	 '{"parallel_leader_participation": "off", "temp_file_limit": "1GB"}', true,
	 'files = 0 AND decoded = 0 AND to_runs = 0', 'merged straight from their encoding'),
	(4, 'received through the tuple queue, 2MB',
	 '{"parallel_leader_participation": "off", "temp_file_limit": "1GB", "qidrisk.max_state_memory": "2MB"}', true,
	 'files = 0 AND decoded > 0 AND to_runs > 0', 'decoded into arrays and into runs'),
	(5, 'received through the tuple queue, 600kB',
	 '{"parallel_leader_participation": "off", "temp_file_limit": "1GB", "qidrisk.max_state_memory": "600kB"}', true,
	 'files = 0 AND to_runs > decoded', 'decoded mostly straight into runs'),
	(6, 'lent and received states, 16MB', '{"qidrisk.max_state_memory": "16MB"}', true,
	 'lent > 0 AND launched > 0', 'the leader''s state lent beside the workers'''),
	(7, 'the leader alone, 8MB', '{"qidrisk.max_state_memory": "8MB", "max_parallel_workers": "0"}', false,
	 'planned > 0 AND launched = 0 AND lent = 0 AND spilled > 0', 'no worker, the leader''s state spilled, not lent'),
	(8, 'the leader alone, 16MB', '{"qidrisk.max_state_memory": "16MB", "max_parallel_workers": "0"}', false,
	 'planned > 0 AND launched = 0 AND lent > 0 AND spilled = 0', 'no worker, the leader''s state lent'),
	(9, 'the leader alone, default budget', '{"max_parallel_workers": "0"}', false,
	 'planned > 0 AND launched = 0 AND lent > 0 AND spilled = 0', 'no worker, the leader''s state lent')
) c(n, label, settings, workers, path, claim)
ORDER BY n;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- every temporary file was removed at the end of its query
SELECT is((SELECT count(*) FROM pg_ls_tmpdir()), 0::bigint, 'no temporary files left');

SELECT * FROM finish();
ROLLBACK;
