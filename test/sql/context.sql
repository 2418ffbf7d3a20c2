-- A user's mistake is reported before any work: an existing target of qid_anonymize_into
\set VERBOSITY default
\set SHOW_CONTEXT errors
CREATE SCHEMA context_test;
SET search_path = context_test, public;
CREATE TABLE people (birth_year integer, sex text, zip text, region text);
INSERT INTO people SELECT 1950 + i % 30, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END,
	(1000 + i % 4)::text, CASE WHEN i % 3 = 0 THEN 'north' ELSE 'south' END
FROM generate_series(1, 300) i;
CREATE TABLE existing_release (x integer);

-- qid_anonymize_into: an existing target is found before any work (42P07)
SELECT * FROM qid_anonymize_into('people', ARRAY['sex'], '{}', 'existing_release', 1);
SELECT count(*) FROM existing_release;

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
