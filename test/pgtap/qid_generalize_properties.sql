-- Property tests of the generalization what-ifs (qid_generalize) and the
-- writer (qid_generalize_into): every figure against plain SQL (GROUP BY ...
-- HAVING count(*) = 1, local singletons found by a join on that GROUP BY), on
-- random tables of three seeds with NULLs and ties; a constructed table where
-- local recoding removes every singleton while modifying only them; bad input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(3 * 8 + 9 + 14);

-- municipalities 0..39 in provinces 0..7
CREATE TABLE province_of ("from" text, "to" text);
INSERT INTO province_of SELECT 'm' || i, 'p' || (i % 8) FROM generate_series(0, 39) i;

CREATE FUNCTION pg_temp.make_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r CASCADE;
	CREATE TABLE r (id serial, year integer, sex text, municipality text);
	INSERT INTO r (year, sex, municipality)
	SELECT CASE WHEN random() < 0.05 THEN NULL ELSE 1940 + floor(random() * 60)::int END,
		CASE WHEN random() < 0.05 THEN NULL WHEN random() < 0.03 THEN '' WHEN random() < 0.5 THEN 'F' ELSE 'M' END,
		CASE WHEN random() < 0.05 THEN NULL ELSE 'm' || floor(40 * power(random(), 2))::int END
	FROM generate_series(1, nrows);
END
$$;

