-- Bad input to the quasi-identifier search and generalization (qid_search,
-- qid_generalize, qid_generalize_into): every case raises its documented
-- SQLSTATE, a failing qid_generalize_into leaves no table behind, and nothing
-- changes afterwards (the tables' contents, the objects, the settings, the role).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(95 + 8);

CREATE TABLE people (age integer, zip text, sex text, p point, id integer);
INSERT INTO people
SELECT 20 + i % 5, 'z' || i % 3, (ARRAY['f', 'm'])[1 + i % 2], point(i, i), i FROM generate_series(1, 60) i;
CREATE TABLE zipmap ("from" text, "to" text);
INSERT INTO zipmap VALUES ('z0', 'Z'), ('z1', 'Z'), ('z2', 'Y');
CREATE TABLE zipmap_two ("from" text, "to" text);
INSERT INTO zipmap_two VALUES ('z0', 'Z'), ('z0', 'Y');
CREATE TABLE big AS SELECT i AS a, i % 7 AS b FROM generate_series(1, 2000) i;
-- privileges: no SELECT at all; SELECT on some columns only; the table but not the mapping
CREATE ROLE qidrisk_e_nobody;
CREATE ROLE qidrisk_e_cols;
GRANT SELECT (age, sex) ON people TO qidrisk_e_cols;
CREATE ROLE qidrisk_e_nomap;
GRANT SELECT ON people TO qidrisk_e_nomap;
GRANT CREATE ON SCHEMA public TO qidrisk_e_nomap, qidrisk_e_cols;

-- load the library, which defines qidrisk.max_state_memory
DO $$BEGIN PERFORM class_count(x) FROM generate_series(1, 2) x; END$$;

-- What must not change: table contents, objects, settings, the current role
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM people t),
					 (SELECT md5(string_agg(m::text, ',' ORDER BY m::text)) FROM zipmap m),
					 (SELECT md5(string_agg(m::text, ',' ORDER BY m::text)) FROM zipmap_two m),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type),
					 current_setting('qidrisk.max_state_memory'), current_setting('search_path'), current_user)
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(stmt, code, NULL, descr || ' -> ' || code)
FROM (VALUES
	-- qid_search
	($$SELECT * FROM qid_search(NULL)$$, '22004', 'qid_search: NULL table'),
	($$SELECT * FROM qid_search('nope')$$, '42P01', 'qid_search: unknown table'),
	($$SELECT * FROM qid_search('people', ARRAY[]::text[])$$, '22023', 'qid_search: no column'),
	($$SELECT * FROM qid_search('people', ARRAY['age', 'nope'])$$, '42703', 'qid_search: unknown column'),
	($$SELECT * FROM qid_search('people', ARRAY['AGE'])$$, '42703', 'qid_search: column names are case-sensitive'),
	($$SELECT * FROM qid_search('people', ARRAY['ctid'])$$, '42703', 'qid_search: system column'),
	($$SELECT * FROM qid_search('people', ARRAY['age', 'age'])$$, '22023', 'qid_search: duplicate column'),
	($$SELECT * FROM qid_search('people', ARRAY['age', NULL])$$, '22004', 'qid_search: NULL column name'),
	($$SELECT * FROM qid_search('people', ARRAY[['age'], ['zip']])$$, '2202E', 'qid_search: two-dimensional column list'),
	($$SELECT * FROM qid_search('people', ARRAY['age'], 0)$$, '22023', 'qid_search: max_size 0'),
	($$SELECT * FROM qid_search('people', ARRAY['age'], -1)$$, '22023', 'qid_search: negative max_size'),
	($$SELECT * FROM qid_search('people', ARRAY['age'], 1, NULL)$$, '22004', 'qid_search: NULL drop_incomplete'),
	($$SELECT * FROM qid_search('people', ARRAY['age'], summary => NULL)$$, '22004', 'qid_search: NULL summary'),
	($$SELECT * FROM qid_search('people', ARRAY['age', 'p'])$$, '42883', 'qid_search: a column without hash support'),
	($$SELECT * FROM qid_search('people', '{age}', 'x')$$, '22P02', 'qid_search: max_size not a number'),
	($$SELECT * FROM qid_search('people', ARRAY['age'], 2.5)$$, '42883', 'qid_search: fractional max_size (no such function)'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT * FROM qid_search('big')$$, '54000', 'qid_search: past qidrisk.max_state_memory'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM qid_search('people', ARRAY['age'])$$, '42501', 'qid_search: no SELECT on the table'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM qid_search('people', ARRAY['age', 'zip'])$$, '42501', 'qid_search: no SELECT on one column'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM qid_search('people')$$, '42501', 'qid_search: every column, some not readable'),
	-- qid_generalize: arguments
	($$SELECT * FROM qid_generalize(NULL, ARRAY['age'], '{"columns": {"age": {"range": 2}}}')$$, '22004', 'qid_generalize: NULL table'),
	($$SELECT * FROM qid_generalize('people', NULL, '{"columns": {"age": {"range": 2}}}')$$, '22004', 'qid_generalize: NULL qid'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], NULL)$$, '22004', 'qid_generalize: NULL whatifs'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', NULL)$$, '22004', 'qid_generalize: NULL drop_incomplete'),
	($$SELECT * FROM qid_generalize('nope', ARRAY['age'], '{"columns": {"age": {"range": 2}}}')$$, '42P01', 'qid_generalize: unknown table'),
	($$SELECT * FROM qid_generalize('people', ARRAY[]::text[], '{"columns": {"age": {"range": 2}}}')$$, '22023', 'qid_generalize: no QID column'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age', 'nope'], '{"columns": {"age": {"range": 2}}}')$$, '42703', 'qid_generalize: unknown QID column'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age', NULL], '{"columns": {"age": {"range": 2}}}')$$, '42703', 'qid_generalize: NULL QID column name'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age', 'age'], '{"columns": {"age": {"range": 2}}}')$$, '22023', 'qid_generalize: duplicate QID column'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], 'not json')$$, '22P02', 'qid_generalize: not JSON'),
	-- qid_generalize: the generalization objects
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '[]')$$, '22023', 'qid_generalize: empty list'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '5')$$, '22023', 'qid_generalize: a number'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '"x"')$$, '22023', 'qid_generalize: a string'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{}')$$, '22023', 'qid_generalize: no columns key'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '[5]')$$, '22023', 'qid_generalize: a list holding a number'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {}}')$$, '22023', 'qid_generalize: no column generalized'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": [1]}')$$, '22023', 'qid_generalize: columns not an object'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}, "lokal": true}')$$, '22023', 'qid_generalize: misspelt key'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}, "local": "maybe"}')$$, '22023', 'qid_generalize: local not a boolean'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"zip": {"constant": "*"}}}')$$, '22023', 'qid_generalize: a column outside the QID'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"nope": {"constant": "*"}}}')$$, '22023', 'qid_generalize: an unknown column generalized'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"round": 2}}}')$$, '22023', 'qid_generalize: unknown kind'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {}}}')$$, '22023', 'qid_generalize: no kind'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": 5}}')$$, '22023', 'qid_generalize: kind not an object'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2, "mean": 2}}}')$$, '22023', 'qid_generalize: two kinds'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2, "to": "x"}}}')$$, '22023', 'qid_generalize: a map key on a range'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap", "extra": 1}}}')$$, '22023', 'qid_generalize: unknown key in a map'),
	-- ranges and means
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 0}}}')$$, '22023', 'range: k = 0'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": -1}}}')$$, '22023', 'range: negative k'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2.5}}}')$$, '22023', 'range: fractional k'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 1e400}}}')$$, '22023', 'range: k beyond integer (not 22003)'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2147483648}}}')$$, '22023', 'range: k = 2^31'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": "2"}}}')$$, '22023', 'range: k a string'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": null}}}')$$, '22023', 'range: k null'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 1000}}}')$$, '22023', 'range: k above the rows'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"mean": 0}}}')$$, '22023', 'mean: k = 0'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"mean": 2}}}')$$, '42804', 'mean of a text column'),
	($$SELECT * FROM qid_generalize('people', ARRAY['p', 'age'], '{"columns": {"p": {"range": 2}}}')$$, '42883', 'range of an unordered type'),
	-- constants
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"constant": null}}}')$$, '22023', 'constant: null'),
	($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"constant": [1]}}}')$$, '22023', 'constant: an array'),
	-- mappings
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "nope"}}}')$$, '42P01', 'map: unknown table'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": null}}}')$$, '42P01', 'map: null'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": 0}}}')$$, '42P01', 'map: OID 0'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "a;b"}}}')$$, '22023', 'map: not an identifier'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap_two"}}}')$$, '22023', 'map: a value with two images'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap", "to": "up"}}}')$$, '42703', 'map: unknown to column'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap", "from": "nope"}}}')$$, '42703', 'map: unknown from column'),
	($$SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "people", "from": "zip", "to": "p"}}}')$$, '42883', 'map: images without equality'),
	-- privileges
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}')$$, '42501', 'qid_generalize: no SELECT on the table'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM qid_generalize('people', ARRAY['age', 'zip'], '{"columns": {"age": {"range": 2}}}')$$, '42501', 'qid_generalize: no SELECT on a QID column'),
	($$SET LOCAL ROLE qidrisk_e_nomap; SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap"}}}')$$, '42501', 'qid_generalize: no SELECT on the mapping table'),
	-- qid_generalize_into
	($$SELECT qid_generalize_into(NULL, ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'out1')$$, '22004', 'into: NULL table'),
	($$SELECT qid_generalize_into('people', NULL, '{"columns": {"age": {"range": 2}}}', 'out1')$$, '22004', 'into: NULL qid'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], NULL, 'out1')$$, '22004', 'into: NULL whatif'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', NULL)$$, '22004', 'into: NULL release'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'out1', NULL)$$, '22004', 'into: NULL drop_incomplete'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', '')$$, '22023', 'into: empty release name'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'bad"name')$$, '22023', 'into: release not an identifier'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'a.b.c.d')$$, '42601', 'into: too many dotted names'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'nope.out1')$$, '3F000', 'into: unknown schema'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'people')$$, '42P07', 'into: release exists'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'zipmap')$$, '42P07', 'into: release is another existing table'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '[{"columns": {"age": {"range": 2}}}]', 'out1')$$, '22023', 'into: a list'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 0}}}', 'out1')$$, '22023', 'into: k = 0'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 1000}}}', 'out1')$$, '22023', 'into: k above the rows'),
	($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}, "colour": 1}', 'out1')$$, '22023', 'into: unknown key'),
	($$SELECT qid_generalize_into('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap_two"}}}', 'out1')$$, '22023', 'into: a value with two images'),
	($$SELECT qid_generalize_into('people', ARRAY['zip'], '{"columns": {"zip": {"mean": 2}}}', 'out1')$$, '42804', 'into: mean of text'),
	($$SELECT qid_generalize_into('people', ARRAY['age', 'nope'], '{"columns": {"age": {"range": 2}}}', 'out1')$$, '42703', 'into: unknown QID column'),
	($$SELECT qid_generalize_into('people', ARRAY['age', 'age'], '{"columns": {"age": {"range": 2}}}', 'out1')$$, '22023', 'into: duplicate QID column'),
	($$SELECT qid_generalize_into('nope', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'out1')$$, '42P01', 'into: unknown table'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'out1')$$, '42501', 'into: no SELECT on the table'),
	($$SET LOCAL ROLE qidrisk_e_nomap; SELECT qid_generalize_into('people', ARRAY['zip'], '{"columns": {"zip": {"map": "zipmap"}}}', 'out1')$$, '42501', 'into: no SELECT on the mapping table'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}}', 'out1')$$, '42501', 'into: the other columns are copied, and one is not readable'),
	-- the internal helpers behind them
	($$SELECT qidrisk_internal.qidrisk_generalization_query('people', ARRAY['age'], '{"columns": {"age": {"range": 0}}}', false, false, 'x')$$, '22023', 'internal query builder: k = 0')
) AS c(stmt, code, descr);

