-- Bad input to k-map and weighted-sample risk (kmap_count, kmap_value,
-- kmap_rows_below, kmap_row_counts, individual_risk, weighted_risk,
-- weighted_risk_summary): every case raises its documented SQLSTATE, an empty
-- table does not hide a bad argument, and nothing changes afterwards.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(104 + 7);

CREATE COLLATION pg_temp.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE rel (id serial, age integer, zip text, sex text, p point, d date);
INSERT INTO rel (age, zip, sex, p, d)
SELECT 20 + i % 5, 'z' || i % 3, (ARRAY['f', 'm'])[1 + i % 2], point(i, i), date '2000-01-01' + i
FROM generate_series(1, 60) i;
CREATE TABLE pop (age integer, zip text, sex text, w float8, wt text, agetext text, age8 bigint, zipci text COLLATE pg_temp.ci);
INSERT INTO pop SELECT 20 + i % 5, 'z' || i % 3, (ARRAY['f', 'm'])[1 + i % 2], 2.0, 'x', (20 + i % 5)::text, 20 + i % 5, 'z' || i % 3
FROM generate_series(1, 200) i;
CREATE TABLE nullw (age integer, w integer);
INSERT INTO nullw VALUES (20, 1), (21, NULL);
CREATE TABLE negw (age integer, w numeric);
INSERT INTO negw VALUES (20, 1), (99, -2);
CREATE TABLE nanw (age integer, w float8);
INSERT INTO nanw VALUES (20, 'NaN');
CREATE TABLE infw (age integer, w float8);
INSERT INTO infw VALUES (20, 'Infinity');
CREATE TABLE empty_sample (age integer, w float8);
CREATE TABLE big AS SELECT i FROM generate_series(1, 20000) i;
CREATE VIEW rel_view AS SELECT age, zip FROM rel;
CREATE ROLE qidrisk_e_nobody;
CREATE ROLE qidrisk_e_nopop;
GRANT SELECT ON rel TO qidrisk_e_nopop;
CREATE ROLE qidrisk_e_cols;
GRANT SELECT (age) ON rel TO qidrisk_e_cols;
GRANT SELECT ON pop TO qidrisk_e_cols;

-- load the library, which defines qidrisk.max_state_memory
DO $$BEGIN PERFORM class_count(x) FROM generate_series(1, 2) x; END$$;

