-- How every table-level function reads its table (the relation reader):
-- a missing relation OID is 42P01 naming the OID, an unknown column 42703
-- suggesting the nearest name, a column the caller may not read 42501 naming
-- that column; the internal k-map probe refuses rows whose keys differ; QaR
-- bounds the lattice walk it really does.  (Concurrent DDL: test/ops/ddl_race.sh.)
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(45);

-- SQLSTATE, message and hint of a statement's error (or 'ok'), as one role
CREATE FUNCTION pg_temp.err(stmt text, who text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	msg text;
	hint text;
BEGIN
	IF who IS NOT NULL THEN
		PERFORM set_config('role', who, true);
	END IF;
	EXECUTE stmt;
	PERFORM set_config('role', 'none', true);
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	PERFORM set_config('role', 'none', true);
	RETURN state || ' ' || msg || CASE WHEN hint <> '' THEN ' / ' || hint ELSE '' END;
END
$$;

CREATE TABLE people (id serial, birth_year integer, sex text, zip text, "Region" text);
INSERT INTO people (birth_year, sex, zip, "Region")
SELECT 1950 + i % 13, (ARRAY['F', 'M'])[1 + i % 2], (ARRAY['1000', '1001', '2000'])[1 + i % 3],
	   CASE WHEN i % 4 = 0 THEN 'north' ELSE 'south' END
FROM generate_series(1, 120) i;
ANALYZE people;
CREATE ROLE qidrisk_r_cols;
GRANT SELECT (id, sex, zip) ON people TO qidrisk_r_cols;

-- 1. a relation OID that does not exist: 42P01 naming the OID, from every reader
SELECT is(pg_temp.err(s), '42P01 relation with OID 999999 does not exist', 'missing OID: ' || s)
FROM unnest(ARRAY[
	$$SELECT * FROM qid_search(999999::regclass, ARRAY['a'])$$,
	$$SELECT * FROM qid_search(999999::regclass)$$,
	$$SELECT * FROM qar_thetas(999999::regclass, ARRAY['a'], 1)$$,
	$$SELECT * FROM qar_record_scores(999999::regclass, ARRAY['a'], 1)$$,
	$$SELECT * FROM column_distinct_counts(999999::regclass, ARRAY['a'])$$,
	$$SELECT * FROM column_distinct_counts(999999::regclass, ARRAY['a'], true)$$,
	$$SELECT qidrisk_internal.qidrisk_complete_filter(999999::regclass, ARRAY['a'])$$,
	$$SELECT * FROM qid_generalize(999999::regclass, ARRAY['a'], '{"columns": {"a": {"constant": "*"}}}')$$,
	$$SELECT * FROM qid_check(999999::regclass, ARRAY['a'], '{"min_k": 2}')$$]) AS s;
SELECT is(pg_temp.err($$SELECT * FROM kmap_count(999999::regclass, 'people', ARRAY['zip'])$$),
		  '42P01 release relation with OID 999999 does not exist', 'kmap_count: a missing release OID');
SELECT is(pg_temp.err($$SELECT * FROM weighted_risk(999999::regclass, ARRAY['zip'], 'id')$$),
		  '42P01 release relation with OID 999999 does not exist', 'weighted_risk: a missing table OID');
SELECT is(pg_temp.err($$SELECT * FROM kmap_count('people', 999999::regclass, ARRAY['zip'])$$),
		  '42P01 population relation with OID 999999 does not exist', 'kmap_count: a missing population OID');

-- 2. an unknown column: 42703, case-sensitive, nearest name suggested
SELECT is(pg_temp.err(s), '42703 column "Zip" of relation "people" does not exist / Did you mean "zip"?',
		  'wrong case: ' || s)
FROM unnest(ARRAY[
	$$SELECT * FROM qid_search('people', ARRAY['sex', 'Zip'])$$,
	$$SELECT * FROM qar_thetas('people', ARRAY['sex', 'Zip'], 1)$$,
	$$SELECT * FROM kmap_count('people', 'people', ARRAY['sex', 'Zip'])$$,
	$$SELECT * FROM column_distinct_counts('people', ARRAY['sex', 'Zip'])$$,
	$$SELECT * FROM qid_check('people', ARRAY['sex', 'Zip'], '{"min_k": 2}')$$,
	$$SELECT qidrisk_internal.qidrisk_complete_filter('people', ARRAY['sex', 'Zip'])$$,
	$$SELECT * FROM qid_generalize('people', ARRAY['sex', 'Zip'], '{"columns": {"sex": {"constant": "*"}}}')$$]) AS s;
SELECT is(pg_temp.err($$SELECT * FROM qid_search('people', ARRAY['region'])$$),
		  '42703 column "region" of relation "people" does not exist / Did you mean "Region"?',
		  'a column created with a quoted upper-case name is suggested as written');
SELECT is(pg_temp.err($$SELECT * FROM qid_search('people', ARRAY['birth_yaer'])$$),
		  '42703 column "birth_yaer" of relation "people" does not exist / Did you mean "birth_year"?',
		  'a misspelt column gets the nearest name');
SELECT is(pg_temp.err($$SELECT * FROM qid_search('people', ARRAY['postcode'])$$),
		  '42703 column "postcode" of relation "people" does not exist',
		  'no suggestion when no name is near');

-- 3. column privileges: the error names the column
SELECT is(pg_temp.err(s, 'qidrisk_r_cols'),
		  '42501 permission denied for column "birth_year" of relation "people"' ||
		  CASE WHEN s LIKE '%qid_search%' THEN ' / qid_search reads only the candidate columns; with columns NULL it reads every column.' ELSE '' END,
		  'a column without SELECT is named: ' || s)
FROM unnest(ARRAY[
	$$SELECT * FROM qid_search('people', ARRAY['sex', 'birth_year'])$$,
	$$SELECT * FROM qar_thetas('people', ARRAY['sex', 'birth_year'], 1)$$,
	$$SELECT * FROM kmap_count('people', 'people', ARRAY['sex', 'birth_year'])$$,
	$$SELECT * FROM weighted_risk('people', ARRAY['sex', 'birth_year'], 'id')$$,
	$$SELECT * FROM column_distinct_counts('people', ARRAY['sex', 'birth_year'])$$,
	$$SELECT * FROM column_distinct_counts('people', ARRAY['sex', 'birth_year'], true)$$,
	$$SELECT * FROM qid_check('people', ARRAY['sex', 'birth_year'], '{"min_k": 2}')$$,
	$$SELECT * FROM qid_generalize('people', ARRAY['sex', 'birth_year'], '{"columns": {"sex": {"constant": "*"}}}')$$]) AS s;
SELECT is(pg_temp.err($$SELECT * FROM qid_search('people')$$, 'qidrisk_r_cols'),
		  '42501 permission denied for column "birth_year" of relation "people" / qid_search without columns (NULL) reads every column of the table; pass the columns you may read.',
		  'qid_search without columns says that it reads every column');
SELECT is(pg_temp.err($$SELECT * FROM qid_generalize_into('people', ARRAY['sex', 'zip'], '{"columns": {"sex": {"constant": "*"}}}', 'people_out')$$, 'qidrisk_r_cols'),
		  '42501 permission denied for column "birth_year" of relation "people"',
		  'qid_generalize_into copies every column, so it needs every column');
SELECT is(pg_temp.err($$SELECT * FROM qar_record_scores('people', ARRAY['sex', 'zip'], 1, 'Region')$$, 'qidrisk_r_cols'),
		  '42501 permission denied for column "Region" of relation "people"',
		  'the key column of qar_* is checked too');
SELECT is(pg_temp.err($$SELECT * FROM kmap_count('people', 'people', ARRAY['sex', 'zip'], 'birth_year')$$, 'qidrisk_r_cols'),
		  '42501 permission denied for column "birth_year" of relation "people"',
		  'the population weight column is checked too');
SELECT is(pg_temp.err($$SELECT count(*) FROM qid_search('people', ARRAY['sex', 'zip'])$$, 'qidrisk_r_cols'), 'ok',
		  'the granted columns suffice for qid_search');
SELECT is(pg_temp.err($$SELECT count(*) FROM qar_thetas('people', ARRAY['sex', 'zip'], 2)$$, 'qidrisk_r_cols'), 'ok',
		  'and for qar_thetas');
SELECT is(pg_temp.err($$SELECT count(*) FROM kmap_count('people', 'people', ARRAY['sex', 'zip'], 'id')$$, 'qidrisk_r_cols'), 'ok',
		  'and for kmap_count with a weight column');

-- 4. the internal k-map probe: every row must bring the same keys
CREATE TABLE probe_rows AS
SELECT i, CASE WHEN i = 1 THEN decode(repeat('01', 16), 'hex') ELSE decode(repeat('02', 32), 'hex') END AS k
FROM generate_series(1, 3000) i;
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_kmap_probe(k, 1, i) FROM probe_rows$$, '22023',
				 'qidrisk_kmap_probe: keys must be the same in every row',
				 'keys that differ between rows are refused, serially');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_kmap_probe(CASE WHEN i = 2 THEN decode(repeat('03', 16), 'hex') ELSE decode(repeat('01', 16), 'hex') END, 1, i) FROM probe_rows$$,
				 '22023', 'qidrisk_kmap_probe: keys must be the same in every row',
				 'keys of the same length but other bytes are refused too');
