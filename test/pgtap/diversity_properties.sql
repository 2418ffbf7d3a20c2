-- Property tests of l_diversity, entropy_l_diversity and t_closeness: equal
-- to a plain-SQL GROUP BY reference on random tables (3 seeds, 0 to 150,000
-- rows, NULLs and ties in the QID and the sensitive column, a case-insensitive
-- collation, numerics equal under their type's equality), serially, from 500
-- rows as partial aggregates in launched parallel workers (each such query run
-- by EXPLAIN ANALYZE, which shows that it did; tables of 0 and 1 rows get no
-- partial aggregate, so they run serially only), and within budgets that
-- spill the partitioned state; equal to qid_lattice's verdict at level 0;
-- NULL conventions, a window call, bad input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- seeds x 4 (QID, sensitive) pairs, serially at 4 sizes and in workers at 2;
-- 2 budget checks and the spills and partitioning they show; 3 x 5 lattice
-- checks; 6 conventions; 7 errors
SELECT plan(3 * 4 * (4 + 2) + 2 * 2 + 1 + 3 * 5 + 6 + 7);

CREATE COLLATION pg_temp.case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- A random table of tied values, about 8% NULL in each column
CREATE FUNCTION pg_temp.make_random_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (
		c_int integer,
		c_text_ci text COLLATE pg_temp.case_insensitive,
		c_date date,
		s_text text,
		s_ci text COLLATE pg_temp.case_insensitive,
		s_num numeric
	);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.08 THEN NULL ELSE floor(random() * greatest(4, nrows / 40))::int END,
		CASE WHEN random() < 0.08 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B', 'ab'])[1 + floor(random() * 5)::int] END,
		CASE WHEN random() < 0.08 THEN NULL ELSE date '2020-01-01' + floor(random() * 4)::int END,
		CASE WHEN random() < 0.08 THEN NULL ELSE (ARRAY['<=50K', '>50K', 'other'])[1 + floor(random() * random() * 3)::int] END,
		CASE WHEN random() < 0.08 THEN NULL ELSE (ARRAY['x', 'X', 'y', 'Y', 'z'])[1 + floor(random() * 5)::int] END,
		CASE WHEN random() < 0.08 THEN NULL ELSE (ARRAY[1, 1.0, 1.00, 2.5, 2.50, 7])[1 + floor(random() * 6)::int] END
	FROM generate_series(1, nrows);
	ANALYZE r;
END
$$;

\ir parallel_plans.psql

-- Ours and the GROUP BY reference (serially) for one QID and sensitive
-- column; ours run (by EXPLAIN ANALYZE) as the session's settings plan it
CREATE FUNCTION pg_temp.figures(qid text, s text, OUT l bigint, OUT e float8, OUT t float8,
								OUT rl bigint, OUT re float8, OUT rt float8,
								OUT run pg_temp.explained_run)
LANGUAGE plpgsql AS $$
BEGIN
	run := pg_temp.explained(format('SELECT l_diversity(%2$s, %1$s) AS l, entropy_l_diversity(%2$s, %1$s) AS e, '
									't_closeness(%2$s, %1$s) AS t FROM r', qid, s));
	l := (run.answer ->> 'l')::bigint;
	e := (run.answer ->> 'e')::float8;
	t := (run.answer ->> 't')::float8;
	PERFORM set_config('max_parallel_workers_per_gather', '0', true);
	-- pairs (class, value) with their rows; the table's share of each value
	EXECUTE format($q$
		WITH pc AS (SELECT %1$s, %2$s AS v, count(*)::float8 AS c FROM r GROUP BY %1$s, %2$s),
		q AS (SELECT %2$s AS v, count(*)::float8 / sum(count(*)) OVER () AS q FROM r GROUP BY %2$s),
		cls AS (SELECT %1$s, count(*) AS d, sum(c) AS n, sum(c * ln(c)) AS clc FROM pc GROUP BY %1$s),
		pcn AS (SELECT pc.*, sum(c) OVER (PARTITION BY %1$s) AS n, q.q FROM pc JOIN q ON pc.v IS NOT DISTINCT FROM q.v),
		dist AS (SELECT (sum(abs(c / n - q) - q) + 1) / 2 AS t FROM pcn GROUP BY %1$s)
		SELECT (SELECT min(d) FROM cls), (SELECT exp(min(ln(n) - clc / n)) FROM cls), (SELECT max(t) FROM dist)
	$q$, qid, s) INTO rl, re, rt;
END
$$;

-- One check: distinct l exactly, entropy l and t within 1e-9; serially, or
-- (in_workers) by partial aggregates in launched workers.  The figures and
-- the run go to pair_run, for the budget checks.
CREATE FUNCTION pg_temp.check_pair(qid text, s text, label text, in_workers boolean DEFAULT false)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	good boolean;
	detail text;
BEGIN
	IF in_workers THEN
		PERFORM pg_temp.force_parallel_plans();
	END IF;
	DROP TABLE IF EXISTS pg_temp.pair_run;
	CREATE TEMP TABLE pair_run AS SELECT * FROM pg_temp.figures(qid, s);
	PERFORM pg_temp.serial_plans();
	SELECT * INTO f FROM pair_run;
	good := f.l IS NOT DISTINCT FROM f.rl
		AND (f.e IS NULL) = (f.re IS NULL) AND coalesce(abs(f.e - f.re) < 1e-9, true)
		AND (f.t IS NULL) = (f.rt IS NULL) AND coalesce(abs(f.t - f.rt) < 1e-9, true);
	label := format('%s: l, entropy l, t of %s over (%s) = GROUP BY', label, s, qid);
	detail := format('ours (%s, %s, %s), reference (%s, %s, %s)', f.l, f.e, f.t, f.rl, f.re, f.rt);
	IF in_workers THEN
		RETURN QUERY SELECT pg_temp.ok_in_workers(f.run, good, label, detail);
		RETURN;
	END IF;
	RETURN NEXT ok(good, label);
	IF NOT good THEN
		RETURN NEXT diag(detail);
	END IF;
END
$$;

CREATE FUNCTION pg_temp.check_all(label text, in_workers boolean) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY SELECT pg_temp.check_pair('c_int', 's_text', label, in_workers);
	RETURN QUERY SELECT pg_temp.check_pair('c_text_ci, c_date', 's_ci', label, in_workers);
	RETURN QUERY SELECT pg_temp.check_pair('c_int, c_text_ci', 's_num', label, in_workers);
	RETURN QUERY SELECT pg_temp.check_pair('c_date', 's_text', label, in_workers);
END
$$;

CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	seed float8;
	nrows integer;
BEGIN
	FOREACH seed IN ARRAY ARRAY[0.13, 0.29, 0.47] LOOP
		FOREACH nrows IN ARRAY CASE WHEN seed = 0.13 THEN ARRAY[0, 1, 500, 150000]
			ELSE ARRAY[0, 1, 500, 8000] END LOOP
			PERFORM pg_temp.make_random_table(seed, nrows);
			PERFORM pg_temp.serial_plans();
			RETURN QUERY SELECT pg_temp.check_all(format('seed %s, %s rows, serial', seed, nrows), false);
			IF nrows >= 500 THEN
				RETURN QUERY SELECT pg_temp.check_all(format('seed %s, %s rows, parallel', seed, nrows), true);
			END IF;
		END LOOP;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_all();

-- Budgets that the partitioned state outgrows, so that it spills: the
-- classes then come from sorted partitions and merged runs
SET LOCAL max_parallel_workers_per_gather = 0;
SELECT pg_temp.make_random_table(0.13, 150000);
CREATE TABLE wide AS SELECT i % 40000 AS q, (i * 7) % 3 AS s1, (i / 40000) % 5 AS s2 FROM generate_series(1, 200000) i;
SET LOCAL qidrisk.max_state_memory = '2MB';
SELECT partitioned AS partitioned_before FROM qidrisk_internal.state_events() \gset
SELECT pg_temp.check_pair('c_int, c_text_ci, c_date', 's_num', '2MB budget');
SELECT cmp_ok((SELECT partitioned FROM qidrisk_internal.state_events()), '>', :partitioned_before::bigint,
			  '2MB budget: the state was partitioned');
SELECT cmp_ok((run).spilled_blocks, '>', 0::bigint, '2MB budget: the aggregate wrote temporary blocks')
FROM pair_run;
SET LOCAL qidrisk.spill = on;
SET LOCAL qidrisk.max_state_memory = '1MB';
CREATE TEMP TABLE wide_run AS
SELECT * FROM pg_temp.explained('SELECT ROW(l_diversity(s1, q), l_diversity(s2, q), round(t_closeness(s1 + 3 * s2, q)::numeric, 9))::text AS ours FROM wide');
SELECT is((SELECT answer ->> 'ours' FROM wide_run),
		  (SELECT ROW(min(d1), min(d2), round(max(t)::numeric, 9))::text FROM (
			  SELECT count(DISTINCT s1) d1, count(DISTINCT s2) d2, NULL::float8 t FROM wide GROUP BY q
			  UNION ALL
			  SELECT NULL, NULL, (sum(abs(c / n - qq) - qq) + 1) / 2 FROM (
				  SELECT q, v, c, sum(c) OVER (PARTITION BY q) n, qq FROM (
					  SELECT q, s1 + 3 * s2 AS v, count(*)::float8 c FROM wide GROUP BY 1, 2) p
				  JOIN (SELECT s1 + 3 * s2 AS v, count(*)::float8 / 200000 qq FROM wide GROUP BY 1) g USING (v)) x
			  GROUP BY q) y)::text,
		  '1MB budget, spilling: 40,000 classes = GROUP BY');
SELECT cmp_ok(spilled_blocks, '>', 0::bigint, '1MB budget: the aggregate wrote temporary blocks') FROM wide_run;
RESET qidrisk.max_state_memory;
RESET qidrisk.spill;

-- qid_lattice at level 0 (no hierarchy) agrees: anonymous at l = l_diversity,
-- not at l + 1; at t = t_closeness, not just below; at floor(entropy l), not
-- above it
CREATE FUNCTION pg_temp.check_lattice(seed float8, nrows integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	l bigint;
	e float8;
	t float8;
	label text := format('seed %s, %s rows', seed, nrows);
BEGIN
	PERFORM pg_temp.make_random_table(seed, nrows);
	SELECT l_diversity(s_text, c_text_ci, c_date), entropy_l_diversity(s_text, c_text_ci, c_date),
		   t_closeness(s_text, c_text_ci, c_date) INTO l, e, t FROM r;
	RETURN NEXT ok((SELECT anonymous FROM qid_lattice('r', '{c_text_ci,c_date}', '{}', 1, 0, 's_text', l::int)),
				   label || ': qid_lattice: l-diverse at l = l_diversity');
	RETURN NEXT ok((SELECT NOT anonymous FROM qid_lattice('r', '{c_text_ci,c_date}', '{}', 1, 0, 's_text', l::int + 1)),
				   label || ': qid_lattice: not at l_diversity + 1');
	RETURN NEXT ok((SELECT anonymous FROM qid_lattice('r', '{c_text_ci,c_date}', '{}', 1, 0, 's_text',
													  floor(e)::int, 'entropy')),
				   label || ': qid_lattice: entropy l-diverse at floor(entropy_l_diversity)');
	RETURN NEXT ok((SELECT anonymous FROM qid_lattice('r', '{c_text_ci,c_date}', '{}', 1, 0, 's_text', t => t + 1e-12)),
				   label || ': qid_lattice: t-close at t = t_closeness');
	RETURN NEXT ok((SELECT NOT anonymous FROM qid_lattice('r', '{c_text_ci,c_date}', '{}', 1, 0, 's_text', t => t - 1e-9)),
				   label || ': qid_lattice: not just below it');
END
$$;
SELECT pg_temp.check_lattice(0.13, 3000);
SELECT pg_temp.check_lattice(0.29, 20000);
SELECT pg_temp.check_lattice(0.47, 400);

-- Conventions: NULL is one sensitive value and one QID value; no rows gives
-- NULL; per group; as a window function
CREATE TABLE n (q text, s text, g integer);
INSERT INTO n VALUES ('a', 'x', 1), ('a', NULL, 1), (NULL, 'x', 1), (NULL, 'y', 1), (NULL, 'y', 1),
	('b', 'x', 2), ('b', 'x', 2);
SELECT is((SELECT l_diversity(s, q) FROM n WHERE g = 1), 2::bigint, 'NULL is a sensitive value and a QID value');
SELECT is((SELECT l_diversity(s, q) FROM n WHERE false), NULL::bigint, 'no rows: NULL');
SELECT is((SELECT array_agg(l ORDER BY g) FROM (SELECT g, l_diversity(s, q) AS l FROM n GROUP BY g) x),
		  ARRAY[2, 1]::bigint[], 'per group');
SELECT is((SELECT t_closeness(s, q) FROM n WHERE g = 2), 0::float8, 'one class: t = 0');
SELECT is((SELECT round(entropy_l_diversity(s, q)::numeric, 12) FROM n WHERE g = 1),
		  round(exp(-(1.0 / 3 * ln(1.0 / 3) + 2.0 / 3 * ln(2.0 / 3)))::numeric, 12),
		  'entropy l: exp of the least class entropy');
SELECT is((SELECT DISTINCT l_diversity(s, q) OVER () FROM n), 1::bigint, 'as a window function');

-- Bad input
SELECT throws_ok($$SELECT l_diversity(s, 'q'::text) FROM n$$, '42P10', NULL, 'a constant QID is refused');
SELECT throws_ok($$SELECT t_closeness(s, 'q'::text, 1) FROM n$$, '42P10', NULL, 'constants only: refused');
SELECT throws_ok($$SELECT l_diversity(s, VARIADIC ARRAY[q]) FROM n$$, '0A000', NULL, 'a VARIADIC array is refused');
SELECT throws_ok($$SELECT l_diversity(s) FROM n$$, '42883', NULL, 'no QID column');
SELECT throws_ok($$SELECT l_diversity(s, point(g, g)) FROM n$$, '42883', NULL, 'a QID type without hashing');
SELECT throws_ok($$SELECT l_diversity(point(g, g), q) FROM n$$, '42883', NULL, 'a sensitive type without hashing');
SELECT throws_ok($$SELECT l_diversity('x', q) FROM n$$, '42804', NULL, 'an untyped literal as the sensitive value');

SELECT * FROM finish();
ROLLBACK;
