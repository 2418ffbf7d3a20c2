-- Bad input to the probabilistic-anonymity and 1-D generalization functions
-- (Lodha and Thomas): every case raises its documented SQLSTATE, and nothing
-- changes afterwards.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(56 + 2 + 5 + 3);

CREATE TABLE places (child text, parent text);
INSERT INTO places VALUES ('02138', 'Cambridge'), ('02139', 'Cambridge'), ('02446', 'Brookline'),
	('Cambridge', 'Middlesex'), ('Brookline', 'Norfolk'), ('Middlesex', 'MA'), ('Norfolk', 'MA');
CREATE TABLE cyclic (child text, parent text);
INSERT INTO cyclic SELECT * FROM places;
INSERT INTO cyclic VALUES ('MA', '02138');
-- a cycle no value reaches
CREATE TABLE far_cycle (child text, parent text);
INSERT INTO far_cycle SELECT * FROM places UNION ALL VALUES ('X', 'Y'), ('Y', 'X');
CREATE TABLE two_parents (child text, parent text);
INSERT INTO two_parents SELECT * FROM places;
INSERT INTO two_parents VALUES ('02138', 'Boston');
CREATE TABLE patients (zip text, age integer);
INSERT INTO patients VALUES ('02138', 30), ('02138', 31), ('02139', 40), ('02446', 41), ('02446', 50), ('02446', 51), (NULL, NULL);

-- What must not change: table contents and objects
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) FROM patients p),
					 (SELECT md5(string_agg(h::text, ',' ORDER BY h::text)) FROM places h),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type))
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(stmt, code, NULL, descr || ' -> ' || code)
FROM (VALUES
	-- probabilistic anonymity
	('SELECT singleton_fraction_bound(0, 10)', '22023', 'no distinct values'),
	($$SELECT singleton_fraction_bound(10, 'NaN')$$, '22023', 'population NaN'),
	('SELECT alpha_qid_threshold(10, 1.5)', '22023', 'alpha above 1'),
	('SELECT alpha_qid_threshold(-10, 0.6)', '22023', 'negative population'),
	('SELECT alpha_qid_possible(10, 10, 0.4)', '22023', 'alpha below 0.5'),
	('SELECT anonymity_partitions(1e6, 1, 0.1)', '22023', 'k below 2'),
	('SELECT anonymity_partitions(1e6, 2.5)', '42883', 'fractional k (k is an integer: no such function)'),
	('SELECT anonymity_partitions(1e6, 10, 1)', '22023', 'beta = 1'),
	('SELECT anonymity_partitions(1e6, 10, 0)', '22023', 'beta = 0'),
	('SELECT bucket_budget(1e6, ARRAY[10, NULL])', '22004', 'NULL distinct count'),
	('SELECT bucket_budget(1e6, ARRAY[10, 20], ARRAY[1])', '2202E', 'weights of another length'),
	('SELECT bucket_budget(0.5, ARRAY[10])', '22023', 'fewer than one partition'),
	('SELECT bucket_budget(10, ARRAY[0])', '22023', 'distinct count 0'),
	($$SELECT * FROM column_distinct_counts('patients', ARRAY['nope'])$$, '42703', 'unknown column'),
	($$SELECT * FROM column_distinct_counts('patients', ARRAY[NULL])$$, '42703', 'NULL column name'),
	($$SELECT * FROM column_distinct_counts('patients', ARRAY['zip'], estimated => true)$$, '55000', 'no statistics'),
	($$SELECT * FROM column_distinct_counts(NULL, ARRAY['zip'])$$, '22023', 'NULL table'),
	($$SELECT * FROM column_distinct_counts('patients', ARRAY[]::text[])$$, '22023', 'no columns'),
	($$SELECT * FROM column_distinct_counts('nope', ARRAY['zip'])$$, '42P01', 'unknown table'),
	($$SELECT distinct_product('patients', ARRAY['nope'])$$, '42703', 'distinct_product: unknown column'),
	($$SELECT * FROM column_budgets('patients', ARRAY['zip'], 10, 1)$$, '22023', 'column_budgets: k below 2'),
	($$SELECT * FROM column_budgets('patients', ARRAY['zip'], 1e6, 2.5)$$, '42883', 'column_budgets: fractional k (no such function)'),
	($$SELECT * FROM column_budgets('patients', ARRAY['zip', 'age'], 1e6, 5, weights => ARRAY[1.0])$$, '2202E', 'column_budgets: weights of another length'),
	-- quantile buckets
	('SELECT quantile_cuts(x, 0) FROM generate_series(1, 3) AS x', '22023', 'quantile_cuts: k = 0'),
	('SELECT quantile_cuts(x, 4) FROM generate_series(1, 3) AS x', '22023', 'quantile_cuts: k above the rows'),
	('SELECT quantile_cuts(x, NULL) FROM generate_series(1, 3) AS x', '22004', 'quantile_cuts: NULL k'),
	($$SELECT quantile_cuts(x, 1) FROM unnest(ARRAY[1, 'NaN']::float8[]) AS x$$, '22023', 'quantile_cuts: NaN value'),
	('SELECT quantile_cuts(p, 1) FROM (VALUES (point(1, 2))) AS s(p)', '42883', 'quantile_cuts: unordered type'),
	($$SELECT optimal_cuts(x, 1, 'k_means') FROM generate_series(1, 3) AS x$$, '22023', 'optimal_cuts: unknown cost'),
	('SELECT optimal_cuts(x, 2, NULL) FROM generate_series(1, 3) AS x', '22004', 'optimal_cuts: NULL cost'),
	($$SELECT optimal_cuts(x, 1) FROM unnest(ARRAY['a', 'b']) AS x$$, '42804', 'optimal_cuts: text values'),
	('SELECT optimal_cuts(x, 4) FROM generate_series(1, 3) AS x', '22023', 'optimal_cuts: k above the rows'),
	('SELECT quantile_means(d, ARRAY[current_date]) FROM (VALUES (current_date)) AS s(d)', '42804', 'quantile_means: dates'),
	('SELECT quantile_medians(x, ARRAY[5]) FROM generate_series(1, 10) AS x', '22023', 'quantile_medians: values below the first cut'),
	('SELECT quantile_medians(x, ARRAY[1, 5, 2]) FROM generate_series(1, 10) AS x', '22023', 'quantile_medians: cuts not ascending'),
	('SELECT quantile_medians(x, NULL::int[]) FROM generate_series(1, 3) AS x', '22004', 'quantile_medians: NULL cuts'),
	('SELECT quantile_bucket(1, ARRAY[1.5])', '42883', 'quantile_bucket: cuts of another type'),
	('SELECT quantile_bucket(1, ARRAY[1, NULL])', '22004', 'quantile_bucket: NULL in cuts'),
	('SELECT quantile_bucket_label(5, ARRAY[1, NULL])', '22004', 'quantile_bucket_label: NULL in cuts'),
	('SELECT quantile_bucket(5, ARRAY[3, 1])', '22023', 'quantile_bucket: descending cuts'),
	('SELECT quantile_bucket_range(5, ARRAY[1, 1, 3])', '22023', 'quantile_bucket_range: repeated cut'),
	('SELECT quantile_bucket(x, (SELECT array_agg(-g ORDER BY g) FROM generate_series(1, 3000) g)) FROM generate_series(1, 3) x',
	 '22023', 'quantile_bucket: 3,000 descending cuts'),
	('SELECT quantile_bucket_value(5, ARRAY[1, 4], ARRAY[1])', '2202E', 'quantile_bucket_value: fewer representatives than cuts'),
	('SELECT quantile_cuts_approx(x, 2, 0, 0.5) FROM generate_series(1, 3) AS x', '22023', 'quantile_cuts_approx: eps 0'),
	('SELECT quantile_cuts_approx(x, 2, 0.1, 1) FROM generate_series(1, 3) AS x', '22023', 'quantile_cuts_approx: delta 1'),
	('SELECT quantile_sample_size(0, 0.5)', '22023', 'quantile_sample_size: eps 0'),
	($$SELECT generalization_utility(x, 'NaN') FROM generate_series(1, 3) x$$, '22023', 'generalization_utility: NaN'),
	-- hierarchies
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'places')$$, '22023', 'hierarchy: neither limit'),
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 0)$$, '22023', 'hierarchy: max_values 0'),
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', min_rows => -1)$$, '22023', 'hierarchy: negative min_rows'),
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'cyclic', max_values => 1)$$, '22023', 'hierarchy with a cycle'),
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'two_parents', max_values => 1)$$, '22023', 'hierarchy: a child with two parents'),
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', min_rows => 100)$$, '22023', 'hierarchy: no level fits'),
	($$SELECT * FROM hierarchy_generalize(NULL, 'zip', 'places', 2)$$, '22004', 'hierarchy: NULL table'),
	($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', 2, child_column => 'nope')$$, '42703', 'hierarchy: unknown child column'),
	($$SELECT * FROM hierarchy_generalize('patients', 'nope', 'places', 2)$$, '42703', 'hierarchy: unknown column')
) AS c(stmt, code, descr);

