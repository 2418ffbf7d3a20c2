-- A user's mistake shows the user's call: the error (message, detail, hint)
-- carries no CONTEXT line of qidrisk's internal functions or generated SQL,
-- while the caller's own frames (its function, its procedure) stay
\set VERBOSITY default
\set SHOW_CONTEXT errors
CREATE SCHEMA context_test;
SET search_path = context_test, public;
CREATE TABLE people (birth_year integer, sex text, zip text, region text);
INSERT INTO people SELECT 1950 + i % 30, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END,
	(1000 + i % 4)::text, CASE WHEN i % 3 = 0 THEN 'north' ELSE 'south' END
FROM generate_series(1, 300) i;
CREATE TABLE census (zip text, age integer, people integer);
INSERT INTO census VALUES ('85535', 79, 1), ('60629', 42, 1200), ('60629', 79, 310);
CREATE TABLE study (zip text, age integer);
INSERT INTO study VALUES ('85535', 79), ('60629', 42);
CREATE TABLE survey (region text, weight numeric);
INSERT INTO survey VALUES ('A', 10), ('B', 5), ('B', 5);
CREATE TABLE loop_tree (child text, parent text);
INSERT INTO loop_tree VALUES ('1000', '1001'), ('1001', '1000'), ('1002', '*'), ('1003', '*');
CREATE TABLE two_parents (child text, parent text);
INSERT INTO two_parents VALUES ('1000', 'A'), ('1000', 'B'), ('1001', 'A');
CREATE TABLE existing_release (x integer);

-- qid_check: a policy typo, a missing column, bad settings, a missing population
SELECT * FROM qid_check('people', ARRAY['sex'], '{"min_kk": 2}');
SELECT * FROM qid_check('people', ARRAY['nope'], '{"min_k": 2}');
SELECT * FROM qid_check('people', ARRAY['sex'], '{"min_k": 0}');
SELECT * FROM qid_check('people', ARRAY['sex'], '[1]');
SELECT * FROM qid_check('people', ARRAY['sex'], NULL);
SELECT * FROM qid_check('people', ARRAY['sex'], '{"min_kmap": {"population": "nope", "k": 1}}');
SELECT * FROM qid_check('people', ARRAY['sex', 'zip'], '{"max_qar_risk": {"max": 0.5}}');
SELECT * FROM qid_check('people', ARRAY['sex'], '{"min_l": {"sensitive": "nope", "l": 2}}');
-- qid_assert: the same mistakes; a failed rule is QR001, as before
CALL qid_assert('people', ARRAY['sex'], '{"min_kk": 2}');
CALL qid_assert('people', ARRAY['nope'], '{"min_k": 2}');
CALL qid_assert('people', ARRAY['sex', 'zip'], '{"min_k": 500}');
-- the user's own function and procedure keep their frames
CREATE FUNCTION nightly_check() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM * FROM qid_check('people', ARRAY['sex'], '{"min_kk": 2}');
END
$$;
SELECT nightly_check();
CREATE PROCEDURE nightly_assert() LANGUAGE plpgsql AS $$
BEGIN
	CALL qid_assert('people', ARRAY['sex'], '{"min_kk": 2}');
END
$$;
CALL nightly_assert();
-- so does a handler that reads the context
CREATE FUNCTION caught_context() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	ctx text;
BEGIN
	PERFORM * FROM qid_check('people', ARRAY['sex'], '{"min_k": 0}');
	RETURN 'no error';
EXCEPTION WHEN invalid_parameter_value THEN
	GET STACKED DIAGNOSTICS ctx = PG_EXCEPTION_CONTEXT;
	RETURN ctx;
END
$$;
SELECT caught_context();

-- qid_anonymize_into: an existing target is found before any work (42P07)
SELECT * FROM qid_anonymize_into('people', ARRAY['sex'], '{}', 'existing_release', 1);
SELECT count(*) FROM existing_release;
SELECT * FROM qid_anonymize_into('people', ARRAY['sex'], '{}', 'new_release', 2, suppression => 'hide');
SELECT * FROM qid_anonymize_into('people', ARRAY['sex'], '{}', 'new_release', 0);
SELECT * FROM qid_anonymize_into('people', ARRAY['nope'], '{}', 'new_release', 2);
SELECT * FROM qid_anonymize_into('people', ARRAY['sex'], '{}', 'new_release', 400);
SELECT * FROM qid_anonymize_into('people', ARRAY['birth_year'], '{"birth_year": {"widthz": [5]}}', 'new_release', 2);
SELECT * FROM qid_anonymize_into('people', ARRAY['zip'], '{"zip": "nope"}', 'new_release', 2);
SELECT * FROM qid_anonymize_into('people', ARRAY['zip'], '{"zip": {"table": "loop_tree", "child": "child", "parent": "parent"}}', 'new_release', 2);
SELECT * FROM qid_anonymize_into('people', ARRAY['sex'], '{}', NULL, 2);
SELECT to_regclass('new_release');
-- qid_lattice reads the hierarchies itself
SELECT * FROM qid_lattice('people', ARRAY['zip'], '{"zip": {"table": "loop_tree", "child": "child", "parent": "parent"}}', 2);
SELECT * FROM qid_lattice('people', ARRAY['zip'], '{"zip": {"table": "loop_tree", "child": "kid", "parent": "parent"}}', 2);

