-- Property tests for k-map and the weighted-sample risk: every
-- figure against an independent plain-SQL LEFT JOIN of the release's classes
-- with the population's GROUP BY, on random tables (5 seeds, NULLs, heavy
-- ties, numeric scales, a case-insensitive collation, weights, differently
-- named columns); the k-map of a table against itself is its k-anonymity;
-- row-level security and privileges on both tables; the individual risk
-- against its negative-binomial series and sdcMicro's closed forms; bad input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(5 * 8 + 3 * 8 + 3 + 1 + 9 + 3 * 4 + 1 + 6 + 31 + 2);

CREATE COLLATION pg_temp.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- A release and a population with tied values, ~10% NULL, weights; the
-- population's columns have other names; a third of the release is new
CREATE FUNCTION pg_temp.make_tables(seed float8, nrelease integer, npopulation integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS rel, pop;
	CREATE TABLE pop (pa integer, pb text COLLATE pg_temp.ci, pc numeric, pd date, pw numeric);
	INSERT INTO pop
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 12)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B'])[1 + floor(random() * 4)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 1.00, 2.5, 2.50, 7])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 4)::int END,
		round((random() * 40)::numeric, 2)
	FROM generate_series(1, npopulation);
	CREATE TABLE rel (id serial, a integer, b text COLLATE pg_temp.ci, c numeric, d date);
	INSERT INTO rel (a, b, c, d)
	SELECT pa, pb, pc, pd FROM pop WHERE random() < 2.0 * nrelease / 3 / greatest(npopulation, 1);
	INSERT INTO rel (a, b, c, d)
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 15)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'B', 'c'])[1 + floor(random() * 3)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1.000, 2.5, 8])[1 + floor(random() * 3)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 5)::int END
	FROM generate_series(1, nrelease / 3);
END
$$;

-- Symmetric difference of kmap_count and its reference over the columns (a, c, d)
CREATE FUNCTION pg_temp.class_difference(weighted boolean) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	CREATE TEMP TABLE ours ON COMMIT DROP AS
	SELECT class, release_rows, round(population_rows::numeric, 6) AS population_rows
	FROM kmap_count('rel', 'pop', ARRAY['a', 'c', 'd'], CASE WHEN weighted THEN 'pw' END,
					ARRAY['pa', 'pc', 'pd']);
	CREATE TEMP TABLE reference ON COMMIT DROP AS
	WITH r AS (SELECT a, c, d, count(*) AS n FROM rel GROUP BY a, c, d),
		 p AS (SELECT pa, pc, pd, count(*) AS n, sum(pw) AS w FROM pop GROUP BY pa, pc, pd)
	SELECT jsonb_build_object('a', r.a, 'c', r.c, 'd', r.d) AS class, r.n AS release_rows,
		   round(coalesce(CASE WHEN weighted THEN p.w ELSE p.n END, 0), 6) AS population_rows
	FROM r LEFT JOIN p ON r.a IS NOT DISTINCT FROM p.pa AND r.c IS NOT DISTINCT FROM p.pc
					   AND r.d IS NOT DISTINCT FROM p.pd;
	SELECT count(*) INTO n FROM ((TABLE ours EXCEPT ALL TABLE reference)
								 UNION ALL (TABLE reference EXCEPT ALL TABLE ours)) x;
	DROP TABLE ours, reference;
	RETURN n;
END
$$;

