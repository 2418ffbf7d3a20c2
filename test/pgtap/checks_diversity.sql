-- qid_check's rules min_l and max_t: measured values equal a plain-SQL GROUP BY
-- reference on random tables (3 seeds, NULLs, ties), or t_closeness_ordered
-- for max_t with the ordered distance, pass and fail at and just past the
-- measured value, an empty table passes, qid_assert raises QR001, and
-- bad settings fail with their SQLSTATE.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(3 * 8 + 4 + 1 + 8 + 4);

CREATE FUNCTION pg_temp.make_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (a integer, b text, s text, v numeric);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.05 THEN NULL ELSE floor(random() * 6)::int END,
		CASE WHEN random() < 0.05 THEN NULL ELSE (ARRAY['x', 'y'])[1 + floor(random() * 2)::int] END,
		CASE WHEN random() < 0.05 THEN NULL ELSE (ARRAY['p', 'q', 'r', 's'])[1 + floor(random() * random() * 4)::int] END,
		CASE WHEN random() < 0.05 THEN NULL ELSE floor(random() * random() * 12) / 2 END
	FROM generate_series(1, nrows);
END
$$;

-- measured and passed of one rule
CREATE FUNCTION pg_temp.rule(policy jsonb) RETURNS TABLE (measured float8, passed boolean)
LANGUAGE sql AS $$
	SELECT c.measured, c.passed FROM qid_check('r'::text::regclass, ARRAY['a', 'b'], policy) c
$$;

