-- Property tests of the parallel hand-over: ungrouped frequency aggregates
-- whose workers' partial states are large enough to reach the leader through
-- temporary files (each worker holds over 65,536 classes) must equal the
-- serial answer and the plain-SQL GROUP BY reference, on random tables
-- (3 seeds, about 10% NULLs, ties, several types, 1 to 4 columns), in forced
-- parallel plans with and without the leader's own (lent) state, at the
-- default budget (the files' classes merged straight from the files), at 3MB
-- (decoded from the files into arrays, or spilled) and at 512kB (spilled
-- states through files as well).  Then class counts that a worker's state
-- partitions at while the leader, from the count alone, would keep one
-- table (39,000 to 59,000 classes at 4MB, 59,000 to 65,536 at 8MB).  The
-- files went through the leader's file set and none is left.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- 3 seeds x 2 leader modes x 3 budgets x 4 subsets x 2 checks, a plan check
-- per seed, 6 class counts x 2 leader modes x 2 subsets x 2 checks, and the
-- file set checks
SELECT plan(3 * 2 * 3 * 4 * 2 + 3 + 6 * 2 * 2 * 2 + 2);

\ir parallel_plans.psql

-- A random table: a many-valued integer (so that each worker's state passes
-- 65,536 classes), and NULLs and ties in the other columns
CREATE FUNCTION pg_temp.make_random_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (
		c_int integer,
		c_text text COLLATE "C",
		c_date date,
		c_num numeric,
		c_float float8
	);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * nrows * 3)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'ab', 'AB'])[1 + floor(random() * 5)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 400)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 2.5, 2.50, 7])[1 + floor(random() * 5)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['-0', '0', 'NaN', '1.5', 'Infinity'])[1 + floor(random() * 5)::int]::float8 END
	FROM generate_series(1, nrows) i;
	ANALYZE r;
END
$$;

-- Every figure of one column subset as text: the VARIADIC aggregates,
-- class_profile and the _key forms, in one query (one shared state)
CREATE FUNCTION pg_temp.ours(collist text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format($q$
		SELECT ROW(singleton_count(%1$s), class_count(%1$s), k_anonymity(%1$s),
			rows_below_k(3, %1$s), class_profile(%1$s),
			singleton_count_key(qid_key(%1$s)), class_count_key(qid_key(%1$s)),
			k_anonymity_key(qid_key(%1$s)), rows_below_k_key(3, qid_key(%1$s)),
			class_profile_key(qid_key(%1$s)))::text
		FROM r
	$q$, collist) INTO result;
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
		WITH c AS (SELECT count(*) AS n FROM r GROUP BY %1$s),
		totals AS (SELECT sum(n)::bigint AS rows, count(*) AS classes,
			count(*) FILTER (WHERE n = 1) AS singletons, min(n) AS smallest, max(n) AS largest,
			coalesce(sum(n) FILTER (WHERE n < 3), 0) AS below FROM c),
		histogram AS (SELECT array_agg(n ORDER BY n) AS sizes, array_agg(k ORDER BY n) AS counts
			FROM (SELECT n, count(*) AS k FROM c GROUP BY n) h),
		profile AS (SELECT t.singletons, t.classes, t.smallest, t.below,
			ROW(t.rows, t.classes, t.singletons, t.singletons::float8 / t.rows,
				t.smallest, t.largest, h.sizes, h.counts)::qid_profile AS p
			FROM totals t, histogram h)
		SELECT ROW(singletons, classes, smallest, below, p,
			singletons, classes, smallest, below, p)::text FROM profile
	$q$, collist) INTO result;
	RETURN result;
END
$$;

-- Entries of this backend's hand-over file set (0xF1000000 = 4043309056) in
-- the default tablespace: the directory (0 or 1) and the files in it
CREATE FUNCTION pg_temp.handover_files() RETURNS text
LANGUAGE sql AS $$
	SELECT (SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false) f
			WHERE f = format('pgsql_tmp%s.4043309056.fileset', pg_backend_pid()))
		|| '/' || (SELECT count(*) FROM pg_ls_dir(
			format('base/pgsql_tmp/pgsql_tmp%s.4043309056.fileset', pg_backend_pid()), true, false))