-- qid_generalize and qid_generalize_into
SELECT * FROM qid_generalize('people', ARRAY['birth_year'], '{"columns": {"sex": {"constant": "*"}}}');
SELECT * FROM qid_generalize('people', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', k => 0);
SELECT * FROM qid_generalize('people', ARRAY['nope'], '{"columns": {"nope": {"constant": "*"}}}');
SELECT * FROM qid_generalize('people', ARRAY['zip'], '{"columns": {"zip": {"map": "nope"}}}');
SELECT qid_generalize_into('people', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', 'existing_release');
SELECT qid_generalize_into('people', ARRAY['sex'], '[]', 'new_release');
SELECT qid_generalize_into('people', ARRAY['sex'], '{"columns": {"sex": {"constan": "*"}}}', 'new_release');

-- a user's function calling one of them keeps its frame
CREATE FUNCTION nightly_release() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
	RETURN (SELECT rows_released FROM qid_generalize_into('people', ARRAY['sex'],
		'{"columns": {"sex": {"constant": "*"}}}', 'existing_release'));
END
$$;
SELECT nightly_release();

-- k-map and the weighted-sample risk
SELECT kmap_value('study', 'census', ARRAY['zip', 'nope']);
SELECT kmap_value('study', 'census', NULL);
SELECT kmap_rows_below('study', 'census', ARRAY['zip', 'age'], 0);
SELECT kmap_rows_below('study', 'census', ARRAY['zip', 'nope'], 2);
INSERT INTO census VALUES ('99999', 1, -3);
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people');
SELECT * FROM kmap_row_counts('study', 'census', ARRAY['zip', 'age'], 'people');
DELETE FROM census WHERE people < 0;
SELECT * FROM weighted_risk('survey', ARRAY['region'], 'weight', 'exactly');
SELECT * FROM weighted_risk('survey', ARRAY['nope'], 'weight');
SELECT * FROM weighted_risk(NULL, ARRAY['region'], 'weight');
SELECT * FROM weighted_risk('survey', ARRAY['region'], 'region');
SELECT * FROM weighted_risk_summary('survey', ARRAY['region'], 'weight', 'exactly');

-- distinct counts and budgets
SELECT * FROM column_distinct_counts('people', ARRAY['nope']);
SELECT * FROM column_distinct_counts('people', ARRAY[]::text[]);
SELECT * FROM column_distinct_counts('loop_tree', ARRAY['child'], true);
SELECT distinct_product('people', ARRAY['nope']);
SELECT * FROM column_budgets('people', ARRAY['nope'], 1000, 5);
SELECT * FROM column_budgets('people', ARRAY['sex'], 1000, 1);

-- hierarchies
SELECT * FROM hierarchy_levels('loop_tree', 'child', 'parent');
SELECT * FROM hierarchy_levels('two_parents', 'child', 'parent');
SELECT * FROM hierarchy_levels('loop_tree', 'kid', 'parent');
SELECT * FROM hierarchy_levels(NULL);
SELECT * FROM interval_hierarchy('people', 'birth_year', '{"widthz": [5]}');
SELECT * FROM interval_hierarchy('people', 'sex', '{"widths": [5]}');
SELECT * FROM interval_hierarchy('people', 'nope', '{"widths": [5]}');
SELECT * FROM interval_hierarchy('people', 'birth_year', '{"widths": [5, 7]}');
SELECT * FROM hierarchy_generalize('people', 'zip', 'two_parents', max_values => 1);

-- small functions
SELECT quantile_bucket_value(3, ARRAY[1, 5], ARRAY[1]);
SELECT rows_below(class_profile(sex), 0) FROM people;

-- errors of other classes keep their whole context (here a resource limit)
CREATE TABLE many AS SELECT i FROM generate_series(1, 5000) i;
SET qidrisk.max_state_memory = '64kB';
SELECT count(*) FROM kmap_count('many', 'many', ARRAY['i']);
RESET qidrisk.max_state_memory;

-- an existing target of qid_anonymize_into on 200,000 rows fails at once:
-- before, it was found when the release had been computed (8 to 12 s here)
CREATE TABLE big AS SELECT i, 1930 + i % 80 AS birth_year, (ARRAY['F', 'M'])[1 + i / 7 % 2] AS sex,
	i / 3 % 900 AS zip, i % 5 AS diagnosis
FROM generate_series(1, 200000) i;
CREATE TABLE big_release (x integer);
SET statement_timeout = '1s';
SELECT * FROM qid_anonymize_into('big', ARRAY['birth_year', 'sex', 'zip'],
	'{"birth_year": {"widths": [5, 10, 20]}, "zip": {"widths": [10, 100, 300]}}',
	'big_release', 5, 0.01, 'diagnosis', 2);
RESET statement_timeout;
RESET search_path;
DROP SCHEMA context_test CASCADE;
