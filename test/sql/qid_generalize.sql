-- The README's examples of qid_search and the generalization what-ifs
CREATE SCHEMA qid_generalize_test;
SET search_path = qid_generalize_test, public;
CREATE TABLE people (birth_year int, sex text, zip text, region text);
INSERT INTO people VALUES (1980, 'F', '1000', 'north'), (1980, 'F', '1000', 'north'),
	(1980, 'M', '1000', 'north'), (1975, 'M', '2000', 'south'), (1990, 'F', NULL, 'south');
SELECT columns, singletons, classes, identifier, best FROM qid_search('people') LIMIT 4;
SELECT columns, singletons, minimal_identifier, best FROM qid_search('people', summary => true);
SELECT columns, singletons, rows, rows_removed
FROM qid_search('people', ARRAY['birth_year', 'sex', 'zip'], max_size => 2, drop_incomplete => true) LIMIT 3;

CREATE TABLE licences (birth_year int, sex text, municipality text);
INSERT INTO licences VALUES (1980, 'F', 'Salerno'), (1980, 'F', 'Salerno'), (1980, 'M', 'Salerno'),
	(1980, 'M', 'Salerno'), (1975, 'F', 'Napoli'), (1975, 'F', 'Napoli'), (1981, 'M', 'Amalfi'),
	(1981, 'M', 'Positano'), (1962, 'F', 'Pozzuoli'), (1962, 'F', 'Napoli'), (1990, 'M', 'Napoli');
CREATE TABLE province_of ("from" text, "to" text);
INSERT INTO province_of VALUES ('Salerno', 'SA'), ('Amalfi', 'SA'), ('Positano', 'SA'),
	('Napoli', 'NA'), ('Pozzuoli', 'NA');
SELECT columns, singletons, best FROM qid_search('licences', summary => true);
SELECT * FROM qid_generalize('licences', ARRAY['birth_year', 'sex', 'municipality'], '[
	{"name": "S_loc", "local": true, "columns": {"sex": {"constant": "*"}}},
	{"name": "M_loc", "local": true, "columns": {"municipality": {"map": "province_of"}}},
	{"name": "S", "columns": {"sex": {"constant": "*"}}},
	{"name": "M", "columns": {"municipality": {"map": "province_of"}}},
	{"name": "Y_ran", "columns": {"birth_year": {"range": 3}}},
	{"name": "Y_avg", "columns": {"birth_year": {"mean": 3}}},
	{"name": "S, M_loc", "local": true,
	 "columns": {"sex": {"constant": "*"}, "municipality": {"map": "province_of"}}}]');
-- a target: k = 2 with at most 10 % of the rows below it, the cost in values changed
SELECT name, k_anonymity, rows_below_k, rows_modified, values_changed, meets_target, best
FROM qid_generalize('licences', ARRAY['birth_year', 'sex', 'municipality'], '[
	{"name": "M_loc", "local": true, "columns": {"municipality": {"map": "province_of"}}},
	{"name": "M", "columns": {"municipality": {"map": "province_of"}}},
	{"name": "Y_ran", "columns": {"birth_year": {"range": 3}}},
	{"name": "S, M_loc", "local": true,
	 "columns": {"sex": {"constant": "*"}, "municipality": {"map": "province_of"}}}]',
	k => 2, max_suppressed => 0.1, cost => 'values_changed');
SELECT * FROM qid_generalize_into('licences', ARRAY['birth_year', 'sex', 'municipality'],
	'{"local": true, "columns": {"municipality": {"map": "province_of"}}}', 'licences_release');
SELECT * FROM licences_release ORDER BY birth_year, sex, municipality;
SELECT singleton_count(birth_year, sex, municipality) FROM licences_release;
SELECT qidrisk_internal.qidrisk_complete_filter('licences', ARRAY['birth_year', 'sex']);
SELECT qidrisk_internal.qidrisk_generalization_query('licences', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}',
	false, false, 'example');
-- the source is unchanged
SELECT count(*), count(*) FILTER (WHERE municipality IN ('SA', 'NA')) FROM licences;
-- bad input
\set VERBOSITY terse
SELECT * FROM qid_generalize('licences', ARRAY['birth_year'], '{"columns": {"sex": {"constant": "*"}}}');
SELECT * FROM qid_generalize('licences', ARRAY['municipality'], '{"columns": {"municipality": {"map": "nope"}}}');
SELECT * FROM qid_generalize('licences', ARRAY['birth_year'], '{"columns": {"birth_year": {"range": 0}}}');
SELECT * FROM qid_generalize('licences', ARRAY['birth_year'], '{"columns": {"birth_year": {}}}');
SELECT * FROM qid_generalize('licences', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', k => 0);
SELECT * FROM qid_generalize('licences', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', max_suppressed => 2);
SELECT * FROM qid_generalize('licences', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', cost => 'cells');
SELECT * FROM qid_generalize('licences', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', k => NULL);
SELECT * FROM qid_generalize_into('licences', ARRAY['sex'], '{"columns": {"sex": {"constant": "*"}}}', 'licences_release');
RESET search_path;
DROP SCHEMA qid_generalize_test CASCADE;
