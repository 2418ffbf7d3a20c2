-- Property tests of t_closeness_ordered: equal to a plain-SQL reference of the
-- ordered distance (ranks by dense_rank, cumulative shares by window sums) on
-- random tables (3 seeds, 0 to 8,000 rows, ties, NULLs, -0, NaN and
-- infinities, integer, numeric, float8, date and timestamp values), serially
-- and under forced parallel plans, and within a budget that spills the state;
-- equal to qid_lattice's verdict with t_distance => 'ordered' at level 0; the
-- worked example of Li, Li and Venkatasubramanian (2007); conventions; bad
-- input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- seeds x sizes x 5 (QID, sensitive) pairs, serial and parallel; 1 plan check
-- per seed; 1 spill check; 3 x 2 lattice checks; 8 conventions; 6 errors
SELECT plan(3 * 4 * 5 * 2 + 3 + 1 + 3 * 2 + 8 + 6);

-- A random table of tied values, about 8% NULL in each column
CREATE FUNCTION pg_temp.make_random_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (
		c_int integer,
		c_text text,
		c_date date,
		s_int integer,
		s_num numeric,
		s_wide bigint,
		s_float float8,
		s_ts timestamp
	);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.08 THEN NULL ELSE floor(random() * greatest(4, nrows / 40))::int END,
		CASE WHEN random() < 0.08 THEN NULL ELSE (ARRAY['a', 'b', 'ab'])[1 + floor(random() * 3)::int] END,
		CASE WHEN random() < 0.08 THEN NULL ELSE date '2020-01-01' + floor(random() * 4)::int END,
		CASE WHEN random() < 0.08 THEN NULL ELSE floor(random() * random() * 6)::int - 2 END,
		CASE WHEN random() < 0.08 THEN NULL ELSE (ARRAY[-3, 1, 1.0, 1.00, 2.5, 2.50, 7])[1 + floor(random() * 7)::int] END,
		CASE WHEN random() < 0.08 THEN NULL ELSE floor(random() * 300)::bigint * 1000000007 END,
		CASE WHEN random() < 0.08 THEN NULL
			ELSE (ARRAY['-Infinity', '-0', '0', '0.1', '1e300', 'Infinity', 'NaN'])[1 + floor(random() * 7)::int]::float8 END,
		CASE WHEN random() < 0.08 THEN NULL
			ELSE (ARRAY['-infinity', '2020-01-01', '2020-01-01 00:00:01', 'infinity'])[1 + floor(random() * 4)::int]::timestamp END
	FROM generate_series(1, nrows);
	ANALYZE r;
END
$$;

