-- Property tests of the generalization what-ifs (qid_generalize) and the
-- writer (qid_generalize_into): every figure (singletons, rows modified,
-- values changed, classes, k reached, rows below k; the release's rows and k)
-- against plain SQL (GROUP BY ... HAVING count(*) = 1, local singletons found
-- by a join on that GROUP BY), on random tables of three seeds with NULLs
-- and ties; the ranking by the caller's target and cost against the same rule
-- in SQL, and on a table where the best is not the what-if with fewest
-- singletons; a range holding one value modifies nothing; a constructed table
-- where local recoding removes every singleton while modifying only them; bad
-- input.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(3 * 8 + 2 + 2 + 3 * 2 + 10 + 5 + 14 + 7);

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

-- Plain-SQL figures of a generalized copy g(year, sex, municipality, modified,
-- changed): singletons, rows modified, classes, rows, smallest class, rows in
-- classes below 3, values changed
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
				   (SELECT count(*) FROM g),
				   (SELECT min(n) FROM (SELECT count(*) n FROM g GROUP BY year, sex, municipality) x),
				   (SELECT coalesce(sum(n), 0) FROM (SELECT count(*) n FROM g GROUP BY year, sex, municipality HAVING count(*) < 3) x),
				   (SELECT coalesce(sum(changed), 0) FROM g))::text$q$, query) INTO result;
	RETURN result;
END
$$;

-- qid_generalize's figures for one what-if on the current table r (target k = 3)
CREATE FUNCTION pg_temp.ours(whatif jsonb, drop_incomplete boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	SELECT ROW(q.singletons, q.rows_modified, q.classes, q.rows, q.k_anonymity, q.rows_below_k,
			   q.values_changed)::text INTO result
	FROM qid_generalize('r'::text::regclass, ARRAY['year', 'sex', 'municipality'], whatif, drop_incomplete, k => 3) q
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
			s.id IS NOT NULL AND r.sex IS DISTINCT FROM '*' AS modified,
			(s.id IS NOT NULL AND r.sex IS DISTINCT FROM '*')::int AS changed FROM r LEFT JOIN singles s USING (id)$q$),
		label || ': sex -> * on the singletons');
	RETURN NEXT is(pg_temp.ours('{"columns": {"sex": {"constant": "*"}}}'),
		pg_temp.figures($q$SELECT year, '*' AS sex, municipality, r.sex IS DISTINCT FROM '*' AS modified,
			(r.sex IS DISTINCT FROM '*')::int AS changed FROM r$q$),
		label || ': sex -> * everywhere');
	RETURN NEXT is(pg_temp.ours('{"columns": {"municipality": {"map": "province_of"}}}'),
		pg_temp.figures($q$SELECT year, sex, coalesce(p."to", r.municipality) AS municipality,
			p."to" IS NOT NULL AND p."to" <> r.municipality AS modified,
			(p."to" IS NOT NULL AND p."to" <> r.municipality)::int AS changed
			FROM r LEFT JOIN province_of p ON p."from" = r.municipality$q$),
		label || ': municipality -> province everywhere');
	RETURN NEXT is(pg_temp.ours('{"local": true, "columns": {"municipality": {"map": "province_of"}}}'),
		pg_temp.figures($q$SELECT year, sex, CASE WHEN s.id IS NOT NULL THEN coalesce(p."to", r.municipality) ELSE r.municipality END AS municipality,
			s.id IS NOT NULL AND p."to" IS NOT NULL AND p."to" <> r.municipality AS modified,
			(s.id IS NOT NULL AND p."to" IS NOT NULL AND p."to" <> r.municipality)::int AS changed
			FROM r LEFT JOIN singles s USING (id) LEFT JOIN province_of p ON p."from" = r.municipality$q$),
		label || ': municipality -> province on the singletons');
	RETURN NEXT is(pg_temp.ours('{"local": true, "columns": {"sex": {"constant": "*"}, "municipality": {"map": "province_of"}}}'),
		pg_temp.figures($q$SELECT year, CASE WHEN s.id IS NOT NULL THEN '*' ELSE r.sex END AS sex,
			CASE WHEN s.id IS NOT NULL THEN coalesce(p."to", r.municipality) ELSE r.municipality END AS municipality,
			s.id IS NOT NULL AND (r.sex IS DISTINCT FROM '*' OR (p."to" IS NOT NULL AND p."to" <> r.municipality)) AS modified,
			(s.id IS NOT NULL AND r.sex IS DISTINCT FROM '*')::int
			+ (s.id IS NOT NULL AND p."to" IS NOT NULL AND p."to" <> r.municipality)::int AS changed
			FROM r LEFT JOIN singles s USING (id) LEFT JOIN province_of p ON p."from" = r.municipality$q$),
		label || ': both on the singletons');

	-- ranges of at least 30 rows: cuts from quantile_cuts, buckets by width_bucket;
	-- a range of one year keeps it and modifies nothing
	SELECT quantile_cuts(year, 30) INTO cuts FROM r;
	RETURN NEXT is(pg_temp.ours('{"columns": {"year": {"range": 30}}}'),
		pg_temp.figures(format($q$SELECT CASE WHEN year IS NULL THEN NULL WHEN one.b IS NOT NULL THEN year::text
			ELSE 'bucket ' || width_bucket(year, %1$L::int[]) END AS year,
			sex, municipality, year IS NOT NULL AND one.b IS NULL AS modified,
			(year IS NOT NULL AND one.b IS NULL)::int AS changed
			FROM r LEFT JOIN (SELECT width_bucket(year, %1$L::int[]) b FROM r WHERE year IS NOT NULL GROUP BY 1
							  HAVING min(year) = max(year)) one ON one.b = width_bucket(r.year, %1$L::int[])$q$, cuts)),
		label || ': year -> ranges of at least 30 rows');
	RETURN NEXT ok((SELECT min(n) >= 30 FROM (SELECT count(*) n FROM r WHERE year IS NOT NULL
		GROUP BY width_bucket(year, cuts)) b), label || ': every range holds at least 30 rows');
	-- the mean of each range: a year equal to its range's mean is not modified
	SELECT array_agg(m ORDER BY b) INTO means
	FROM (SELECT width_bucket(year, cuts) b, avg(year)::float8 m FROM r WHERE year IS NOT NULL GROUP BY 1) x;
	RETURN NEXT is(pg_temp.ours('{"columns": {"year": {"mean": 30}}}'),
		pg_temp.figures(format($q$SELECT (%1$L::float8[])[width_bucket(year, %2$L::int[])] AS year, sex, municipality,
			(%1$L::float8[])[width_bucket(year, %2$L::int[])] IS DISTINCT FROM year::float8 AS modified,
			((%1$L::float8[])[width_bucket(year, %2$L::int[])] IS DISTINCT FROM year::float8)::int AS changed FROM r$q$,
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
					  (SELECT count(*) FROM (SELECT 1 FROM g GROUP BY year, sex, municipality) x), (SELECT count(*) FROM g),
					  (SELECT min(n) FROM (SELECT count(*) n FROM g GROUP BY year, sex, municipality) x),
					  (SELECT coalesce(sum(n), 0) FROM (SELECT count(*) n FROM g GROUP BY year, sex, municipality HAVING count(*) < 3) x),
					  (SELECT count(*) FROM g WHERE modified))::text),
		  'drop_incomplete: local recoding over the complete rows');