SELECT is((SELECT length(qidrisk_internal.qidrisk_kmap_probe(decode(repeat('01', 16), 'hex'), 1, i)) FROM probe_rows),
		  64 * 8, 'the same keys in every row still work');
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL parallel_leader_participation = off;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_kmap_probe(k, 1, i) FROM probe_rows$$, '22023', NULL,
				 'keys that differ between rows are refused in parallel workers too (not XX000)');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;

-- 5. QaR bounds the subsets its lattice walk visits (every size up to p)
CREATE TABLE wide AS
SELECT i AS c01, i % 2 AS c02, i % 3 AS c03, i % 4 AS c04, i % 5 AS c05, i % 6 AS c06, i % 7 AS c07,
	   i % 8 AS c08, i % 9 AS c09, i % 10 AS c10, i % 11 AS c11, i % 12 AS c12, i % 13 AS c13,
	   i % 14 AS c14, i % 15 AS c15, i % 16 AS c16, i % 17 AS c17, i % 18 AS c18, i % 19 AS c19,
	   i % 20 AS c20, i % 21 AS c21, i % 22 AS c22, i % 23 AS c23, i % 24 AS c24, i % 25 AS c25,
	   i % 26 AS c26, i % 27 AS c27, i % 28 AS c28, i % 29 AS c29, i % 30 AS c30