-- Release rows whose kmap_row_counts figure differs from a per-row count over (a, b, c)
CREATE FUNCTION pg_temp.row_difference() RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
	RETURN (WITH ours AS (
		SELECT (release_row->>'id')::int AS id, release_rows, population_rows
		FROM kmap_row_counts('rel', 'pop', ARRAY['a', 'b', 'c'], 'pw', ARRAY['pa', 'pb', 'pc'])
	), reference AS (
		SELECT r.id,
			   (SELECT count(*) FROM rel r2 WHERE r2.a IS NOT DISTINCT FROM r.a
				AND r2.b IS NOT DISTINCT FROM r.b AND r2.c IS NOT DISTINCT FROM r.c) AS release_rows,
			   (SELECT coalesce(sum(p.pw), 0) FROM pop p WHERE p.pa IS NOT DISTINCT FROM r.a
				AND p.pb IS NOT DISTINCT FROM r.b AND p.pc IS NOT DISTINCT FROM r.c) AS population_rows
		FROM rel r
	)
	SELECT count(*) FROM reference LEFT JOIN ours USING (id)
	WHERE ours.id IS NULL OR ours.release_rows <> reference.release_rows
	   OR abs(ours.population_rows - reference.population_rows::float8) > 1e-6
	   OR (SELECT count(*) FROM ours) <> (SELECT count(*) FROM rel));
END
$$;

CREATE FUNCTION pg_temp.check_seed(seed float8, nrelease integer, npopulation integer)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	label text := format('seed %s, %s release rows, %s population rows, %s scan', seed, nrelease, npopulation,
						 current_setting('qidrisk.kmap_population_scan'));
	ours float8;
	reference float8;
BEGIN
	PERFORM pg_temp.make_tables(seed, nrelease, npopulation);
	RETURN NEXT is(pg_temp.class_difference(false), 0::bigint,
				   label || ': kmap_count = LEFT JOIN of GROUP BYs (counts)');
	RETURN NEXT is(pg_temp.class_difference(true), 0::bigint,
				   label || ': kmap_count = LEFT JOIN of GROUP BYs (weights)');
	RETURN NEXT is(pg_temp.row_difference(), 0::bigint,
				   label || ': kmap_row_counts = per-row count under a case-insensitive collation');
	-- a release row's jsonb_build_object of its QID finds its class in kmap_count
	RETURN NEXT is((SELECT count(*) FROM rel r
					LEFT JOIN kmap_count('rel', 'pop', ARRAY['a', 'd'], NULL, ARRAY['pa', 'pd']) k
					ON k.class = jsonb_build_object('a', r.a, 'd', r.d)
					WHERE k.class IS NULL OR k.release_rows <> (SELECT count(*) FROM rel r2
						WHERE r2.a IS NOT DISTINCT FROM r.a AND r2.d IS NOT DISTINCT FROM r.d)),
				   0::bigint, label || ': the documented jsonb join reaches every release row');
	SELECT kmap_value('rel', 'pop', ARRAY['a', 'c'], population_qid => ARRAY['pa', 'pc']) INTO ours;
	SELECT min(coalesce(p.n, 0)) INTO reference
	FROM (SELECT DISTINCT a, c FROM rel) r
	LEFT JOIN (SELECT pa, pc, count(*) AS n FROM pop GROUP BY pa, pc) p
	ON r.a IS NOT DISTINCT FROM p.pa AND r.c IS NOT DISTINCT FROM p.pc;
	RETURN NEXT is(ours, reference, label || ': kmap_value = min of the reference');
	RETURN NEXT is(kmap_rows_below('rel', 'pop', ARRAY['a', 'b', 'd'], 30, 'pw', ARRAY['pa', 'pb', 'pd']),
				   (SELECT count(*) FROM rel r WHERE (SELECT coalesce(sum(pw), 0) FROM pop p
						WHERE p.pa IS NOT DISTINCT FROM r.a AND p.pb IS NOT DISTINCT FROM r.b
						AND p.pd IS NOT DISTINCT FROM r.d) < 30),
				   label || ': kmap_rows_below(30) with weights = per-row reference');
	RETURN NEXT is(kmap_value('rel', 'rel', ARRAY['a', 'b', 'c', 'd'])::bigint,
				   (SELECT k_anonymity(a, b, c, d) FROM rel),
				   label || ': k-map of the release against itself = its k-anonymity');
	RETURN NEXT is(kmap_rows_below('rel', 'rel', ARRAY['b', 'd'], 3),
				   (SELECT rows_below_k(3, b, d) FROM rel),
				   label || ': kmap_rows_below against itself = rows_below_k');