-- The reference: ranks 1 .. m of the sensitive values (NULL last, as in ORDER
-- BY), every class against every rank, cumulative shares by window sums
CREATE FUNCTION pg_temp.reference(qid text, s text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	result float8;
BEGIN
	EXECUTE format($q$
		WITH b AS (SELECT dense_rank() OVER (ORDER BY %1$s) AS k, dense_rank() OVER (ORDER BY %2$s) AS rk FROM r),
		tot AS (SELECT max(rk) AS m, count(*)::float8 AS total FROM b),
		cls AS (SELECT k, count(*)::float8 AS n FROM b GROUP BY k),
		cc AS (SELECT k, rk, count(*)::float8 AS c FROM b GROUP BY k, rk),
		tc AS (SELECT rk, count(*)::float8 AS c FROM b GROUP BY rk),
		grid AS (SELECT cls.k, i, cls.n, coalesce(cc.c, 0) AS pc, coalesce(tc.c, 0) AS qc
				 FROM cls CROSS JOIN generate_series(1, (SELECT m FROM tot)) AS i
				 LEFT JOIN cc ON cc.k = cls.k AND cc.rk = i LEFT JOIN tc ON tc.rk = i),
		cum AS (SELECT k, i, sum(pc) OVER w / n AS p, sum(qc) OVER w / (SELECT total FROM tot) AS q
				FROM grid WINDOW w AS (PARTITION BY k ORDER BY i))
		SELECT CASE WHEN (SELECT m FROM tot) = 1 THEN 0
			ELSE (SELECT max(d) FROM (SELECT sum(abs(p - q)) / ((SELECT m FROM tot) - 1) AS d
									  FROM cum WHERE i < (SELECT m FROM tot) GROUP BY k) x) END
	$q$, qid, s) INTO result;
	RETURN result;
END
$$;

-- One check: t within 1e-9 of the reference, both NULL for no rows
CREATE FUNCTION pg_temp.check_pair(qid text, s text, label text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	ours float8;
	ref float8 := pg_temp.reference(qid, s);
	good boolean;
BEGIN
	EXECUTE format('SELECT t_closeness_ordered(%2$s, %1$s) FROM r', qid, s) INTO ours;
	good := (ours IS NULL) = (ref IS NULL) AND coalesce(abs(ours - ref) < 1e-9, true);
	RETURN NEXT ok(good, format('%s: t_closeness_ordered(%s, %s) = reference', label, s, qid));
	IF NOT good THEN
		RETURN NEXT diag(format('ours %s, reference %s', ours, ref));
	END IF;
END
$$;

-- The five (QID, sensitive) pairs of a table
CREATE FUNCTION pg_temp.check_all(label text) RETURNS SETOF text
LANGUAGE sql AS $$
	SELECT c FROM (VALUES (1, 'c_int', 's_int'), (2, 'c_text, c_date', 's_num'), (3, 'c_date', 's_wide'),
					  (4, 'c_int, c_text', 's_float'), (5, 'c_text', 's_ts')) AS p(o, qid, s),
		LATERAL pg_temp.check_pair(p.qid, p.s, label) AS c
	ORDER BY o
$$;

\ir parallel_plans.psql

-- Each seed at 0, 1, 500 and 8,000 rows, serially then in workers
CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	c record;
BEGIN
	FOR c IN SELECT seed, nrows FROM unnest(ARRAY[0.13, 0.29, 0.47]) AS seed,
		unnest(ARRAY[0, 1, 500, 8000]) AS nrows ORDER BY seed, nrows LOOP
		PERFORM pg_temp.make_random_table(c.seed, c.nrows);
		PERFORM pg_temp.serial_plans();
		RETURN QUERY SELECT pg_temp.check_all(format('seed %s, %s rows, serial', c.seed, c.nrows));
		PERFORM pg_temp.force_parallel_plans();
		IF c.nrows >= 8000 THEN
			RETURN NEXT ok(pg_temp.runs_partial_in_workers('SELECT t_closeness_ordered(s_wide, c_int, c_text) FROM r'),
						   format('seed %s: t_closeness_ordered runs as partial aggregates in workers', c.seed));
		END IF;
		RETURN QUERY SELECT pg_temp.check_all(format('seed %s, %s rows, parallel', c.seed, c.nrows));
	END LOOP;
	PERFORM pg_temp.serial_plans();
END
$$;

SELECT * FROM pg_temp.run_all();

-- A budget that spills the state: the classes then come from merged runs
DROP TABLE r;
CREATE TABLE r AS SELECT i % 40000 AS c_int, (i * 7) % 3 + 3 * ((i / 40000) % 5) AS s_int FROM generate_series(1, 200000) i;
SET LOCAL qidrisk.spill = on;
SET LOCAL qidrisk.max_state_memory = '1MB';
SELECT pg_temp.check_pair('c_int', 's_int', '1MB budget, spilling, 40,000 classes');
RESET qidrisk.max_state_memory;
RESET qidrisk.spill;

-- qid_lattice with the ordered distance at level 0 (no hierarchy) agrees:
-- t-close at t = t_closeness_ordered, not just below
CREATE FUNCTION pg_temp.check_lattice(seed float8, nrows integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	t float8;
	label text := format('seed %s, %s rows', seed, nrows);
BEGIN
	PERFORM pg_temp.make_random_table(seed, nrows);
	SELECT t_closeness_ordered(s_num, c_text, c_date) INTO t FROM r;
	RETURN NEXT ok((SELECT anonymous FROM qid_lattice('r', '{c_text,c_date}', '{}', 1, 0, 's_num',
													  t => t + 1e-12, t_distance => 'ordered')),
				   label || ': qid_lattice: t-close (ordered) at t = t_closeness_ordered');
	RETURN NEXT ok((SELECT NOT anonymous FROM qid_lattice('r', '{c_text,c_date}', '{}', 1, 0, 's_num',
														  t => t - 1e-9, t_distance => 'ordered')),
				   label || ': qid_lattice: not just below it');
END
$$;
SELECT pg_temp.check_lattice(0.13, 3000);
SELECT pg_temp.check_lattice(0.29, 20000);
SELECT pg_temp.check_lattice(0.47, 400);

-- The worked example of the paper: salaries 3k .. 11k, one row each; the
-- classes {3k, 4k, 5k}, {6k, 8k, 11k}, {7k, 9k, 10k} are at 0.375, 1/6, 17/72
CREATE TABLE paper (zip text, salary integer);
INSERT INTO paper VALUES ('a', 3000), ('a', 4000), ('a', 5000), ('b', 6000), ('b', 8000), ('b', 11000),
	('c', 7000), ('c', 9000), ('c', 10000);
SELECT is((SELECT round(t_closeness_ordered(salary, zip)::numeric, 12) FROM paper), 0.375,
		  'the paper''s example: 0.375');
SELECT is((SELECT round(t_closeness_ordered(salary, zip IN ('a', 'c'))::numeric, 12) FROM paper),
		  round(1 / 6.0, 12), 'the paper''s example: {6k, 8k, 11k} at 1/6 (0.167)');

-- Conventions: NULL is one value, ranked after every other; no rows gives
-- NULL; one value, or one class, gives 0
CREATE TABLE n (q text, s numeric);
INSERT INTO n VALUES ('a', 1), ('a', NULL), ('b', 2), ('b', 2);
SELECT is((SELECT t_closeness_ordered(s, q) FROM n), 0.25::float8,
		  'NULL ranks last: classes {1, NULL} and {2, 2} against {1, 2, 2, NULL} are at 1/4');
SELECT is((SELECT t_closeness_ordered(s, q) FROM n WHERE false), NULL::float8, 'no rows: NULL');
SELECT is((SELECT t_closeness_ordered(2, q) FROM n), 0::float8, 'one sensitive value: 0');
SELECT is((SELECT t_closeness_ordered(s, 1, q IS NOT NULL) FROM n), 0::float8, 'one class: 0');
SELECT is((SELECT t_closeness_ordered(v, k) FROM (VALUES (1, 9223372036854775807), (2, -9223372036854775808),
		  (3, NULL::bigint)) x(k, v)), 0.5::float8, 'bigint extremes and NULL: three values');
SELECT is((SELECT DISTINCT t_closeness_ordered(s, q) OVER () FROM n), 0.25::float8, 'as a window function');

-- Bad input
SELECT throws_ok($$SELECT t_closeness_ordered(q, q) FROM n$$, '42804', NULL, 'a text sensitive value is refused');
SELECT throws_ok($$SELECT t_closeness_ordered(s > 1, q) FROM n$$, '42804', NULL, 'a boolean sensitive value is refused');
SELECT throws_ok($$SELECT t_closeness_ordered(s, 'q'::text) FROM n$$, '42P10', NULL, 'a constant QID is refused');
SELECT throws_ok($$SELECT t_closeness_ordered(s, VARIADIC ARRAY[q]) FROM n$$, '0A000', NULL, 'a VARIADIC array is refused');
SELECT throws_ok($$SELECT t_closeness_ordered(s) FROM n$$, '42883', NULL, 'no QID column');
SELECT throws_ok($$SELECT t_closeness_ordered('x', q) FROM n$$, '42804', NULL, 'an untyped literal as the sensitive value');

SELECT * FROM finish();
ROLLBACK;
