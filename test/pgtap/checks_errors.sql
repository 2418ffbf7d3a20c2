-- Bad input to the pre-publication checks (qid_check, qid_assert): every case
-- raises its documented SQLSTATE before any scan, a bad policy is never
-- mistaken for a failed check (22023, not QR001), no history row is written,
-- and nothing else changes.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(76 + 18);

CREATE TABLE people (age integer, zip text);
INSERT INTO people SELECT 20 + i % 5, 'z' || i % 3 FROM generate_series(1, 60) i;
-- for min_kmap and max_qar_risk
CREATE TABLE census AS SELECT age, count(*) * 3 AS cnt, 'x'::text AS wt FROM people GROUP BY age;
CREATE TABLE empty_t (age integer, zip text);
CREATE ROLE qidrisk_e_nocensus;
GRANT SELECT ON people TO qidrisk_e_nocensus;

-- What must not change: table contents, objects, the history
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) FROM people p),
					 (SELECT count(*) FROM qid_check_history),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type))
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(format('SELECT * FROM qid_check(%s, %s, %L, true)', rel, qid, policy), code, NULL,
				 format('qid_check(%s, %s, %s) -> %s', rel, qid, policy, code))
FROM (VALUES
	('NULL', $$ARRAY['age']$$, '{"min_k": 2}', '22004'),
	($$'people'$$, 'NULL', '{"min_k": 2}', '22004'),
	($$'people'$$, $$ARRAY['age']$$, NULL, '22004'),
	($$'nope'$$, $$ARRAY['age']$$, '{"min_k": 2}', '42P01'),
	($$'people'$$, 'ARRAY[]::text[]', '{"min_k": 2}', '22023'),
	($$'people'$$, $$ARRAY['nope']$$, '{"min_k": 2}', '42703'),
	($$'people'$$, $$ARRAY['age', NULL]$$, '{"min_k": 2}', '42703'),
	($$'people'$$, $$ARRAY['AGE']$$, '{"min_k": 2}', '42703'),
	($$'people'$$, $$ARRAY['age']$$, '[{"min_k": 2}]', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '5', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": 2, "k_map": 3}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"MIN_K": 2}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": 0}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": 2.5}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": "2"}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": null}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": true}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_k": 1e400}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_singleton_share": -1e400}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_singleton_share": -0.1}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_singleton_share": 1.5}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_singleton_share": [0.1]}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": 3}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": {"k": 3}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": {"max": 3}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": {"k": 0, "max": 3}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": {"k": 3, "max": -1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": {"k": 3, "max": 1, "share": 0.1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_rows_below_k": {"k": 3e10, "max": 1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_birthday_uniqueness": {"group_size": 0, "max": 0.5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_birthday_uniqueness": {"group_size": 2, "max": 1.5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_birthday_uniqueness": {"group_size": 2}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_birthday_uniqueness": {"k": 2, "max": 0.5}}', '22023'),
	-- min_kmap
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": 3}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census"}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"k": 2}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": 5, "k": 2}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": null, "k": 2}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "a;b", "k": 2}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "nope", "k": 2}}', '42P01'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 0}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2.5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": "2"}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 1e400}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "extra": 1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "weight": 5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "weight": "nope"}}', '42703'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "weight": "wt"}}', '42804'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "population_qid": "age"}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "population_qid": [null]}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "population_qid": [1]}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "population_qid": ["age", "cnt"]}}', '2202E'),
	($$'people'$$, $$ARRAY['age']$$, '{"min_kmap": {"population": "census", "k": 2, "population_qid": ["wt"]}}', '42804'),
	($$'people'$$, $$ARRAY['zip']$$, '{"min_kmap": {"population": "census", "k": 2}}', '42703'),
	-- max_qar_risk
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": 0.5}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 1.5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": -0.1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": "0.5"}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "extra": 1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "p": 0}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "p": 2.5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "p": 1e400}}', '22023'),
	($$'people'$$, $$ARRAY['age', 'zip']$$, '{"max_qar_risk": {"max": 0.5, "p": 3}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "alpha": 0}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "alpha": 1}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "alpha": null}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "pi_u": 0}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "pi_u": 1.5}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "columns": []}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "columns": "age"}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "columns": [null]}}', '22023'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "columns": ["nope"]}}', '42703'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "columns": ["age", "age"]}}', '42701'),
	($$'people'$$, $$ARRAY['age']$$, '{"max_qar_risk": {"max": 0.5, "columns": ["age", "nope"], "p": 5}}', '42703'),
	($$'people'$$, $$ARRAY['age', 'zip']$$, '{"max_qar_risk": {"max": 0.5, "columns": ["zip", "age", "zip"], "p": 1}}', '42701')
) AS c(rel, qid, policy, code);