END
$$;

SELECT pg_temp.check_seed(0.11, 300, 3000);
SELECT pg_temp.check_seed(0.22, 1500, 800);
SELECT pg_temp.check_seed(0.33, 30, 20000);
SELECT pg_temp.check_seed(0.44, 2000, 2000);
SELECT pg_temp.check_seed(-0.55, 90, 0);

-- The grouped scans (a distributed table's: the release GROUP BY its QID, the
-- population GROUP BY qid_key) give the same figures, NULLs, ties, a
-- non-deterministic collation and weights included
SET LOCAL qidrisk.kmap_population_scan = grouped;
SELECT pg_temp.check_seed(0.11, 300, 3000);
SELECT pg_temp.check_seed(0.33, 30, 20000);
SELECT pg_temp.check_seed(-0.55, 90, 0);
SET LOCAL qidrisk.kmap_population_scan = DEFAULT;

-- The population scan in launched parallel workers (partial states combined,
-- some of them empty) gives the same figures
CREATE FUNCTION pg_temp.workers_launched(query text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	launched integer := 0;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Workers Launched: ' THEN
			launched := launched + substring(line from 'Workers Launched: (\d+)')::integer;
		END IF;
	END LOOP;
	RETURN launched;
END
$$;
SELECT pg_temp.make_tables(0.77, 2000, 30000);
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL parallel_leader_participation = off;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT cmp_ok(pg_temp.workers_launched($$SELECT qidrisk_internal.qidrisk_kmap_probe(decode(repeat('00', 16), 'hex'), pw::float8, pa, pc, pd) FROM pop$$),
			  '>', 0, 'the population scan runs in parallel workers here');
SELECT is(pg_temp.class_difference(false), 0::bigint, 'parallel population scan: counts = LEFT JOIN of GROUP BYs');
SELECT is(pg_temp.class_difference(true), 0::bigint, 'parallel population scan: weights = LEFT JOIN of GROUP BYs');
SET LOCAL parallel_setup_cost = DEFAULT;
SET LOCAL parallel_tuple_cost = DEFAULT;
SET LOCAL min_parallel_table_scan_size = DEFAULT;
SET LOCAL parallel_leader_participation = DEFAULT;
SET LOCAL max_parallel_workers_per_gather = DEFAULT;

-- class is exactly jsonb_build_object of the release's values, for many types
CREATE TYPE pg_temp.pair AS (x int, y text);
CREATE TABLE alltypes (a int2, b int4, c int8, d numeric, e float8, f text, g varchar(3), h bool, i date,
	j timestamptz, k uuid, l int[], m interval, n pg_temp.pair, o char(3), p "char", q name, r jsonb, s float4);
INSERT INTO alltypes VALUES
	(1, -2, 9007199254740993, 1.50, -0.0, 'x"y\', 'ab', true, '2020-01-02', '2020-01-02 03:04:05+00',
	 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1,2}', '1 day', ROW(1, 'z'), 'ab', 'c', 'nm', '{"k": [1, null]}', 1.5),
	(NULL, NULL, NULL, 'NaN', 'NaN', NULL, NULL, false, 'infinity', NULL, NULL, '{}', NULL, NULL, NULL, NULL, NULL, 'null', 'Infinity'),
	(32767, 2147483647, -9223372036854775808, '-Infinity', 'Infinity', 'é', '', NULL, NULL, NULL, NULL, NULL, '-1 mon',
	 ROW(NULL, NULL), NULL, NULL, NULL, '"s"', NULL),
	(0, 0, 0, 1e-30, 1e300, '', ' ', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '1.0', 0);
SELECT is((SELECT count(*) FROM alltypes t
		   JOIN kmap_count('alltypes', 'alltypes', ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm',
												   'n', 'o', 'p', 'q', 'r', 's']) k
		   ON k.class::text = jsonb_build_object('a', a, 'b', b, 'c', c, 'd', d, 'e', e, 'f', f, 'g', g, 'h', h, 'i', i,
												 'j', j, 'k', k, 'l', l, 'm', m, 'n', n, 'o', o, 'p', p, 'q', q,
												 'r', r, 's', s)::text), 4::bigint,
		  'class is jsonb_build_object of the values, to the letter, for 19 types');

