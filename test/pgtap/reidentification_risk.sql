-- reidentification_risk against plain SQL: each class's sample rows f_k by a
-- GROUP BY of the sample, its population rows F_k by a GROUP BY of the
-- population LEFT JOINed on the QID (NULL matching NULL), F_k = max(F_k, f_k),
-- and El Emam's measures written from their definitions in docs/sample_risk.md;
-- on random tables (three seeds, integer and text columns with NULLs), with
-- and without a population, a weight column, other column names, sample
-- classes the population lacks; the threshold's boundary; an empty table;
-- bad input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(24);

-- The classes of a sample and their population counts, by GROUP BY
CREATE FUNCTION pg_temp.ref_classes(sample text, qid text[], pop text, pop_qid text[], weight text)
RETURNS TABLE (f bigint, big_f float8)
LANGUAGE plpgsql AS $$
DECLARE
	s_cols text := (SELECT string_agg(format('%I', c), ', ') FROM unnest(qid) c);
	p_cols text := (SELECT string_agg(format('%I AS %I', pc, c), ', ')
					FROM unnest(coalesce(pop_qid, qid), qid) AS u(pc, c));
	p_group text := (SELECT string_agg(format('%I', pc), ', ') FROM unnest(coalesce(pop_qid, qid)) pc);
	joined text := (SELECT string_agg(format('s.%1$I IS NOT DISTINCT FROM p.%1$I', c), ' AND ') FROM unnest(qid) c);
BEGIN
	RETURN QUERY EXECUTE format(
		'SELECT s.f, greatest(coalesce(p.big_f, 0), s.f)::float8
		 FROM (SELECT %1$s, count(*) AS f FROM %2$s GROUP BY %1$s) s
		 LEFT JOIN (SELECT %3$s, %4$s AS big_f FROM %5$s GROUP BY %6$s) p ON %7$s',
		s_cols, sample, p_cols, CASE WHEN weight IS NULL THEN 'count(*)::float8' ELSE format('sum(%I)::float8', weight) END,
		coalesce(pop, sample), p_group, joined);
END
$$;

-- The measures from the classes
CREATE FUNCTION pg_temp.ref_risk(sample text, qid text[], tau float8, pop text, pop_qid text[], weight text)
RETURNS TABLE (rows bigint, classes bigint, prosecutor_highest float8, prosecutor_average float8,
			   prosecutor_lowest float8, prosecutor_rows_above bigint, prosecutor_share_above float8,
			   journalist_highest float8, journalist_average float8, journalist_lowest float8,
			   journalist_rows_above bigint, journalist_share_above float8, marketer float8)
LANGUAGE sql AS $$
	SELECT coalesce(sum(f), 0)::bigint, count(*),
		   1 / min(f)::float8, count(*)::float8 / sum(f), 1 / max(f)::float8,
		   coalesce(sum(f) FILTER (WHERE 1 / f::float8 > tau), 0)::bigint,
		   coalesce(sum(f) FILTER (WHERE 1 / f::float8 > tau), 0)::float8 / sum(f),
		   1 / min(big_f), greatest(count(*) / sum(big_f), sum(f / big_f) / sum(f)), 1 / max(big_f),
		   coalesce(sum(f) FILTER (WHERE 1 / big_f > tau), 0)::bigint,
		   coalesce(sum(f) FILTER (WHERE 1 / big_f > tau), 0)::float8 / sum(f),
		   sum(f / big_f) / sum(f)
	FROM pg_temp.ref_classes(sample, qid, pop, pop_qid, weight)
$$;

-- The columns where reidentification_risk and the reference differ (NULL:
-- none); sums may differ in their last bits with the order of the classes
CREATE FUNCTION pg_temp.differences(sample text, qid text[], tau float8, pop text DEFAULT NULL,
									 pop_qid text[] DEFAULT NULL, weight text DEFAULT NULL)
RETURNS text[]
LANGUAGE sql AS $$
	SELECT array_agg(format('%s: %s, reference %s', g.key, g.value, r.value) ORDER BY g.key)
	FROM jsonb_each(to_jsonb((SELECT x FROM reidentification_risk(sample::regclass, qid, tau, pop::regclass, weight, pop_qid) x))) g
	JOIN jsonb_each(to_jsonb((SELECT x FROM pg_temp.ref_risk(sample, qid, tau, pop, pop_qid, weight) x))) r USING (key)
	WHERE NOT (g.value = r.value
			   OR (jsonb_typeof(g.value) = 'number' AND jsonb_typeof(r.value) = 'number'
				   AND abs(g.value::text::float8 - r.value::text::float8) <= 1e-12 * abs(r.value::text::float8)))
$$;

