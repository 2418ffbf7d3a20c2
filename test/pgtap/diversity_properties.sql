-- Property tests of l_diversity, entropy_l_diversity and t_closeness: equal
-- to a plain-SQL GROUP BY reference on random tables (3 seeds, 0 to 150,000
-- rows, NULLs and ties in the QID and the sensitive column, a case-insensitive
-- collation, numerics equal under their type's equality), serially, under
-- forced parallel plans and within a budget that partitions and spills the
-- state; equal to qid_lattice's verdict at level 0; NULL conventions, a
-- window call, bad input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- seeds x sizes x 4 (QID, sensitive) pairs, serial and parallel; 2 plan
-- checks per seed; 2 budget checks; 3 x 5 lattice checks; 6 conventions; 7 errors
SELECT plan(3 * 4 * 4 * 2 + 3 * 2 + 2 + 3 * 5 + 6 + 7);

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

-- Ours and the GROUP BY reference for one QID and sensitive column
CREATE FUNCTION pg_temp.figures(qid text, s text, OUT l bigint, OUT e float8, OUT t float8,
								OUT rl bigint, OUT re float8, OUT rt float8)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT l_diversity(%2$s, %1$s), entropy_l_diversity(%2$s, %1$s), t_closeness(%2$s, %1$s) FROM r',
				   qid, s) INTO l, e, t;
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

-- One check: distinct l exactly, entropy l and t within 1e-9
CREATE FUNCTION pg_temp.check_pair(qid text, s text, label text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	f record;
	good boolean;
BEGIN
	SELECT * INTO f FROM pg_temp.figures(qid, s);
	good := f.l IS NOT DISTINCT FROM f.rl
		AND (f.e IS NULL) = (f.re IS NULL) AND coalesce(abs(f.e - f.re) < 1e-9, true)
		AND (f.t IS NULL) = (f.rt IS NULL) AND coalesce(abs(f.t - f.rt) < 1e-9, true);
	RETURN NEXT ok(good, format('%s: l, entropy l, t of %s over (%s) = GROUP BY', label, s, qid));
	IF NOT good THEN
		RETURN NEXT diag(format('ours (%s, %s, %s), reference (%s, %s, %s)', f.l, f.e, f.t, f.rl, f.re, f.rt));
	END IF;
END
$$;

CREATE FUNCTION pg_temp.check_all(label text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY SELECT pg_temp.check_pair('c_int', 's_text', label);
	RETURN QUERY SELECT pg_temp.check_pair('c_text_ci, c_date', 's_ci', label);
	RETURN QUERY SELECT pg_temp.check_pair('c_int, c_text_ci', 's_num', label);
	RETURN QUERY SELECT pg_temp.check_pair('c_date', 's_text', label);
END
$$;

\ir parallel_plans.psql

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
			SET LOCAL max_parallel_workers_per_gather = 0;
			RETURN QUERY SELECT pg_temp.check_all(format('seed %s, %s rows, serial', seed, nrows));
			PERFORM pg_temp.force_parallel_plans();
			IF nrows >= 8000 THEN
				RETURN NEXT ok(pg_temp.runs_partial_in_workers('SELECT l_diversity(s_text, c_int, c_text_ci) FROM r'),
							   format('seed %s: l_diversity runs as partial aggregates in workers', seed));
				RETURN NEXT ok(pg_temp.runs_partial_in_workers('SELECT t_closeness(s_ci, c_date) FROM r'),
							   format('seed %s: t_closeness runs as partial aggregates in workers', seed));
			END IF;
			RETURN QUERY SELECT pg_temp.check_all(format('seed %s, %s rows, parallel', seed, nrows));
			RESET parallel_setup_cost;
			RESET parallel_tuple_cost;
			RESET min_parallel_table_scan_size;
			RESET parallel_leader_participation;
		END LOOP;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_all();

-- A budget that partitions the state, then one that spills it: the classes
-- then come from sorted partitions and merged runs
SET LOCAL max_parallel_workers_per_gather = 0;
SELECT pg_temp.make_random_table(0.13, 150000);
CREATE TABLE wide AS SELECT i % 40000 AS q, (i * 7) % 3 AS s1, (i / 40000) % 5 AS s2 FROM generate_series(1, 200000) i;
SET LOCAL qidrisk.max_state_memory = '2MB';
SELECT pg_temp.check_pair('c_int, c_text_ci, c_date', 's_num', '2MB budget');
SET LOCAL qidrisk.spill = on;
SET LOCAL qidrisk.max_state_memory = '1MB';
SELECT is((SELECT ROW(l_diversity(s1, q), l_diversity(s2, q), round(t_closeness(s1 + 3 * s2, q)::numeric, 9))::text FROM wide),
		  (SELECT ROW(min(d1), min(d2), round(max(t)::numeric, 9))::text FROM (
			  SELECT count(DISTINCT s1) d1, count(DISTINCT s2) d2, NULL::float8 t FROM wide GROUP BY q
			  UNION ALL
			  SELECT NULL, NULL, (sum(abs(c / n - qq) - qq) + 1) / 2 FROM (
				  SELECT q, v, c, sum(c) OVER (PARTITION BY q) n, qq FROM (
					  SELECT q, s1 + 3 * s2 AS v, count(*)::float8 c FROM wide GROUP BY 1, 2) p
				  JOIN (SELECT s1 + 3 * s2 AS v, count(*)::float8 / 200000 qq FROM wide GROUP BY 1) g USING (v)) x
			  GROUP BY q) y)::text,
		  '1MB budget, spilling: 40,000 classes = GROUP BY');
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