-- weighted_risk: F_k = sum of weights, risks as the closed forms computed here
SELECT pg_temp.make_tables(0.66, 3000, 3000);
UPDATE pop SET pw = pw + 1;
CREATE TABLE sample AS SELECT pa AS a, pd AS d, pw AS w FROM pop;
SELECT is((SELECT count(*) FROM weighted_risk('sample', ARRAY['a', 'd'], 'w') x
		   FULL JOIN (SELECT jsonb_build_object('a', a, 'd', d) AS class, count(*) AS f, sum(w)::float8 AS big_f
					  FROM sample GROUP BY a, d) y USING (class)
		   WHERE x.rows IS DISTINCT FROM y.f
			  OR abs(x.estimated_population - y.big_f) > 1e-9 * y.big_f), 0::bigint,
		  'weighted_risk: f_k and F_k = GROUP BY count and sum of weights');
SELECT is((SELECT count(*) FROM weighted_risk('sample', ARRAY['a', 'd'], 'w') x,
				LATERAL (SELECT x.rows::float8 / x.estimated_population AS p) pp,
				LATERAL (SELECT CASE WHEN x.rows = 1 THEN pp.p / (1 - pp.p) * ln(1 / pp.p)
									 WHEN x.rows = 2 THEN pp.p / (1 - pp.p) - (pp.p / (1 - pp.p))^2 * ln(1 / pp.p)
									 ELSE pp.p / (x.rows - (1 - pp.p)) END AS r) rr
		   WHERE abs(x.individual_risk - rr.r) > 1e-9 * rr.r), 0::bigint,
		  'weighted_risk (approx): sdcMicro''s formulas for f = 1, 2 and f >= 3');
SELECT is((SELECT round(expected_reidentifications::numeric, 9)
		   FROM weighted_risk_summary('sample', ARRAY['a', 'd'], 'w', 'exact')),
		  (SELECT round(sum(f * individual_risk(f, big_f, 'exact'))::numeric, 9)
		   FROM (SELECT count(*) AS f, sum(w)::float8 AS big_f FROM sample GROUP BY a, d) g),
		  'weighted_risk_summary: expected re-identifications = sum over records');
SELECT is((SELECT ROW(rows, classes, singletons, round(reidentification_rate::numeric, 12))::text
		   FROM weighted_risk_summary('sample', ARRAY['a', 'd'], 'w')),
		  (SELECT ROW(sum(f), count(*), count(*) FILTER (WHERE f = 1),
					  round((sum(f * individual_risk(f, big_f)) / sum(f))::numeric, 12))::text
		   FROM (SELECT count(*) AS f, sum(w)::float8 AS big_f FROM sample GROUP BY a, d) g),
		  'weighted_risk_summary: rows, classes, sample uniques, rate');
-- hand-computed: p = 1/2 gives ln 2, 1 - ln 2, ln 2 - 1/2 (exact) and 1/5 (approx)
SELECT is(ARRAY[round(individual_risk(1, 2)::numeric, 12), round(individual_risk(2, 4)::numeric, 12),
				round(individual_risk(3, 6, 'exact')::numeric, 12), round(individual_risk(3, 6)::numeric, 12)],
		  ARRAY[round(ln(2)::numeric, 12), round((1 - ln(2))::numeric, 12),
				round((ln(2) - 0.5)::numeric, 12), 0.2],
		  'individual_risk at p = 1/2: ln 2, 1 - ln 2, ln 2 - 1/2 (exact), 1/5 (approx)');