-- qid_generalize_into reports the release it wrote: its rows, those modified,
-- those removed as incomplete, as qid_generalize measures the what-if, and
-- its k, measured on the written table
CREATE TEMP TABLE r_into AS SELECT * FROM qid_generalize_into('r', ARRAY['year', 'sex', 'municipality'],
	'{"local": true, "columns": {"municipality": {"map": "province_of"}}}', 'r_released', true);
SELECT is((SELECT ROW(rows_released, rows_modified, rows_removed, k_anonymity)::text FROM r_into),
		  (SELECT ROW(q.rows, q.rows_modified, q.rows_removed, q.k_anonymity)::text
		   FROM qid_generalize('r', ARRAY['year', 'sex', 'municipality'],
				'{"local": true, "columns": {"municipality": {"map": "province_of"}}}', true) q WHERE q.name <> 'none'),
		  'qid_generalize_into: rows released, modified and removed and k as qid_generalize measures them');
SELECT is((SELECT ROW(rows_released, k_anonymity)::text FROM r_into),
		  (SELECT ROW(sum(n), min(n))::text FROM (SELECT count(*) n FROM r_released GROUP BY year, sex, municipality) x),
		  'qid_generalize_into: the rows and the smallest class of the written table');
-- The ranking: what-ifs that meet the target (at most floor(max_suppressed *
-- rows) rows in classes below k) first, by cost, then rows below k, then the
-- list's order; the others after them, by rows below k, cost, order; 'none'
-- last and never best; the best is the first row if it meets the target
CREATE FUNCTION pg_temp.check_ranking(k integer, max_suppressed float8, cost text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	list jsonb := '[
		{"name": "S", "columns": {"sex": {"constant": "*"}}},
		{"name": "S_loc", "local": true, "columns": {"sex": {"constant": "*"}}},
		{"name": "M", "columns": {"municipality": {"map": "province_of"}}},
		{"name": "M_loc", "local": true, "columns": {"municipality": {"map": "province_of"}}},
		{"name": "Y_ran", "columns": {"year": {"range": 50}}},
		{"name": "Y_loc", "local": true, "columns": {"year": {"range": 50}}},
		{"name": "SM_loc", "local": true, "columns": {"sex": {"constant": "*"}, "municipality": {"map": "province_of"}}},
		{"name": "SY", "columns": {"sex": {"constant": "*"}, "year": {"range": 200}}}]';
	label text := format('k = %s, max_suppressed = %s, cost %s', k, max_suppressed, cost);