$$;

-- One case: subset's figures under forced parallel plans with the given
-- budget setting and leader participation, against serial plans and GROUP BY
CREATE FUNCTION pg_temp.compare_case(label text, leader text, budget text, setting text,
									 subset text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	parallel text;
	serial text;
BEGIN
	PERFORM set_config('qidrisk.max_state_memory', setting, true);
	PERFORM pg_temp.force_parallel_plans();
	PERFORM set_config('parallel_leader_participation', leader, true);
	parallel := pg_temp.ours(subset);
	PERFORM pg_temp.serial_plans();
	RESET qidrisk.max_state_memory;
	serial := pg_temp.ours(subset);
	RETURN NEXT is(parallel, serial,
				   format('%s, leader %s, budget %s, {%s}: parallel = serial', label, leader, budget, subset));
	RETURN NEXT is(parallel, pg_temp.reference(subset),
				   format('%s, leader %s, budget %s, {%s}: parallel = GROUP BY', label, leader, budget, subset));
END
$$;

CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	seed float8;
	leader text;
	budget text;
	subset text;
	subsets text[] := ARRAY['c_int', 'c_int,c_text', 'c_date,c_int,c_num',
		'c_int,c_float,c_num,c_text'];
BEGIN
	FOREACH seed IN ARRAY ARRAY[0.19, 0.47, 0.83] LOOP
		PERFORM pg_temp.make_random_table(seed, 300000);
		PERFORM pg_temp.force_parallel_plans();
		RETURN NEXT ok(pg_temp.runs_partial_in_workers('SELECT singleton_count(c_int, c_text) FROM r'),
					   format('seed %s: singleton_count runs as partial aggregates in workers', seed));
		FOREACH leader IN ARRAY ARRAY['off', 'on'] LOOP
			FOREACH budget IN ARRAY ARRAY['default', '3MB', '512kB'] LOOP
				FOREACH subset IN ARRAY subsets LOOP
					RETURN QUERY SELECT pg_temp.compare_case(format('seed %s', seed), leader, budget,
						CASE WHEN budget = 'default' THEN '-1' ELSE budget END, subset);
				END LOOP;
			END LOOP;
		END LOOP;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_all();

-- Each worker sees nearly every one of m classes (each recurs nrows / m
-- times, spread over the table), so its state's size is known in advance;
-- of m distinct rows, each worker sees about half
CREATE FUNCTION pg_temp.run_borders() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	budget text;
	m integer;
	nrows integer;
	leader text;
	subset text;
BEGIN
	FOR budget, m, nrows IN VALUES ('4MB', 40000, 400000), ('4MB', 50000, 400000),
		('4MB', 58000, 400000), ('4MB', 100000, 100000), ('8MB', 61000, 400000),
		('8MB', 64000, 400000) LOOP
		DROP TABLE IF EXISTS r;
		CREATE TABLE r AS
		SELECT i % m AS c_int, (i % m % 5)::text AS c_text FROM generate_series(1, nrows) i;
		ANALYZE r;
		FOREACH leader IN ARRAY ARRAY['off', 'on'] LOOP
			FOREACH subset IN ARRAY ARRAY['c_int', 'c_int,c_text'] LOOP
				RETURN QUERY SELECT pg_temp.compare_case(format('%s classes of %s rows', m, nrows),
														 leader, budget, budget, subset);
			END LOOP;
		END LOOP;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_borders();

-- the workers' files went through this backend's file set, which holds no
-- file now (its directory goes at the end of the transaction)
SELECT is(pg_temp.handover_files(), '1/0', 'the workers'' files were read and deleted');
RESET qidrisk.max_state_memory;
SELECT is((SELECT count(*) FROM pg_ls_tmpdir()), 0::bigint, 'no temporary files left');

SELECT * FROM finish();
ROLLBACK;