SELECT is(ARRAY[individual_risk(1, 1), individual_risk(4, 4, 'exact'), individual_risk(4, 3.5, 'exact')],
		  ARRAY[1, 0.25, 0.25]::float8[], 'F_k = f_k (or below): risk 1/f_k');
-- exact = E[1/F_k] as the negative-binomial series sum_h C(h-1, f-1) p^f q^(h-f) / h,
-- its terms by their ratio, summed here in float8
SELECT is((SELECT count(*) FROM (VALUES (3, 0.2), (4, 0.5), (5, 0.05), (7, 0.9), (12, 0.6), (25, 0.35), (2, 0.999),
								 (63, 0.3), (64, 0.3), (100, 0.9), (150, 0.2), (300, 0.6), (63, 0.97)) v(f, p),
				LATERAL (WITH RECURSIVE t(h, c) AS (
							 SELECT f, p::float8 ^ f
							 UNION ALL
							 SELECT h + 1, c * h / (h + 1 - f) * (1 - p) FROM t WHERE h < f + 6000 AND c > 1e-200)
						 SELECT sum(c / h) AS r FROM t) s
		   WHERE abs(individual_risk(f, f / p, 'exact') - s.r) > 1e-9 * s.r), 0::bigint,
		  'individual_risk (exact) = sum over h of NB(h - f; f, p) / h');
-- exact = sdcMicro's alternating closed form (Benedetti-Franconi), in numeric
SELECT is((SELECT count(*) FROM (VALUES (3, 0.1), (4, 0.3), (5, 0.25), (6, 0.7), (8, 0.45)) v(f, p),
				LATERAL (SELECT (p::numeric / (1 - p::numeric)) ^ f
								* ((CASE WHEN f % 2 = 1 THEN 1 ELSE -1 END)::numeric * ln(1 / p::numeric)
								   + (SELECT sum((CASE WHEN j % 2 = 0 THEN 1 ELSE -1 END)::numeric
												  * (SELECT round(exp(sum(ln(i::numeric)))) FROM generate_series(1, f - 1) i)
												  / (SELECT coalesce(round(exp(sum(ln(i::numeric)))), 1) FROM generate_series(1, j) i)
												  / (SELECT coalesce(round(exp(sum(ln(i::numeric)))), 1) FROM generate_series(1, f - 1 - j) i)
												  * (p::numeric ^ (j + 1 - f) - 1) / (f - 1 - j))
									  FROM generate_series(0, f - 2) j)) AS r) s
		   WHERE abs(individual_risk(f, f / p, 'exact') - s.r::float8) > 1e-9 * s.r::float8), 0::bigint,
		  'individual_risk (exact) = the alternating closed form for f = 3..8');
SELECT ok((SELECT bool_and(individual_risk(f, f / p, 'exact') BETWEEN p / f AND 1.0 / f)
		   FROM (SELECT generate_series(1, 130) UNION ALL SELECT 1000000000) AS g(f), unnest(ARRAY[1e-9, 0.001, 0.3, 0.5, 0.51, 0.8, 0.999999]) p),
		  'individual_risk (exact) lies between p/f and 1/f');