FROM generate_series(1, 40) i;
CREATE TEMP TABLE wide_columns AS
SELECT array_agg(attname::text ORDER BY attnum) AS c FROM pg_attribute
WHERE attrelid = 'wide'::regclass AND attnum > 0;
SET LOCAL statement_timeout = '20s';
SELECT is(pg_temp.err(format('SELECT count(*) FROM qar_thetas(%L, %L, 30)', 'wide', c)),
		  '54000 qar_thetas would visit 1073741823 subsets of at most 30 columns, more than the limit of 10000000 / Use fewer columns or a smaller p.',
		  'p = N on 30 columns: one subset of 30, but 2^30 - 1 visited on the way; refused at once')
FROM wide_columns;
SELECT is(pg_temp.err(format('SELECT count(*) FROM qar_thetas(%L, %L, 12)', 'wide', c[1:25])),
		  '54000 qar_thetas would visit 16777215 subsets of at most 12 columns, more than the limit of 10000000 / Use fewer columns or a smaller p.',
		  'C(25, 12) is below the limit, the walk to it is not')
FROM wide_columns;
SELECT is(pg_temp.err(format('SELECT count(*) FROM qar_record_scores(%L, %L, 29, %L)', 'wide', c, 'c01')),
		  '54000 qar_record_scores would visit 1073741822 subsets of at most 29 columns, more than the limit of 10000000 / Use fewer columns or a smaller p.',
		  'qar_record_scores too')
FROM wide_columns;
SELECT is((SELECT count(*) FROM wide_columns, qar_thetas('wide', c[1:8], 4)), 70::bigint,
		  'a walk within the limit runs');
RESET statement_timeout;

SELECT * FROM finish();
ROLLBACK;