-- the messages name the arguments
SELECT throws_ok('SELECT singleton_fraction_bound(0, 10)', '22023',
				 'partitions must be a finite number of at least 1, not 0', 'singleton_fraction_bound names partitions');
SELECT throws_ok('SELECT alpha_qid_threshold(-10, 0.6)', '22023',
				 'population_size must be a finite number of at least 1, not -10', 'alpha_qid_threshold names population_size');
SELECT throws_ok('SELECT anonymity_partitions(1e6, 1)', '22023',
				 'k must be at least 2, not 1', 'anonymity_partitions names k');

-- hierarchy_generalize names what is missing (0.1.0: a syntax error at the OID, or a missing "child")
SELECT throws_ok($$SELECT * FROM hierarchy_generalize('patients', 'zip', 999999::oid::regclass, 2)$$, '42P01',
				 'hierarchy relation with OID 999999 does not exist', 'hierarchy: a hierarchy OID that does not exist');
SELECT throws_ok($$SELECT * FROM hierarchy_generalize(999999::oid::regclass, 'zip', 'places', 2)$$, '42P01',
				 'relation with OID 999999 does not exist', 'hierarchy: a table OID that does not exist');
SELECT throws_ok($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', 2, parent_column => 'nope')$$, '42703',
				 'column "nope" of relation "places" does not exist', 'hierarchy: unknown parent column, named');
SELECT throws_like($$SELECT * FROM hierarchy_generalize('patients', 'zip', 'cyclic', max_values => 1)$$,
				   'hierarchy public.cyclic has a cycle through "%"', 'hierarchy: the cycle is named');
-- a cycle no value of the table reaches is no error, as before
SELECT is(ARRAY(SELECT row(h.*)::text FROM hierarchy_generalize('patients', 'zip', 'far_cycle', max_values => 2) h),
		  ARRAY(SELECT row(h.*)::text FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 2) h),
		  'hierarchy: a cycle that no value reaches changes nothing');

SELECT is(pg_temp.snapshot(), s, 'nothing changed: tables and objects') FROM before;
SELECT is((SELECT quantile_cuts(age, 2) FROM patients), ARRAY[30, 40, 50], 'the functions still work after the errors');

SELECT * FROM finish();
ROLLBACK;