-- A table read as both release and population (weighted_risk, and kmap_* of a
-- table against itself) is read once when grouped (a distributed table's
-- scan): every row of the answer equals the probe's, NULLs, ties, a
-- case-insensitive collation, decimal weights and bad weights included
CREATE FUNCTION pg_temp.rows_under(scan text, query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	PERFORM set_config('qidrisk.kmap_population_scan', scan, true);
	EXECUTE format('SELECT count(*) || %L || coalesce(string_agg(x::text, %L ORDER BY x::text), %L) FROM (%s) x',
				   ' rows: ', ';', '', query) INTO result;
	PERFORM set_config('qidrisk.kmap_population_scan', 'auto', true);
	RETURN result;
END
$$;
CREATE FUNCTION pg_temp.self_scans_agree(seed float8, npopulation integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	query text;
	label text;
BEGIN
	PERFORM pg_temp.make_tables(seed, 30, npopulation);
	FOR query, label IN VALUES
		($q$SELECT * FROM weighted_risk('pop', ARRAY['pa', 'pb', 'pc'], 'pw')$q$, 'weighted_risk, decimal weights'),
		($q$SELECT * FROM weighted_risk('pop', ARRAY['pb', 'pd'], NULL, 'exact')$q$, 'weighted_risk, no weight, exact'),
		($q$SELECT * FROM weighted_risk_summary('pop', ARRAY['pa', 'pb', 'pc', 'pd'], 'pw', 'exact')$q$, 'weighted_risk_summary'),
		($q$SELECT * FROM kmap_row_counts('pop', 'pop', ARRAY['pc', 'pb'], 'pw')$q$, 'kmap_row_counts of a table against itself')
	LOOP
		RETURN NEXT is(pg_temp.rows_under('grouped', query), pg_temp.rows_under('probe', query),
					   format('seed %s, %s rows: %s, grouped (one read) = probe', seed, npopulation, label));
	END LOOP;
END
$$;
SELECT pg_temp.self_scans_agree(0.12, 3000);
SELECT pg_temp.self_scans_agree(0.34, 20000);
SELECT pg_temp.self_scans_agree(-0.56, 0);
SELECT pg_temp.make_tables(0.78, 30, 500);
SELECT isnt(pg_temp.rows_under('grouped', $$SELECT * FROM weighted_risk('pop', ARRAY['pa'], 'pw')$$), '0 rows: ',
			'the comparisons above compare rows (the last table is empty)');

-- Row-level security and privileges on both tables
CREATE TABLE sec_rel (zip text, age int, owner text);
CREATE TABLE sec_pop (zip text, age int, owner text);
INSERT INTO sec_rel VALUES ('1000', 30, 'alice'), ('1000', 30, 'bob'), ('2000', 40, 'alice');
INSERT INTO sec_pop SELECT '1000', 30, CASE WHEN i <= 3 THEN 'alice' ELSE 'bob' END FROM generate_series(1, 10) i;
INSERT INTO sec_pop VALUES ('2000', 40, 'bob');
ALTER TABLE sec_rel ENABLE ROW LEVEL SECURITY;
ALTER TABLE sec_pop ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON sec_rel USING (owner = current_user);
CREATE POLICY mine ON sec_pop USING (owner = current_user);
CREATE ROLE alice;
CREATE ROLE bob;
GRANT SELECT ON sec_rel, sec_pop TO alice;
GRANT SELECT ON sec_rel TO bob;
GRANT USAGE ON SCHEMA public TO alice, bob;
SELECT is((SELECT jsonb_agg(jsonb_build_array(class, release_rows, population_rows) ORDER BY class)
		   FROM kmap_count('sec_rel', 'sec_pop', ARRAY['zip', 'age'])),
		  '[[{"age": 30, "zip": "1000"}, 2, 10], [{"age": 40, "zip": "2000"}, 1, 1]]'::jsonb,
		  'owner (no RLS for the table owner): all rows of both tables');
SET ROLE alice;
SELECT is((SELECT jsonb_agg(jsonb_build_array(class, release_rows, population_rows) ORDER BY class)
		   FROM kmap_count('sec_rel', 'sec_pop', ARRAY['zip', 'age'])),
		  '[[{"age": 30, "zip": "1000"}, 1, 3], [{"age": 40, "zip": "2000"}, 1, 0]]'::jsonb,
		  'alice sees her rows only, on both sides');
SELECT is(kmap_value('sec_rel', 'sec_pop', ARRAY['zip', 'age']), 0::float8,
		  'alice: k-map 0 (her population has no 2000/40)');
RESET ROLE;
SET ROLE bob;
SELECT throws_ok($$SELECT * FROM kmap_count('sec_rel', 'sec_pop', ARRAY['zip', 'age'])$$,
				 '42501', NULL, 'bob without SELECT on the population: permission denied');
SELECT is((SELECT jsonb_agg(jsonb_build_array(class, release_rows, population_rows))
		   FROM kmap_count('sec_rel', 'sec_rel', ARRAY['zip', 'age'])),
		  '[[{"age": 30, "zip": "1000"}, 1, 1]]'::jsonb, 'bob against his own release rows');
RESET ROLE;
REVOKE SELECT ON sec_rel FROM alice;
GRANT SELECT (zip) ON sec_rel TO alice;
SET ROLE alice;
SELECT throws_ok($$SELECT * FROM kmap_count('sec_rel', 'sec_pop', ARRAY['zip', 'age'])$$,
				 '42501', NULL, 'alice without SELECT on the column age of the release: permission denied');
RESET ROLE;

-- Bad input: a clear error with its SQLSTATE, and nothing changed
CREATE TABLE snapshot AS SELECT (SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM rel r) AS rel_sum,
								(SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) FROM pop p) AS pop_sum;
CREATE TABLE wide (a bigint, b text COLLATE "C", c varchar, n text, w numeric, x text COLLATE pg_temp.ci);
INSERT INTO wide VALUES (1, 'a', 'b', 'n', -1, 'a'), (2, 'b', 'b', 'n', NULL, 'b');
CREATE TABLE nullw (a bigint, w integer);
INSERT INTO nullw VALUES (7, 1), (8, NULL);
CREATE TABLE negw (a bigint, w integer);
INSERT INTO negw VALUES (1, 1), (99, -2);
CREATE TABLE nanw (a integer, w float8);
INSERT INTO nanw VALUES (1, 'NaN');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['nope'])$$, '42703', NULL, 'unknown release column');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['a'], NULL, ARRAY['nope'])$$, '42703', NULL, 'unknown population column');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['a'], 'nope', ARRAY['pa'])$$, '42703', NULL, 'unknown weight column');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['ctid'])$$, '42703', NULL, 'system column');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'wide', ARRAY['a'])$$, '42804', NULL, 'integer against bigint');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['a'], 'pb', ARRAY['pa'])$$, '42804', NULL, 'text weight');
SELECT throws_ok($$SELECT * FROM kmap_count('wide', 'rel', ARRAY['b'])$$, '42P21', NULL, 'case-sensitive against case-insensitive text');
SELECT is((SELECT jsonb_agg(jsonb_build_array(class, release_rows, population_rows) ORDER BY class)
		   FROM kmap_count('wide', 'wide', ARRAY['b'], NULL, ARRAY['c'])),
		  (SELECT jsonb_agg(jsonb_build_array(jsonb_build_object('b', r.b), r.n, coalesce(p.n, 0)) ORDER BY r.b)
		   FROM (SELECT b, count(*) AS n FROM wide GROUP BY b) r
		   LEFT JOIN (SELECT c::text COLLATE "C" AS c, count(*) AS n FROM wide GROUP BY c) p ON p.c = r.b),
		  'text against varchar: the counts of a LEFT JOIN of GROUP BYs');