SELECT is(pg_temp.snapshot(), s, 'nothing changed: tables, objects, settings and role') FROM before;
SELECT ok(to_regclass('public.out1') IS NULL, 'no failing qid_generalize_into left a table behind');
-- a failure after the target's name was resolved, in another schema, leaves nothing either
CREATE SCHEMA release_e;
SELECT throws_ok($$SELECT qid_generalize_into('people', ARRAY['age'], '{"columns": {"age": {"mean": 1000}}}', 'release_e.out2')$$,
				 '22023', NULL, 'into another schema: k above the rows -> 22023');
SELECT is((SELECT count(*) FROM pg_class WHERE relnamespace = 'release_e'::regnamespace), 0::bigint,
		  'the failing call left nothing in the target schema');
-- the messages name what is wrong
SELECT throws_ok($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 1e400}}}')$$, '22023',
				 'qid_generalize: k of column "age" must be a whole number from 1 to 2147483647', 'an out-of-range k is named as such');
SELECT throws_ok($$SELECT * FROM qid_generalize('people', ARRAY['age'], '{"columns": {"age": {"range": 2}}, "lokal": true}')$$, '22023',
				 'qid_generalize: unknown key "lokal" in a generalization', 'a misspelt key is named');
SELECT is((SELECT singletons FROM qid_generalize('people', ARRAY['age', 'zip'], '{"name": "g", "columns": {"zip": {"map": "zipmap"}}}') WHERE name = 'g'),
		  0::bigint, 'qid_generalize still works after the errors');
SELECT is((SELECT rows_released FROM qid_generalize_into('people', ARRAY['zip'],
				'{"columns": {"zip": {"map": "zipmap", "from": "from", "to": "to"}}}', 'out1')),
		  60::bigint, 'qid_generalize_into still works after the errors (from/to on a map are fine)');

DROP TABLE out1;
REVOKE CREATE ON SCHEMA public FROM qidrisk_e_nomap, qidrisk_e_cols;
DROP OWNED BY qidrisk_e_nobody, qidrisk_e_cols, qidrisk_e_nomap;
DROP ROLE qidrisk_e_nobody, qidrisk_e_cols, qidrisk_e_nomap;

SELECT * FROM finish();
ROLLBACK;