-- What must not change: table contents, objects, settings, the current role
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM rel t),
					 (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM pop t),
					 (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM negw t),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type),
					 current_setting('qidrisk.max_state_memory'), current_setting('search_path'), current_user)
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(stmt, code, NULL, descr || ' -> ' || code)
FROM (VALUES
	-- kmap_count: tables and columns
	($$SELECT * FROM kmap_count(NULL, 'pop', ARRAY['age'])$$, '22004', 'kmap_count: NULL release'),
	($$SELECT * FROM kmap_count('rel', NULL, ARRAY['age'])$$, '22004', 'kmap_count: NULL population'),
	($$SELECT * FROM kmap_count('rel', 'pop', NULL)$$, '22004', 'kmap_count: NULL qid'),
	($$SELECT * FROM kmap_count('nope', 'pop', ARRAY['age'])$$, '42P01', 'kmap_count: unknown release'),
	($$SELECT * FROM kmap_count('rel', 'nope', ARRAY['age'])$$, '42P01', 'kmap_count: unknown population'),
	($$SELECT * FROM kmap_count('rel', 'rel_id_seq', ARRAY['age'])$$, '42809', 'kmap_count: a sequence as population'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY[]::text[])$$, '22023', 'kmap_count: empty qid'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age', NULL])$$, '22004', 'kmap_count: NULL in qid'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age', 'age'])$$, '42701', 'kmap_count: duplicate qid column'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['nope'])$$, '42703', 'kmap_count: unknown release column'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['AGE'])$$, '42703', 'kmap_count: column names are case-sensitive'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['ctid'])$$, '42703', 'kmap_count: system column'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['id'])$$, '42703', 'kmap_count: a release column missing from the population'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY[['age'], ['zip']])$$, '2202E', 'kmap_count: two-dimensional qid'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY['nope'])$$, '42703', 'kmap_count: unknown population column'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY[NULL]::text[])$$, '22004', 'kmap_count: NULL in population_qid'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY[]::text[])$$, '22023', 'kmap_count: empty population_qid'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age', 'zip'], NULL, ARRAY['age'])$$, '2202E', 'kmap_count: population_qid of another length'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age', 'zip'], NULL, ARRAY['age', 'age'])$$, '42701', 'kmap_count: duplicate population_qid column'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY['agetext'])$$, '42804', 'kmap_count: integer against text'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY['age8'])$$, '42804', 'kmap_count: integer against bigint'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['zip'], NULL, ARRAY['zipci'])$$, '42P21', 'kmap_count: collations that compare differently'),
	($$SELECT * FROM kmap_count('rel', 'rel', ARRAY['p'])$$, '42883', 'kmap_count: a type without hashing'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY['age'], 5)$$, '42883', 'kmap_count: too many arguments'),
	-- kmap_count: weights
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], 'nope')$$, '42703', 'kmap_count: unknown weight column'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], '')$$, '42703', 'kmap_count: empty weight name'),
	($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], 'wt')$$, '42804', 'kmap_count: text weight'),
	($$SELECT * FROM kmap_count('rel', 'nullw', ARRAY['age'], 'w')$$, '22004', 'kmap_count: NULL weight'),
	($$SELECT * FROM kmap_count('rel', 'negw', ARRAY['age'], 'w')$$, '22023', 'kmap_count: negative weight on a row matching no class'),
	($$SELECT * FROM kmap_count('rel', 'nanw', ARRAY['age'], 'w')$$, '22023', 'kmap_count: NaN weight'),
	($$SELECT * FROM kmap_count('rel', 'infw', ARRAY['age'], 'w')$$, '22023', 'kmap_count: infinite weight'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT * FROM kmap_count('big', 'big', ARRAY['i'])$$, '54000', 'kmap_count: classes past qidrisk.max_state_memory'),
	-- kmap_count: privileges
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'])$$, '42501', 'kmap_count: no SELECT on the release'),
	($$SET LOCAL ROLE qidrisk_e_nopop; SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'])$$, '42501', 'kmap_count: no SELECT on the population'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM kmap_count('rel', 'pop', ARRAY['age', 'zip'])$$, '42501', 'kmap_count: no SELECT on a release column'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM kmap_count('rel_view', 'pop', ARRAY['age'])$$, '42501', 'kmap_count: no SELECT on a view'),
	-- kmap_value
	($$SELECT kmap_value(NULL, 'pop', ARRAY['age'])$$, '22004', 'kmap_value: NULL release'),
	($$SELECT kmap_value('rel', 'pop', ARRAY[]::text[])$$, '22023', 'kmap_value: empty qid'),
	($$SELECT kmap_value('rel', 'pop', ARRAY['nope'])$$, '42703', 'kmap_value: unknown column'),
	($$SELECT kmap_value('rel', 'pop', ARRAY['age'], 'wt')$$, '42804', 'kmap_value: text weight'),
	($$SELECT kmap_value('rel', 'nanw', ARRAY['age'], 'w')$$, '22023', 'kmap_value: NaN weight'),
	($$SET LOCAL ROLE qidrisk_e_nopop; SELECT kmap_value('rel', 'pop', ARRAY['age'])$$, '42501', 'kmap_value: no SELECT on the population'),
	-- kmap_rows_below
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], NULL)$$, '22004', 'kmap_rows_below: NULL k'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], 0)$$, '22023', 'kmap_rows_below: k = 0'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], -1)$$, '22023', 'kmap_rows_below: negative k'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], 'NaN')$$, '22P02', 'kmap_rows_below: k NaN, not an integer'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], 2.5)$$, '42883', 'kmap_rows_below: fractional k (no such function)'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], -2147483648)$$, '22023', 'kmap_rows_below: the least integer k'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], 'x')$$, '22P02', 'kmap_rows_below: k not a number'),
	($$SELECT kmap_rows_below(NULL, 'pop', ARRAY['age'], 2)$$, '22004', 'kmap_rows_below: NULL release'),
	($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age', 'age'], 2)$$, '42701', 'kmap_rows_below: duplicate column'),
	($$SELECT kmap_rows_below('rel', 'empty_sample', ARRAY['age'], 0)$$, '22023', 'kmap_rows_below: k = 0 against an empty population'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], 2)$$, '42501', 'kmap_rows_below: no SELECT'),
	-- kmap_row_counts
	($$SELECT * FROM kmap_row_counts(NULL, 'pop', ARRAY['age'])$$, '22004', 'kmap_row_counts: NULL release'),
	($$SELECT * FROM kmap_row_counts('rel', NULL, ARRAY['age'])$$, '22004', 'kmap_row_counts: NULL population'),
	($$SELECT * FROM kmap_row_counts('rel', 'pop', ARRAY['age', 'age'])$$, '42701', 'kmap_row_counts: duplicate column'),
	($$SELECT * FROM kmap_row_counts('rel', 'pop', ARRAY['age', NULL])$$, '22004', 'kmap_row_counts: NULL in qid'),
	($$SELECT * FROM kmap_row_counts('rel', 'pop', ARRAY['age'], 'nope')$$, '42703', 'kmap_row_counts: unknown weight column'),
	($$SELECT * FROM kmap_row_counts('rel', 'nullw', ARRAY['age'], 'w')$$, '22004', 'kmap_row_counts: NULL weight'),
	($$SELECT * FROM kmap_row_counts('rel', 'pop', ARRAY['age'], NULL, ARRAY['agetext'])$$, '42804', 'kmap_row_counts: another type'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM kmap_row_counts('rel', 'pop', ARRAY['age'])$$, '42501', 'kmap_row_counts: every release column is read, one is not readable'),
	-- individual_risk
	('SELECT individual_risk(NULL, 5)', '22004', 'individual_risk: NULL f'),
	('SELECT individual_risk(1, NULL)', '22004', 'individual_risk: NULL F'),
	('SELECT individual_risk(1, 5, NULL)', '22004', 'individual_risk: NULL method'),
	('SELECT individual_risk(0, 5)', '22023', 'individual_risk: f = 0'),
	('SELECT individual_risk(-1, 5)', '22023', 'individual_risk: negative f'),
	('SELECT individual_risk(1, -5)', '22023', 'individual_risk: negative F'),
	($$SELECT individual_risk(1, 'NaN')$$, '22023', 'individual_risk: F NaN'),
	($$SELECT individual_risk(1, 'Infinity')$$, '22023', 'individual_risk: F Infinity'),
	($$SELECT individual_risk(1, '-Infinity')$$, '22023', 'individual_risk: F -Infinity'),
	($$SELECT individual_risk(1, 5, 'mu')$$, '22023', 'individual_risk: unknown method'),
	($$SELECT individual_risk(1, 5, 'APPROX')$$, '22023', 'individual_risk: methods are lower case'),
	($$SELECT individual_risk(1, 5, '')$$, '22023', 'individual_risk: empty method'),
	($$SELECT individual_risk(1.5, 5)$$, '42883', 'individual_risk: fractional f (no such function)'),
	($$SELECT individual_risk(1, 5, 'exact', 1)$$, '42883', 'individual_risk: too many arguments'),
	-- weighted_risk
	($$SELECT * FROM weighted_risk(NULL, ARRAY['age'], 'w')$$, '22004', 'weighted_risk: NULL table'),
	($$SELECT * FROM weighted_risk('pop', NULL, 'w')$$, '22004', 'weighted_risk: NULL qid'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['age'], 'w', NULL)$$, '22004', 'weighted_risk: NULL method'),
	($$SELECT * FROM weighted_risk('nope', ARRAY['age'], 'w')$$, '42P01', 'weighted_risk: unknown table'),
	($$SELECT * FROM weighted_risk('pop', ARRAY[]::text[], 'w')$$, '22023', 'weighted_risk: empty qid'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['age', 'age'], 'w')$$, '42701', 'weighted_risk: duplicate column'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['age', NULL], 'w')$$, '22004', 'weighted_risk: NULL column name'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['nope'], 'w')$$, '42703', 'weighted_risk: unknown column'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['age'], 'nope')$$, '42703', 'weighted_risk: unknown weight column'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['age'], 'wt')$$, '42804', 'weighted_risk: text weight'),
	($$SELECT * FROM weighted_risk('rel', ARRAY['age'], 'd')$$, '42804', 'weighted_risk: date weight'),
	($$SELECT * FROM weighted_risk('negw', ARRAY['age'], 'w')$$, '22023', 'weighted_risk: negative weight'),
	($$SELECT * FROM weighted_risk('nanw', ARRAY['age'], 'w')$$, '22023', 'weighted_risk: NaN weight'),
	($$SELECT * FROM weighted_risk('nullw', ARRAY['age'], 'w')$$, '22004', 'weighted_risk: NULL weight'),
	($$SELECT * FROM weighted_risk('pop', ARRAY['age'], 'w', 'mu')$$, '22023', 'weighted_risk: unknown method'),
	($$SELECT * FROM weighted_risk('empty_sample', ARRAY['age'], 'w', 'mu')$$, '22023', 'weighted_risk: unknown method on an empty table'),
	($$SELECT * FROM weighted_risk('empty_sample', ARRAY['age'], 'w', NULL)$$, '22004', 'weighted_risk: NULL method on an empty table'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM weighted_risk('pop', ARRAY['age'], 'w')$$, '42501', 'weighted_risk: no SELECT'),
	-- weighted_risk_summary
	($$SELECT * FROM weighted_risk_summary(NULL, ARRAY['age'], 'w')$$, '22004', 'weighted_risk_summary: NULL table'),
	($$SELECT * FROM weighted_risk_summary('pop', NULL, 'w')$$, '22004', 'weighted_risk_summary: NULL qid'),
	($$SELECT * FROM weighted_risk_summary('pop', ARRAY['age'], 'w', NULL)$$, '22004', 'weighted_risk_summary: NULL method'),
	($$SELECT * FROM weighted_risk_summary('pop', ARRAY['age'], 'w', 'mu')$$, '22023', 'weighted_risk_summary: unknown method'),
	($$SELECT * FROM weighted_risk_summary('empty_sample', ARRAY['age'], 'w', 'mu')$$, '22023', 'weighted_risk_summary: unknown method on an empty table'),
	($$SELECT * FROM weighted_risk_summary('pop', ARRAY['age'], 'nope')$$, '42703', 'weighted_risk_summary: unknown weight column'),
	($$SELECT * FROM weighted_risk_summary('pop', ARRAY['age'], 'wt')$$, '42804', 'weighted_risk_summary: text weight'),
	($$SELECT * FROM weighted_risk_summary('pop', ARRAY[]::text[], 'w')$$, '22023', 'weighted_risk_summary: empty qid'),
	($$SELECT * FROM weighted_risk_summary('pop', ARRAY['age', 'age'], 'w')$$, '42701', 'weighted_risk_summary: duplicate column'),
	($$SELECT * FROM weighted_risk_summary('infw', ARRAY['age'], 'w')$$, '22023', 'weighted_risk_summary: infinite weight'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM weighted_risk_summary('pop', ARRAY['age'], 'w')$$, '42501', 'weighted_risk_summary: no SELECT')
) AS c(stmt, code, descr);