CREATE FUNCTION pg_temp.check_seed(seed float8, nrows integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	label text := format('seed %s, %s rows', seed, nrows);
	l bigint;
	e float8;
	t float8;
	o float8;
BEGIN
	PERFORM pg_temp.make_table(seed, nrows);
	SELECT t_closeness_ordered(v, a, b) INTO o FROM r;
	WITH pc AS (SELECT a, b, s, count(*)::float8 c FROM r GROUP BY a, b, s),
		 q AS (SELECT s, count(*)::float8 / sum(count(*)) OVER () q FROM r GROUP BY s),
		 cls AS (SELECT a, b, count(*) d, sum(c) n, sum(c * ln(c)) clc FROM pc GROUP BY a, b),
		 pcn AS (SELECT pc.*, sum(c) OVER (PARTITION BY a, b) n, q.q FROM pc JOIN q ON pc.s IS NOT DISTINCT FROM q.s),
		 dist AS (SELECT (sum(abs(c / n - q) - q) + 1) / 2 t FROM pcn GROUP BY a, b)
	SELECT (SELECT min(d) FROM cls), (SELECT exp(min(ln(n) - clc / n)) FROM cls), (SELECT max(dist.t) FROM dist)
	INTO l, e, t;
	RETURN NEXT is((SELECT ROW(measured, passed)::text FROM pg_temp.rule(format('{"min_l": {"sensitive": "s", "l": %s}}', l)::jsonb)),
				   ROW(l::float8, true)::text, label || ': min_l measures distinct l (GROUP BY) and passes at it');
	RETURN NEXT is((SELECT passed FROM pg_temp.rule(format('{"min_l": {"sensitive": "s", "l": %s}}', l + 1)::jsonb)),
				   false, label || ': min_l fails at l + 1');
	RETURN NEXT ok((SELECT abs(measured - e) < 1e-9 AND passed
					FROM pg_temp.rule(format('{"min_l": {"sensitive": "s", "l": %s, "model": "entropy"}}', floor(e))::jsonb)),
				   label || ': min_l with the entropy model measures exp of the least class entropy');
	RETURN NEXT is((SELECT passed FROM pg_temp.rule(format('{"min_l": {"sensitive": "s", "l": %s, "model": "entropy"}}', floor(e) + 1)::jsonb)),
				   false, label || ': and fails above it');
	RETURN NEXT ok((SELECT abs(measured - t) < 1e-9 AND passed
					FROM pg_temp.rule(format('{"max_t": {"sensitive": "s", "max": %s}}', t + 1e-12)::jsonb)),
				   label || ': max_t measures the largest equal-distance EMD and passes at it');
	RETURN NEXT is((SELECT passed FROM pg_temp.rule(format('{"max_t": {"sensitive": "s", "max": %s}}', t - 1e-9)::jsonb)),
				   false, label || ': max_t fails just below it');
	RETURN NEXT ok((SELECT abs(measured - o) < 1e-9 AND passed
					FROM pg_temp.rule(format('{"max_t": {"sensitive": "v", "max": %s, "distance": "ordered"}}', o + 1e-12)::jsonb)),
				   label || ': max_t with the ordered distance measures t_closeness_ordered and passes at it');
	RETURN NEXT is((SELECT passed FROM pg_temp.rule(format('{"max_t": {"sensitive": "v", "max": %s, "distance": "ordered"}}', o - 1e-9)::jsonb)),
				   false, label || ': and fails just below it');
END
$$;
SELECT pg_temp.check_seed(0.17, 300);
SELECT pg_temp.check_seed(0.31, 3000);
SELECT pg_temp.check_seed(0.59, 40);

SELECT is((SELECT array_agg(rule ORDER BY o) FROM qid_check('r', ARRAY['a'],
			'{"max_t": {"sensitive": "s", "max": 1}, "min_l": {"sensitive": "s", "l": 1}, "min_k": 1}')
			WITH ORDINALITY c(rule, setting, measured, threshold, passed, o)),
		  ARRAY['min_k', 'min_l', 'max_t'], 'the rules come in the order of qid_check_rules()');
SELECT is((SELECT measured FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": "v", "max": 1, "distance": "equal"}}')),
		  (SELECT t_closeness(v, a) FROM r), 'max_t with "distance": "equal" measures t_closeness');
TRUNCATE r;
SELECT is((SELECT array_agg(ROW(measured, passed)::text) FROM qid_check('r', ARRAY['a', 'b'],
			'{"min_l": {"sensitive": "s", "l": 2}, "max_t": {"sensitive": "s", "max": 0}}')),
		  ARRAY['(,t)', '(,t)'], 'an empty table passes, measuring NULL');
INSERT INTO r VALUES (1, 'x', 'p'), (1, 'x', 'p'), (2, 'y', 'p'), (2, 'y', 'q');
SELECT throws_ok($$CALL qid_assert('r', ARRAY['a', 'b'], '{"min_l": {"sensitive": "s", "l": 2}}')$$,
				 'QR001', NULL, 'qid_assert raises QR001 when min_l fails');
SELECT lives_ok($$CALL qid_assert('r', ARRAY['a'], '{"max_t": {"sensitive": "s", "max": 0.5}}')$$,
				'qid_assert passes when max_t holds');

SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"min_l": 2}')$$, '22023', NULL, 'min_l not an object');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"min_l": {"sensitive": "s", "l": 2, "k": 1}}')$$,
				 '22023', NULL, 'an unknown field');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"min_l": {"l": 2}}')$$, '22023', NULL, 'no sensitive column');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"min_l": {"sensitive": "nope", "l": 2}}')$$,
				 '42703', NULL, 'an unknown sensitive column');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"min_l": {"sensitive": "s", "l": 0}}')$$, '22023', NULL, 'l below 1');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"min_l": {"sensitive": "s", "l": 2, "model": "recursive"}}')$$,
				 '22023', NULL, 'an unknown model');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": "s", "max": 1.5}}')$$, '22023', NULL, 'max above 1');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": 1, "max": 0.5}}')$$,
				 '22023', NULL, 'a sensitive column that is not a name');

SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": "v", "max": 0.5, "distance": "earth"}}')$$,
				 '22023', NULL, 'an unknown distance');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": "v", "max": 0.5, "distance": 1}}')$$,
				 '22023', NULL, 'a distance that is not a string');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": "v", "max": 0.5, "distance": "ordered", "k": 1}}')$$,
				 '22023', NULL, 'an unknown field beside distance');
SELECT throws_ok($$SELECT * FROM qid_check('r', ARRAY['a'], '{"max_t": {"sensitive": "s", "max": 0.5, "distance": "ordered"}}')$$,
				 '42804', NULL, 'the ordered distance of a text column');

SELECT * FROM finish();
ROLLBACK;
