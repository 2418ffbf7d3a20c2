-- Pre-publication checks: qid_check, qid_assert (SQLSTATE QR001), history
\set SHOW_CONTEXT never
CREATE TABLE licences (birth_year integer, sex text, "ZIP code" text);
INSERT INTO licences SELECT 1950 + i % 30, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END, (1000 + i % 4)::text
FROM generate_series(1, 600) i;
INSERT INTO licences VALUES (1920, 'F', '9999'), (1921, 'M', NULL), (1921, 'M', NULL);
SELECT * FROM qid_check_rules();
-- one row per rule of the policy, in the order of qid_check_rules()
SELECT rule, setting, round(measured::numeric, 6) AS measured, threshold, passed
FROM qid_check('licences', ARRAY['birth_year', 'sex', 'ZIP code'],
	'{"max_birthday_uniqueness": {"group_size": 20, "max": 0.01}, "min_k": 5,
	  "max_rows_below_k": {"k": 5, "max": 3}, "max_singleton_share": 0.001}');
-- on a view, over the rows it shows
CREATE VIEW recent AS SELECT * FROM licences WHERE birth_year >= 1950;
SELECT rule, measured, passed FROM qid_check('recent', ARRAY['birth_year', 'sex', 'ZIP code'], '{"min_k": 5, "max_singleton_share": 0}');
-- an empty table passes every rule: nothing in it can be re-identified
CREATE TABLE empty_licences (LIKE licences);
SELECT rule, measured, passed FROM qid_check('empty_licences', ARRAY['sex'],
	'{"min_k": 5, "max_singleton_share": 0, "max_rows_below_k": {"k": 5, "max": 0}, "max_birthday_uniqueness": {"group_size": 2, "max": 0}}');

-- the asserting form
CALL qid_assert('recent', ARRAY['birth_year', 'sex', 'ZIP code'], '{"min_k": 5}');
CALL qid_assert('licences', ARRAY['birth_year', 'sex', 'ZIP code'], '{"min_k": 5, "max_singleton_share": 0.01, "max_rows_below_k": {"k": 2, "max": 1}}');
-- a nightly procedure
CREATE PROCEDURE nightly_publication_check() LANGUAGE plpgsql AS $$
BEGIN
	CALL qid_assert('licences', ARRAY['birth_year', 'sex'], '{"min_k": 2}');
END
$$;
CALL nightly_publication_check();
-- with history: the run is committed before the error, so a failing run stays recorded
CALL qid_assert('licences', ARRAY['birth_year', 'sex'], '{"min_k": 2}', record_history => true);
SELECT checked_by, relation, qid, policy, results, passed FROM qid_check_history;
SELECT rule, passed FROM qid_check('licences', ARRAY['sex'], '{"min_k": 2}', record_history => true);
SELECT qid, passed FROM qid_check_history ORDER BY checked_at;
-- inside a transaction block the commit is impossible
BEGIN;
CALL qid_assert('licences', ARRAY['sex'], '{"min_k": 2}', record_history => true);
ROLLBACK;
SELECT count(*) FROM qid_check_history;
-- nor inside a block with an exception handler, nor from a function
DO $$
BEGIN
	CALL qid_assert('licences', ARRAY['sex'], '{"min_k": 2}', record_history => true);
EXCEPTION WHEN invalid_transaction_termination THEN
	RAISE NOTICE '%', SQLERRM;
END
$$;
SELECT count(*) FROM qid_check_history;
-- QR001 carries no context of qidrisk's own, and its detail every setting of a failed rule
\set SHOW_CONTEXT errors
CALL qid_assert('licences', ARRAY['birth_year', 'sex', 'ZIP code'], '{"max_rows_below_k": {"k": 50, "max": 0}, "min_k": 2}');
\set SHOW_CONTEXT never
TRUNCATE qidrisk_internal.check_history;
-- k-map against a population table (here a census of counts, in the checked table's schema)
CREATE TABLE census AS
SELECT birth_year, sex, count(*) * 3 AS people FROM licences GROUP BY birth_year, sex;
SELECT rule, measured, threshold, passed
FROM qid_check('licences', ARRAY['birth_year', 'sex'], '{"min_kmap": {"population": "census", "k": 6, "weight": "people"}}');
-- the same figure as kmap_value, and as a plain-SQL join of the classes
SELECT kmap_value('licences', 'census', ARRAY['birth_year', 'sex'], 'people') AS kmap,
	(SELECT min(coalesce(c.people, 0)) FROM (SELECT DISTINCT birth_year, sex FROM licences) r
	 LEFT JOIN census c ON c.birth_year IS NOT DISTINCT FROM r.birth_year AND c.sex IS NOT DISTINCT FROM r.sex) AS plain_sql;
-- mapped population column names, and an unknown population
CREATE TABLE census2 AS SELECT birth_year AS yob, sex AS gender, people FROM census;
SELECT rule, measured, passed
FROM qid_check('licences', ARRAY['birth_year', 'sex'],
			   '{"min_kmap": {"population": "public.census2", "k": 1, "weight": "people", "population_qid": ["yob", "gender"]}}');
SELECT * FROM qid_check('licences', ARRAY['sex'], '{"min_kmap": {"population": "nope", "k": 1}}');
SELECT * FROM qid_check('licences', ARRAY['sex'], '{"min_kmap": {"population": "census"}}');
SELECT * FROM qid_check('licences', ARRAY['sex'], '{"min_kmap": {"population": "census", "k": 2, "weights": "people"}}');
-- QaR risk over the p-column subsets: the same number as qar_risk
CREATE TABLE survey AS
SELECT i AS id, i % 3 AS a, i % 5 AS b, i % 7 AS c, (i * 7) % 11 AS d, (i * 3) % 13 AS e, i % 17 AS f
FROM generate_series(1, 300) AS i;
SELECT rule, round(measured::numeric, 6) AS measured, threshold, passed,
	measured = (SELECT q.risk FROM qar_risk('survey', ARRAY['a', 'b', 'c', 'd', 'e', 'f'], 2, 0.01, 0.3) q)
		AS equals_qar_risk
FROM qid_check('survey', ARRAY['a', 'b', 'c', 'd', 'e', 'f'], '{"max_qar_risk": {"max": 0.5, "p": 2, "pi_u": 0.3}}');
-- "columns" names the candidates when they differ from the QID
SELECT rule, passed FROM qid_check('survey', ARRAY['a'],
	'{"max_qar_risk": {"max": 0.01, "columns": ["a", "b", "c", "d", "e", "f"], "p": 2, "pi_u": 0.3}}');
-- an undefined risk fails its own rule, with the reason; the other rules are measured
SELECT * FROM qid_check('survey', ARRAY['a', 'b'], '{"min_k": 2, "max_qar_risk": {"max": 0.5, "p": 1}}');
-- a p beyond the columns is the policy's error, raised before any scan
SELECT * FROM qid_check('survey', ARRAY['a', 'b'], '{"min_k": 2, "max_qar_risk": {"max": 0.5}}');
SELECT * FROM qid_check('licences', ARRAY['sex'], '{"max_qar_risk": {"max": 1.5}}');
SELECT * FROM qid_check('licences', ARRAY['sex'], '{"max_qar_risk": {"max": 0.5, "columns": "sex"}}');
DROP TABLE census, census2, survey;
DROP PROCEDURE nightly_publication_check();
DROP VIEW recent;
DROP TABLE licences, empty_licences;
