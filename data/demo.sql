-- qidrisk demo: a re-identification risk report on UCI Adult (data/adult, CC BY 4.0).
-- Run from the repository's top folder: psql -f data/demo.sql
\set QUIET 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS qidrisk;
DROP TABLE IF EXISTS adult;
\i data/load_adult.sql

\echo
\echo 'qidrisk: re-identification risk report for UCI Adult (32,561 people)'
\echo '======================================================================'
\echo 'How many people are alone in their class on each quasi-identifier?'
\echo

WITH report AS (
	SELECT 1 AS n, 'sex, race' AS quasi_identifier, class_profile(sex, race) AS p FROM adult
	UNION ALL
	SELECT 2, 'age, sex', class_profile(age, sex) FROM adult
	UNION ALL
	SELECT 3, 'age, hours_per_week', class_profile(age, hours_per_week) FROM adult
	UNION ALL
	SELECT 4, 'age, sex, race, native_country', class_profile(age, sex, race, native_country) FROM adult
	UNION ALL
	SELECT 5, 'age, sex, education, occupation', class_profile(age, sex, education, occupation) FROM adult
	UNION ALL
	SELECT 6, 'all ten public columns', class_profile(age, workclass, education, marital_status, occupation,
		relationship, race, sex, hours_per_week, native_country) FROM adult
)
SELECT quasi_identifier AS "quasi-identifier",
	(p).rows AS "rows",
	(p).classes AS "classes",
	(p).singletons AS "singletons",
	to_char(100 * (p).singleton_share, 'FM990.00') || ' %' AS "unique",
	(p).k_anonymity AS "k level",
	rows_below(p, 5) AS "rows in classes < 5"
FROM report ORDER BY n;

\echo 'Class sizes on (age, sex, race, native_country): how many classes hold 1, 2, 3 ... people'
\echo
SELECT h.class_size AS "class size", h.classes AS "classes", h.rows AS "people"
FROM (SELECT class_profile(age, sex, race, native_country) AS p FROM adult) s,
	class_histogram(s.p) h
WHERE h.class_size <= 10;

\echo 'Where are the unique people? Singletons on (age, sex, race, native_country) per workclass'
\echo
SELECT workclass, count(*) AS "rows", singleton_count(age, sex, race, native_country) AS "singletons",
	k_anonymity(age, sex, race, native_country) AS "k level"
FROM adult GROUP BY workclass ORDER BY 3 DESC;

\echo 'If 10, 20 or 30 people of this population are picked at random, how likely is each unique on (age, sex)?'
\echo
SELECT k AS "people", to_char(100 * birthday_uniqueness_exact(k, ARRAY[age::text, sex]), 'FM990.00') || ' %' AS "all unique (exact)",
	to_char(100 * birthday_uniqueness(k, n), 'FM990.00') || ' %' AS "if the values were uniform"
FROM generate_series(10, 30, 10) k, adult, (SELECT class_count(age, sex)::float8 AS n FROM adult) c
GROUP BY k, n ORDER BY k;
SELECT round(kl_uniform(ARRAY[age::text, sex])::numeric, 3) AS "heterogeneity kappa of (age, sex)",
	birthday_max_k_exact(0.5, ARRAY[age::text, sex]) AS "largest group unique with probability >= 50 %"
FROM adult;

\echo 'Which column combinations are dangerous? qid_search over every set of up to 3 of the ten public columns'
\echo
SELECT array_to_string(columns, ', ') AS "columns", singletons AS "singletons",
	to_char(100 * singleton_share, 'FM990.00') || ' %' AS "unique", classes AS "classes"
FROM qid_search('adult', ARRAY['age', 'workclass', 'education', 'marital_status', 'occupation',
	'relationship', 'race', 'sex', 'hours_per_week', 'native_country'], max_size => 3)
LIMIT 5;

\echo 'Cheapest fix for (age, sex, race, native_country): what-ifs, none of which changes the table'
\echo
SELECT name AS "generalization", CASE WHEN local THEN 'singletons only' ELSE 'every row' END AS "rows touched",
	singletons AS "singletons", rows_modified AS "rows modified", classes AS "classes",
	CASE WHEN is_best THEN '<- best' ELSE '' END AS " "
FROM qid_generalize('adult', ARRAY['age', 'sex', 'race', 'native_country'], '[
	{"name": "age in ranges of >= 500 people", "columns": {"age": {"range": 500}}},
	{"name": "age in ranges of >= 500 people", "local": true, "columns": {"age": {"range": 500}}},
	{"name": "country suppressed", "columns": {"native_country": {"constant": "*"}}},
	{"name": "country suppressed", "local": true, "columns": {"native_country": {"constant": "*"}}},
	{"name": "both", "local": true,
	 "columns": {"age": {"range": 500}, "native_country": {"constant": "*"}}}]');

\echo 'Does the release pass tonight''s policy? qid_check on (age, sex, race)'
\echo
SELECT rule AS "rule", setting AS "setting", round(measured::numeric, 4) AS "measured",
	threshold AS "threshold", CASE WHEN passed THEN 'pass' ELSE 'FAIL' END AS "result"
FROM qid_check('adult', ARRAY['age', 'sex', 'race'],
	'{"min_k": 5, "max_singleton_share": 0.01, "max_birthday_uniqueness": {"group_size": 20, "max": 0.05}}');

\echo 'Dataset risk without choosing a QID: QaR over every 3 of the 14 columns (Bera et al.)'
\echo
SELECT round(risk::numeric, 4) AS "risk T(3, 0.01)", round(u::numeric, 4) AS "u", n_p AS "subsets",
	n_u AS "exceedances", round(xi::numeric, 3) AS "xi", round(beta::numeric, 3) AS "beta", fit_method AS "fit"
FROM qar_risk('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num', 'marital_status',
	'occupation', 'relationship', 'race', 'sex', 'capital_gain', 'capital_loss', 'hours_per_week',
	'native_country']);