-- three random samples of people(a integer, b text, c integer), NULLs among
-- the values; each population holds its sample and more; popw counts with a
-- weight; popn names its columns otherwise; popx lacks some sample classes
DO $$
BEGIN
	FOR seed IN 1..3 LOOP
		PERFORM setseed(seed / 10.0);
		EXECUTE format('CREATE TABLE s%s AS SELECT CASE WHEN random() < 0.05 THEN NULL ELSE (random() * %s)::int END AS a,
							(ARRAY[''x'', ''y'', NULL])[1 + (random() * 2.2)::int] AS b, (random() * 4)::int AS c
						FROM generate_series(1, %s)', seed, 6 * seed, 300 * seed);
		EXECUTE format('CREATE TABLE p%1$s AS SELECT * FROM s%1$s UNION ALL
						SELECT (random() * 8)::int, (ARRAY[''x'', ''y'', NULL])[1 + (random() * 2.2)::int], (random() * 4)::int
						FROM generate_series(1, 2000)', seed);
		EXECUTE format('CREATE TABLE pw%1$s AS SELECT a, b, c, (1 + random() * 30)::float8 AS w FROM p%1$s', seed);
		EXECUTE format('CREATE TABLE pn%1$s AS SELECT a AS age, b AS sex, c AS zone FROM p%1$s', seed);
		EXECUTE format('CREATE TABLE px%1$s AS SELECT * FROM p%1$s WHERE a IS NULL OR a %% 3 <> 0', seed);
	END LOOP;
END
$$;

SELECT is(pg_temp.differences('s' || seed, ARRAY['a', 'b', 'c'], 0.2), NULL,
		  'seed ' || seed || ', no population: every measure as the GROUP BY gives it')
FROM generate_series(1, 3) seed;
SELECT is(pg_temp.differences('s' || seed, ARRAY['a', 'b', 'c'], 0.2, 'p' || seed), NULL,
		  'seed ' || seed || ', a population table: every measure as the GROUP BYs give it')
FROM generate_series(1, 3) seed;
SELECT is(pg_temp.differences('s' || seed, ARRAY['a', 'b'], 0.05, 'pw' || seed, NULL, 'w'), NULL,
		  'seed ' || seed || ', a weighted population, threshold 0.05')
FROM generate_series(1, 3) seed;
SELECT is(pg_temp.differences('s2', ARRAY['a', 'b', 'c'], 0.34, 'pn2', ARRAY['age', 'sex', 'zone']), NULL,
		  'population_qid: the population''s own column names');
SELECT is(pg_temp.differences('s3', ARRAY['a', 'c'], 0.2, 'px3'), NULL,
		  'sample classes the population lacks count their sample rows');
SELECT ok(EXISTS (SELECT 1 FROM s3 WHERE a % 3 = 0), '(that sample has classes the population lacks)');
SELECT is(pg_temp.differences('s1', ARRAY['c'], 1), NULL, 'threshold 1: no row above it');
SELECT is((SELECT prosecutor_rows_above FROM reidentification_risk('s1', ARRAY['c'], 1)), 0::bigint,
		  '(threshold 1: 0 rows above it)');
SELECT is((SELECT (rows, classes, prosecutor_average, journalist_average, marketer)::text
		   FROM reidentification_risk('s2', ARRAY['a', 'b', 'c'])),
		  (SELECT (count(*), count(DISTINCT (a, b, c)), count(DISTINCT (a, b, c))::float8 / count(*),
				   count(DISTINCT (a, b, c))::float8 / count(*), count(DISTINCT (a, b, c))::float8 / count(*))::text FROM s2),
		  'without a population, the prosecutor, journalist and marketer averages are classes / rows');

-- "above" is strict: at 0.2 a class of 5 is not at risk, one of 4 is
CREATE TABLE edge AS SELECT 'five' AS g FROM generate_series(1, 5) UNION ALL SELECT 'four' FROM generate_series(1, 4);
SELECT is((SELECT (prosecutor_highest, prosecutor_lowest, prosecutor_rows_above, prosecutor_share_above)::text
		   FROM reidentification_risk('edge', ARRAY['g'])),
		  (0.25::float8, 0.2::float8, 4::bigint, 4 / 9.0::float8)::text, 'a class of 5 is not above 0.2, a class of 4 is');
CREATE TABLE empty_t (g text);
SELECT is((SELECT (rows, classes, prosecutor_highest, prosecutor_rows_above, prosecutor_share_above, marketer)::text
		   FROM reidentification_risk('empty_t', ARRAY['g'])),
		  (0::bigint, 0::bigint, NULL::float8, 0::bigint, NULL::float8, NULL::float8)::text,
		  'an empty table: 0 rows and classes, no risk');

-- bad input
SELECT throws_ok($$SELECT * FROM reidentification_risk('s1', ARRAY['a'], NULL)$$, '22004',
				 'reidentification_risk: threshold must not be NULL', 'NULL threshold');
SELECT throws_ok($$SELECT * FROM reidentification_risk('s1', NULL)$$, '22004',
				 'reidentification_risk: qid must not be NULL', 'NULL qid');
SELECT throws_ok(format('SELECT * FROM reidentification_risk(%L, ARRAY[%L], %L::float8)', 's1', 'a', t), '22023',
				 format('reidentification_risk: threshold must be in (0, 1], not %s', t), 'threshold ' || t)
FROM unnest(ARRAY['0', '1.5', 'NaN']) AS t;
SELECT throws_ok($$SELECT * FROM reidentification_risk('s1', ARRAY['a'], population_weight_column => 'w')$$, '22023',
				 'reidentification_risk: population_weight_column and population_qid need a population',
				 'a population weight without a population');
SELECT throws_ok($$SELECT * FROM reidentification_risk('s1', ARRAY['nope'])$$, '42703', NULL, 'an unknown column');

SELECT * FROM finish();
ROLLBACK;