SELECT is(pg_temp.snapshot(), s, 'nothing changed: tables, objects, settings and role') FROM before;
-- the messages say what is wrong
SELECT throws_ok($$SELECT * FROM weighted_risk(NULL, ARRAY['age'], 'w')$$, '22004',
				 'weighted_risk: rel must not be NULL', 'weighted_risk names its own argument');
SELECT throws_ok($$SELECT * FROM kmap_count('rel', 'pop', ARRAY['age'], NULL, ARRAY['agetext'])$$, '42804',
				 'column "agetext" of the population is of type text, but release column "age" is of type integer',
				 'a type mismatch names both columns and types');
SELECT throws_ok($$SELECT kmap_rows_below('rel', 'pop', ARRAY['age'], 0)$$, '22023',
				 'kmap_rows_below: k must be at least 1, not 0', 'a bad k is named with its value');
-- and they still work
SELECT is(kmap_value('rel', 'pop', ARRAY['age', 'zip']),
		  (SELECT min((SELECT count(*) FROM pop q WHERE q.age = r.age AND q.zip = r.zip))::float8
		   FROM (SELECT DISTINCT age, zip FROM rel) r),
		  'kmap_value still works after the errors (plain-SQL reference)');
SELECT is((SELECT rows FROM weighted_risk_summary('pop', ARRAY['age'], 'w')), 200::bigint,
		  'weighted_risk_summary still works after the errors');
SELECT is((SELECT count(*) FROM weighted_risk('empty_sample', ARRAY['age'], 'w')), 0::bigint,
		  'weighted_risk over an empty table with good arguments is empty, not an error');

DROP OWNED BY qidrisk_e_nobody, qidrisk_e_nopop, qidrisk_e_cols;
DROP ROLE qidrisk_e_nobody, qidrisk_e_nopop, qidrisk_e_cols;

SELECT * FROM finish();
ROLLBACK;