SELECT throws_ok($$SELECT * FROM kmap_count('wide', 'wide', ARRAY['a'], 'w')$$, '22023', NULL, 'negative weight');
SELECT throws_ok($$SELECT * FROM kmap_count('wide', 'negw', ARRAY['a'], 'w')$$, '22023', NULL, 'negative weight on a row that matches no release class');
SELECT throws_ok($$SELECT * FROM kmap_count('wide', 'nullw', ARRAY['a'], 'w')$$, '22004', NULL, 'NULL weight');
SELECT throws_ok($$SELECT * FROM kmap_count('nanw', 'nanw', ARRAY['a'], 'w')$$, '22023', NULL, 'NaN weight');
SET LOCAL qidrisk.kmap_population_scan = grouped;
SELECT throws_ok($$SELECT * FROM weighted_risk('negw', ARRAY['a'], 'w')$$, '22023', NULL, 'grouped, one read: negative weight');
SELECT throws_ok($$SELECT * FROM weighted_risk('nanw', ARRAY['a'], 'w')$$, '22023', NULL, 'grouped, one read: NaN weight');
SELECT throws_ok($$SELECT * FROM weighted_risk('nullw', ARRAY['a'], 'w')$$, '22004', NULL, 'grouped, one read: NULL weight');
SET LOCAL qidrisk.kmap_population_scan = DEFAULT;
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['a', 'c'], NULL, ARRAY['pa'])$$, '2202E', NULL, 'population_qid of another length');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['a', NULL])$$, '22004', NULL, 'NULL in qid');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY[]::text[])$$, '22023', NULL, 'empty qid');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['a', 'a'], NULL, ARRAY['pa', 'pc'])$$, '42701', NULL, 'duplicate qid column');
SELECT throws_ok($$SELECT * FROM kmap_count(NULL, 'pop', ARRAY['a'])$$, '22004', NULL, 'NULL release');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'rel_id_seq', ARRAY['a'])$$, '42809', NULL, 'a sequence as population');
SELECT throws_ok($$SELECT kmap_rows_below('rel', 'pop', ARRAY['a'], NULL, NULL, ARRAY['pa'])$$, '22004', NULL, 'kmap_rows_below: NULL k');
SELECT throws_ok($$SELECT kmap_rows_below('rel', 'pop', ARRAY['a'], 0, NULL, ARRAY['pa'])$$, '22023', NULL, 'kmap_rows_below: k = 0');
SELECT throws_ok($$SELECT kmap_rows_below('rel', 'pop', ARRAY['a'], -1, NULL, ARRAY['pa'])$$, '22023', NULL, 'kmap_rows_below: k = -1');
SELECT throws_ok($$SELECT individual_risk(0, 5)$$, '22023', NULL, 'individual_risk: f = 0');
SELECT throws_ok($$SELECT individual_risk(1, -5)$$, '22023', NULL, 'individual_risk: negative F');
SELECT throws_ok($$SELECT individual_risk(1, 5, 'mu')$$, '22023', NULL, 'individual_risk: unknown method');
SELECT throws_ok($$SELECT * FROM weighted_risk('sample', ARRAY['a'], 'd')$$, '42804', NULL, 'weighted_risk: a date column as weight');
SET LOCAL qidrisk.max_state_memory = '64kB';
SELECT throws_ok($$SELECT * FROM kmap_count('big', 'big', ARRAY['i'])$$, '42P01', NULL, 'unknown table');
CREATE TABLE big AS SELECT i FROM generate_series(1, 20000) i;
SELECT throws_ok($$SELECT * FROM kmap_count('big', 'big', ARRAY['i'])$$, '54000', NULL, 'classes past qidrisk.max_state_memory');
RESET qidrisk.max_state_memory;
SELECT is((SELECT count(*) FROM kmap_count('big', 'big', ARRAY['i'])), 20000::bigint, 'within the default budget it runs');
CREATE TABLE bigger AS SELECT i, i % 7 AS j FROM generate_series(1, 400000) i;
-- (throws_ok's WHEN OTHERS does not catch a cancellation)
CREATE FUNCTION pg_temp.cancelled() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM count(*) FROM kmap_count('bigger', 'bigger', ARRAY['i', 'j']);
	RETURN 'finished';
EXCEPTION WHEN query_canceled THEN
	RETURN SQLSTATE;
END
$$;
SET LOCAL statement_timeout = '30ms';
SELECT is(pg_temp.cancelled(), '57014', 'kmap_count can be cancelled (statement_timeout)');
SET LOCAL statement_timeout = 0;
SELECT is((SELECT ROW((SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM rel r),
					  (SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) FROM pop p))::text),
		  (SELECT ROW(rel_sum, pop_sum)::text FROM snapshot), 'bad calls changed nothing');

SELECT * FROM finish();
ROLLBACK;