BEGIN
	CREATE TEMP TABLE q ON COMMIT DROP AS
	SELECT g.* FROM qid_generalize('r', ARRAY['year', 'sex', 'municipality'], list, false, k, max_suppressed, cost)
		WITH ORDINALITY g(name, local, singletons, singleton_share, rows_modified, rows_removed, classes, rows,
						  best, k_anonymity, rows_below_k, values_changed, meets_target, o);
	RETURN NEXT is((SELECT array_agg(name ORDER BY o) FROM q),
		(SELECT array_agg(name ORDER BY name = 'none', NOT m, CASE WHEN m THEN c END, rows_below_k, c,
						  array_position(ARRAY['S', 'S_loc', 'M', 'M_loc', 'Y_ran', 'Y_loc', 'SM_loc', 'SY'], name))
		 FROM (SELECT q.*, rows_below_k <= floor(max_suppressed * rows) AS m,
					  CASE cost WHEN 'rows_modified' THEN rows_modified ELSE values_changed END AS c FROM q) x),
		label || ': the order');
	RETURN NEXT is((SELECT array_agg(ROW(name, meets_target, best)::text ORDER BY o) FROM q),
		(SELECT array_agg(ROW(name, rows_below_k <= floor(max_suppressed * rows),
							  o = 1 AND name <> 'none' AND rows_below_k <= floor(max_suppressed * rows))::text ORDER BY o) FROM q),
		label || ': meets_target and best');
	DROP TABLE q;
END
$$;
SELECT pg_temp.check_ranking(2, 0, 'rows_modified');
SELECT pg_temp.check_ranking(5, 0.1, 'values_changed');
SELECT pg_temp.check_ranking(3, 0.03, 'rows_modified');

-- A table where the best is not the what-if with fewest singletons: eight rows
-- in classes of two, two singletons (5, y) and (6, y)
CREATE TABLE t (a integer, b text);
INSERT INTO t SELECT i, 'x' FROM generate_series(1, 4) i, generate_series(1, 2);
INSERT INTO t VALUES (5, 'y'), (6, 'y');
CREATE FUNCTION pg_temp.ranked(k integer, max_suppressed float8, cost text) RETURNS text
LANGUAGE sql AS $$
	SELECT string_agg(format('%s:%s/%s/%s/%s%s', name, rows_below_k, rows_modified, values_changed,
							 CASE WHEN meets_target THEN 'meets' ELSE 'misses' END,
							 CASE WHEN best THEN '/best' ELSE '' END), ' ' ORDER BY o)
	FROM qid_generalize('t', ARRAY['a', 'b'], '[
		{"name": "A", "columns": {"a": {"constant": "*"}}},
		{"name": "B", "columns": {"b": {"constant": "*"}}},
		{"name": "B_loc", "local": true, "columns": {"b": {"constant": "*"}}},
		{"name": "AB_loc", "local": true, "columns": {"a": {"constant": "*"}, "b": {"constant": "*"}}}]',
		false, k, max_suppressed, cost) WITH ORDINALITY g(name, l, s, sh, rows_modified, rr, c, n, best, ka,
														  rows_below_k, values_changed, meets_target, o)
$$;
SELECT is(pg_temp.ranked(2, 0.2, 'values_changed'),
		  'B_loc:2/2/2/meets/best AB_loc:0/2/4/meets A:0/10/10/meets B:2/10/10/meets none:2/0/0/meets',
		  'two rows may stay below k: the cheapest in values changed is best, though it keeps both singletons');