-- Plain-SQL figures of a generalized copy g(year, sex, municipality, modified)
CREATE FUNCTION pg_temp.figures(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format($q$
		WITH g AS (%s)
		SELECT ROW((SELECT count(*) FROM (SELECT 1 FROM g GROUP BY year, sex, municipality HAVING count(*) = 1) x),
				   (SELECT count(*) FROM g WHERE modified),
				   (SELECT count(*) FROM (SELECT 1 FROM g GROUP BY year, sex, municipality) x),
				   (SELECT count(*) FROM g))::text$q$, query) INTO result;
	RETURN result;
END
$$;

-- qid_generalize's figures for one what-if on the current table r
CREATE FUNCTION pg_temp.ours(whatif jsonb, drop_incomplete boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	SELECT ROW(q.singletons, q.rows_modified, q.classes, q.rows)::text INTO result
	FROM qid_generalize('r'::text::regclass, ARRAY['year', 'sex', 'municipality'], whatif, drop_incomplete) q
	WHERE q.name <> 'none';
	RETURN result;
END
$$;

CREATE FUNCTION pg_temp.check_seed(seed float8, nrows integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	label text := format('seed %s, %s rows', seed, nrows);
	cuts integer[];
	means float8[];
BEGIN
	PERFORM pg_temp.make_table(seed, nrows);
	-- the rows unique on the QID, found by a join on the GROUP BY
	CREATE OR REPLACE TEMP VIEW singles AS
	SELECT r.id FROM r JOIN (SELECT year, sex, municipality FROM r GROUP BY 1, 2, 3 HAVING count(*) = 1) u
		ON r.year IS NOT DISTINCT FROM u.year AND r.sex IS NOT DISTINCT FROM u.sex
		AND r.municipality IS NOT DISTINCT FROM u.municipality;

	RETURN NEXT is(pg_temp.ours('{"local": true, "columns": {"sex": {"constant": "*"}}}'),
		pg_temp.figures($q$SELECT year, CASE WHEN s.id IS NOT NULL THEN '*' ELSE r.sex END AS sex, municipality,
			s.id IS NOT NULL AND r.sex IS DISTINCT FROM '*' AS modified FROM r LEFT JOIN singles s USING (id)$q$),
		label || ': sex -> * on the singletons');
	RETURN NEXT is(pg_temp.ours('{"columns": {"sex": {"constant": "*"}}}'),
		pg_temp.figures($q$SELECT year, '*' AS sex, municipality, r.sex IS DISTINCT FROM '*' AS modified FROM r$q$),
		label || ': sex -> * everywhere');
	RETURN NEXT is(pg_temp.ours('{"columns": {"municipality": {"map": "province_of"}}}'),
		pg_temp.figures($q$SELECT year, sex, coalesce(p."to", r.municipality) AS municipality,
			p."to" IS NOT NULL AND p."to" <> r.municipality AS modified
			FROM r LEFT JOIN province_of p ON p."from" = r.municipality$q$),
		label || ': municipality -> province everywhere');
	RETURN NEXT is(pg_temp.ours('{"local": true, "columns": {"municipality": {"map": "province_of"}}}'),
		pg_temp.figures($q$SELECT year, sex, CASE WHEN s.id IS NOT NULL THEN coalesce(p."to", r.municipality) ELSE r.municipality END AS municipality,
			s.id IS NOT NULL AND p."to" IS NOT NULL AND p."to" <> r.municipality AS modified
			FROM r LEFT JOIN singles s USING (id) LEFT JOIN province_of p ON p."from" = r.municipality$q$),
		label || ': municipality -> province on the singletons');
	RETURN NEXT is(pg_temp.ours('{"local": true, "columns": {"sex": {"constant": "*"}, "municipality": {"map": "province_of"}}}'),
		pg_temp.figures($q$SELECT year, CASE WHEN s.id IS NOT NULL THEN '*' ELSE r.sex END AS sex,
			CASE WHEN s.id IS NOT NULL THEN coalesce(p."to", r.municipality) ELSE r.municipality END AS municipality,
			s.id IS NOT NULL AND (r.sex IS DISTINCT FROM '*' OR (p."to" IS NOT NULL AND p."to" <> r.municipality)) AS modified
			FROM r LEFT JOIN singles s USING (id) LEFT JOIN province_of p ON p."from" = r.municipality$q$),
		label || ': both on the singletons');

	-- ranges of at least 30 rows: cuts from quantile_cuts, buckets by width_bucket
	SELECT quantile_cuts(year, 30) INTO cuts FROM r;
	RETURN NEXT is(pg_temp.ours('{"columns": {"year": {"range": 30}}}'),
		pg_temp.figures(format($q$SELECT CASE WHEN year IS NULL THEN NULL ELSE width_bucket(year, %L::int[]) END::text AS year,
			sex, municipality, year IS NOT NULL AS modified FROM r$q$, cuts)),
		label || ': year -> ranges of at least 30 rows');
	RETURN NEXT ok((SELECT min(n) >= 30 FROM (SELECT count(*) n FROM r WHERE year IS NOT NULL
		GROUP BY width_bucket(year, cuts)) b), label || ': every range holds at least 30 rows');
	-- the mean of each range: a year equal to its range's mean is not modified
	SELECT array_agg(m ORDER BY b) INTO means
	FROM (SELECT width_bucket(year, cuts) b, avg(year)::float8 m FROM r WHERE year IS NOT NULL GROUP BY 1) x;
	RETURN NEXT is(pg_temp.ours('{"columns": {"year": {"mean": 30}}}'),
		pg_temp.figures(format($q$SELECT (%1$L::float8[])[width_bucket(year, %2$L::int[])] AS year, sex, municipality,
			(%1$L::float8[])[width_bucket(year, %2$L::int[])] IS DISTINCT FROM year::float8 AS modified FROM r$q$,
			means, cuts)),
		label || ': year -> mean of its range');
END
$$;

SELECT pg_temp.check_seed(0.1, 400);
SELECT pg_temp.check_seed(0.2, 1500);
SELECT pg_temp.check_seed(0.3, 3000);

-- drop_incomplete: rows with a NULL or '' QID value are removed first
SELECT is((SELECT rows_removed FROM qid_generalize('r', ARRAY['year', 'sex', 'municipality'],
			'{"columns": {"sex": {"constant": "*"}}}', true) WHERE name = 'none'),
		  (SELECT count(*) FROM r WHERE year IS NULL OR sex IS NULL OR sex = '' OR municipality IS NULL),
		  'drop_incomplete: the rows removed');
SELECT is(pg_temp.ours('{"local": true, "columns": {"municipality": {"map": "province_of"}}}', true),
		  (WITH c AS (SELECT * FROM r WHERE year IS NOT NULL AND sex <> '' AND municipality IS NOT NULL),
		   u AS (SELECT c.id FROM c JOIN (SELECT year, sex, municipality FROM c GROUP BY 1, 2, 3 HAVING count(*) = 1) k
				 USING (year, sex, municipality)),
		   g AS (SELECT year, sex, CASE WHEN u.id IS NOT NULL THEN coalesce(p."to", c.municipality) ELSE c.municipality END AS municipality,
				 u.id IS NOT NULL AND p."to" <> c.municipality AS modified
				 FROM c LEFT JOIN u USING (id) LEFT JOIN province_of p ON p."from" = c.municipality)
		   SELECT ROW((SELECT count(*) FROM (SELECT 1 FROM g GROUP BY year, sex, municipality HAVING count(*) = 1) x),
					  (SELECT count(*) FROM g WHERE modified),
					  (SELECT count(*) FROM (SELECT 1 FROM g GROUP BY year, sex, municipality) x), (SELECT count(*) FROM g))::text),
		  'drop_incomplete: local recoding over the complete rows');
-- the best: fewest singletons, then fewest rows modified, and 'none' is never it
SELECT is((SELECT array_agg(name ORDER BY o) FROM qid_generalize('r', ARRAY['year', 'sex', 'municipality'], '[
		{"name": "S", "columns": {"sex": {"constant": "*"}}},
		{"name": "S_loc", "local": true, "columns": {"sex": {"constant": "*"}}},
		{"name": "M", "columns": {"municipality": {"map": "province_of"}}},
		{"name": "M_loc", "local": true, "columns": {"municipality": {"map": "province_of"}}},
		{"name": "Y_ran", "columns": {"year": {"range": 50}}}]') WITH ORDINALITY q(name, l, s, sh, m, rr, c, n, b, o)),
		  (SELECT array_agg(name ORDER BY s, m, o) FROM qid_generalize('r', ARRAY['year', 'sex', 'municipality'], '[
		{"name": "S", "columns": {"sex": {"constant": "*"}}},
		{"name": "S_loc", "local": true, "columns": {"sex": {"constant": "*"}}},
		{"name": "M", "columns": {"municipality": {"map": "province_of"}}},
		{"name": "M_loc", "local": true, "columns": {"municipality": {"map": "province_of"}}},
		{"name": "Y_ran", "columns": {"year": {"range": 50}}}]') WITH ORDINALITY q(name, l, s, sh, m, rr, c, n, b, o)
		   WHERE name <> 'none') || ARRAY['none'],
		  'ordered by singletons, then rows modified, the original QID last');
SELECT is((SELECT count(*) FILTER (WHERE is_best) FROM qid_generalize('r', ARRAY['year', 'sex', 'municipality'],
			'[{"columns": {"sex": {"constant": "*"}}}, {"columns": {"year": {"range": 5}}}]')), 1::bigint,
		  'exactly one best');

-- A constructed table: the singletons come in pairs of one (year, sex) in two
-- municipalities of one province; the other rows in classes of three.  Local
-- recoding to provinces removes every singleton and modifies only them.
CREATE TABLE c (id serial, year integer, sex text, municipality text);
INSERT INTO c (year, sex, municipality)
SELECT 1950 + i, 'F', 'm' || (i % 8) FROM generate_series(0, 19) i, generate_series(1, 3);
INSERT INTO c (year, sex, municipality)
SELECT 1990 + i, s, 'm' || (i % 8 + 8 * j) FROM generate_series(0, 9) i, unnest(ARRAY['F', 'M']) s, generate_series(0, 1) j;
SELECT is((SELECT singletons FROM qid_search('c', ARRAY['year', 'sex', 'municipality'], summary => true)),
		  40::bigint, 'the constructed table has 40 singletons');
SELECT is((SELECT ROW(singletons, rows_modified)::text FROM qid_generalize('c', ARRAY['year', 'sex', 'municipality'],
			'{"local": true, "columns": {"municipality": {"map": "province_of"}}}') WHERE name <> 'none'),
		  '(0,40)', 'local recoding: no singleton left, only the 40 singletons modified');
SELECT is(qid_generalize_into('c', ARRAY['year', 'sex', 'municipality'],
			'{"local": true, "columns": {"municipality": {"map": "province_of"}}}', 'c_released'), 100::bigint,
		  'qid_generalize_into writes every row');
SELECT is((SELECT array_agg(id ORDER BY id) FROM (SELECT * FROM c EXCEPT SELECT * FROM c_released) d),
		  (SELECT array_agg(c.id ORDER BY c.id) FROM c JOIN (SELECT year, sex, municipality FROM c GROUP BY 1, 2, 3
			HAVING count(*) = 1) u USING (year, sex, municipality)),
		  'the rows written differently are exactly the singletons');
SELECT is((SELECT singleton_count(year, sex, municipality) FROM c_released), 0::bigint, 'the new table has no singleton');

-- bad input: clear errors, nothing changed
CREATE TEMP TABLE c_before AS SELECT md5(string_agg(c::text, ',' ORDER BY id)) AS sum FROM c;
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year', 'nope'], '{"columns": {"year": {"range": 2}}}')$$,
				 '42703', NULL, 'unknown QID column');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"sex": {"constant": "*"}}}')$$,
				 '22023', NULL, 'a generalized column outside the QID');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"round": 2}}}')$$,
				 '22023', NULL, 'an unknown kind of generalization');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {}}')$$,
				 '22023', NULL, 'no column generalized');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '[]')$$,
				 '22023', NULL, 'an empty list');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 0}}}')$$,
				 '22023', NULL, 'k below 1');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 1000}}}')$$,
				 '22023', NULL, 'k above the rows');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['municipality'], '{"columns": {"municipality": {"map": "no_such_map"}}}')$$,
				 '42P01', NULL, 'a mapping table that does not exist');
INSERT INTO province_of VALUES ('m3', 'p7');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['municipality'], '{"columns": {"municipality": {"map": "province_of"}}}')$$,
				 '22023', NULL, 'a mapping with two targets for one value');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['municipality'], '{"columns": {"municipality": {"map": "province_of", "to": "up"}}}')$$,
				 '42703', NULL, 'a mapping column that does not exist');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', NULL, '{"columns": {"year": {"range": 2}}}')$$,
				 '22004', NULL, 'NULL QID');
SELECT throws_ok($$SELECT qid_generalize_into('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', 'c_released')$$,
				 '42P07', NULL, 'the target table exists');
SELECT throws_ok($$SELECT qid_generalize_into('c', ARRAY['year'], '[{"columns": {"year": {"range": 2}}}]', 'c_other')$$,
				 '22023', NULL, 'the writer takes one generalization');
SELECT is((SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM c), (SELECT sum FROM c_before),
		  'the source table is unchanged');

SELECT * FROM finish();
ROLLBACK;