SELECT throws_ok($$SELECT * FROM qid_check('people', ARRAY['age'], '{"min_k": 2}', NULL)$$, '22004', NULL,
				 'qid_check with record_history NULL -> 22004');
SELECT throws_ok($$CALL qid_assert('people', ARRAY['age'], '{"min_k": 0}')$$, '22023', NULL,
				 'qid_assert with a bad policy raises 22023, not QR001');
SELECT throws_ok($$CALL qid_assert('people', ARRAY['nope'], '{"min_k": 2}')$$, '42703', NULL,
				 'qid_assert with an unknown column raises 42703, not QR001');
SELECT throws_ok($$CALL qid_assert(NULL, ARRAY['age'], '{"min_k": 2}')$$, '22004', NULL,
				 'qid_assert with a NULL table raises 22004');
SELECT throws_ok($$CALL qid_assert('people', ARRAY['age'], '{"min_kmap": {"population": "census", "k": 0}}')$$, '22023', NULL,
				 'qid_assert with a bad min_kmap raises 22023, not QR001');
SELECT throws_ok($$CALL qid_assert('people', ARRAY['age'], '{"max_qar_risk": {"max": 2}}')$$, '22023', NULL,
				 'qid_assert with a bad max_qar_risk raises 22023, not QR001');
SELECT throws_ok($$SELECT * FROM qid_check('people', ARRAY['age'], '{"min_kmap": {"population": "census", "k": 0}}', true)$$, '22023', NULL,
				 'a bad min_kmap with record_history raises 22023 (and writes no row)');
SELECT throws_ok($$SET LOCAL ROLE qidrisk_e_nocensus; SELECT * FROM qid_check('people', ARRAY['age'], '{"min_kmap": {"population": "census", "k": 1}}')$$, '42501', NULL,
				 'min_kmap against a population the role cannot read: 42501');

SELECT is(pg_temp.snapshot(), s, 'nothing changed: table, history and objects') FROM before;
SELECT throws_ok($$SELECT * FROM qid_check('people', ARRAY['age'], '{"nope": 1}')$$, '22023',
				 'unknown qid_check policy rule "nope"', 'the message names the unknown rule');
SELECT throws_ok($$SELECT * FROM qid_check('people', ARRAY['age'], '{"min_k": 0}')$$, '22023',
				 'policy rule min_k must be a whole number at least 1, not 0', 'the message names the rule and the bad value');
SELECT is((SELECT count(*) FROM qid_check('people', ARRAY['age', 'zip'], '{"min_k": 2}')), 1::bigint,
		  'qid_check still works after the errors');

-- An undefined QaR risk is decided by the data, not the policy: that rule
-- fails (its reason in a WARNING, the history and QR001's detail), never
-- passes, and the others are measured
SET client_min_messages = error;
SELECT results_eq($$SELECT rule, measured, passed
					FROM qid_check('people', ARRAY['age', 'zip'], '{"min_k": 2, "max_qar_risk": {"max": 1, "p": 2}}')$$,
				  $$VALUES ('min_k', 4::float8, true), ('max_qar_risk', NULL, false)$$,
				  'an undefined QaR risk (one 2-column subset) fails its rule alone, measured NULL');
SELECT results_eq($$SELECT rule, measured, passed
					FROM qid_check('empty_t', ARRAY['age'], '{"min_k": 5, "max_qar_risk": {"max": 0.5, "p": 1}}')$$,
				  $$VALUES ('min_k', NULL::float8, true), ('max_qar_risk', NULL, false)$$,
				  'an empty table passes min_k but fails max_qar_risk, whose risk it leaves undefined');
SELECT throws_ok($$CALL qid_assert('people', ARRAY['age', 'zip'], '{"min_k": 2, "max_qar_risk": {"max": 1, "p": 2}}')$$,
				 'QR001', 'qidrisk policy check failed for public.people: max_qar_risk',
				 'qid_assert raises QR001 for an undefined QaR risk, naming that rule');
SELECT is((SELECT count(*) FROM qid_check('people', ARRAY['age', 'zip'],
											'{"min_k": 2, "max_qar_risk": {"max": 1, "p": 2}}', true)), 2::bigint,
		  'a check with an undefined QaR risk is recorded');
SELECT is((SELECT array_agg(results -> 1 ->> 'note' LIKE 'QaR risk is undefined%') FROM qid_check_history
		   WHERE policy ? 'max_qar_risk'), ARRAY[true],
		  'the history row keeps the note of the rule that could not be measured');
SET client_min_messages = warning;

DROP OWNED BY qidrisk_e_nocensus;
DROP ROLE qidrisk_e_nocensus;

SELECT * FROM finish();
ROLLBACK;