SELECT is(pg_temp.ranked(2, 0.2, 'rows_modified'),
		  'AB_loc:0/2/4/meets/best B_loc:2/2/2/meets A:0/10/10/meets B:2/10/10/meets none:2/0/0/meets',
		  'in rows modified AB_loc and B_loc tie: fewer rows below k first');
SELECT is(pg_temp.ranked(2, 0, 'rows_modified'),
		  'AB_loc:0/2/4/meets/best A:0/10/10/meets B_loc:2/2/2/misses B:2/10/10/misses none:2/0/0/misses',
		  'the defaults (k = 2, no suppression): the cheapest what-if without singletons');
SELECT is(pg_temp.ranked(3, 0, 'rows_modified'),
		  'A:2/10/10/misses B_loc:10/2/2/misses AB_loc:10/2/4/misses B:10/10/10/misses none:10/0/0/misses',
		  'no what-if meets k = 3: none is best, the nearest first (ties: the list''s order)');
SELECT is((SELECT ROW(k_anonymity, rows_below_k)::text FROM qid_generalize('t', ARRAY['a', 'b'],
			'{"name": "A", "columns": {"a": {"constant": "*"}}}', k => 3) WHERE name = 'A'),
		  '(2,2)', 'k reached and rows below k');
SELECT is((SELECT ROW(k_anonymity, rows_below_k, meets_target, best)::text FROM qid_generalize('t', ARRAY['a', 'b'],
			'{"name": "A", "columns": {"a": {"constant": "*"}}}', k => 1) WHERE name = 'none'),
		  '(1,0,t,f)', 'the table as it is meets k = 1 but is never best');

-- A range holding one value keeps it: 2000 five times, 2001 to 2005 once each
CREATE TABLE y (year integer);
INSERT INTO y SELECT 2000 FROM generate_series(1, 5);
INSERT INTO y SELECT generate_series(2001, 2005);
SELECT is((SELECT ROW(rows_modified, values_changed, classes)::text FROM qid_generalize('y', ARRAY['year'],
			'{"columns": {"year": {"range": 5}}}') WHERE name <> 'none'),
		  '(5,5,2)', 'a range of one value modifies no row');
SELECT is((SELECT ROW(rows_released, rows_modified, rows_removed, k_anonymity)::text
		   FROM qid_generalize_into('y', ARRAY['year'], '{"columns": {"year": {"range": 5}}}', 'y_released')),
		  '(10,5,0,5)', 'qid_generalize_into writes the ranges');
SELECT is((SELECT array_agg(DISTINCT year ORDER BY year) FROM y_released), ARRAY['2000', '[2001,)'],
		  'the range of one value is written as that value');
SELECT is((SELECT ROW(rows_modified, values_changed)::text FROM qid_generalize('y', ARRAY['year'],
			'{"columns": {"year": {"mean": 5}}}') WHERE name <> 'none'),
		  '(4,4)', 'a mean equal to the value modifies nothing (2003 is the mean of 2001 to 2005)');

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
SELECT is((SELECT ROW(rows_released, rows_modified, rows_removed, k_anonymity)::text
		   FROM qid_generalize_into('c', ARRAY['year', 'sex', 'municipality'],
				'{"local": true, "columns": {"municipality": {"map": "province_of"}}}', 'c_released')),
		  '(100,40,0,2)', 'qid_generalize_into writes every row, the 40 singletons recoded, k = 2');
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
				 '22023', NULL, 'the writer takes one what-if');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', k => NULL)$$,
				 '22004', NULL, 'NULL k');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', k => 0)$$,
				 '22023', NULL, 'k below 1');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', max_suppressed => 'NaN')$$,
				 '22023', NULL, 'max_suppressed NaN');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', max_suppressed => -0.1)$$,
				 '22023', NULL, 'max_suppressed below 0');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', max_suppressed => 1.5)$$,
				 '22023', NULL, 'max_suppressed above 1');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', cost => 'cells')$$,
				 '22023', NULL, 'an unknown cost');
SELECT throws_ok($$SELECT * FROM qid_generalize('c', ARRAY['year'], '{"columns": {"year": {"range": 2}}}', cost => NULL)$$,
				 '22004', NULL, 'NULL cost');
SELECT is((SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM c), (SELECT sum FROM c_before),
		  'the source table is unchanged');

SELECT * FROM finish();
ROLLBACK;
