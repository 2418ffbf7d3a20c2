-- qidrisk demo: a re-identification risk report on UCI Adult (data/adult, CC BY 4.0).
-- Run from the repository's top folder: psql -f data/demo.sql
\set QUIET 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS qidrisk;
DROP TABLE IF EXISTS adult, adult_release;
DROP TABLE IF EXISTS adult_hierarchy_age, adult_hierarchy_workclass, adult_hierarchy_education,
	adult_hierarchy_marital_status, adult_hierarchy_occupation, adult_hierarchy_race, adult_hierarchy_sex,
	adult_hierarchy_native_country;
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
	birthday_max_group_size_exact(0.5, ARRAY[age::text, sex]) AS "largest group unique with probability >= 50 %"
FROM adult;

\echo 'Which column combinations are dangerous? qid_search over every set of up to 3 of the ten public columns'
\echo
SELECT array_to_string(columns, ', ') AS "columns", singletons AS "singletons",
	to_char(100 * singleton_share, 'FM990.00') || ' %' AS "unique", classes AS "classes"
FROM qid_search('adult', ARRAY['age', 'workclass', 'education', 'marital_status', 'occupation',
	'relationship', 'race', 'sex', 'hours_per_week', 'native_country'], max_size => 3)
LIMIT 5;

\echo 'Cheapest fix for (age, sex, race, native_country): what-ifs against a target of k = 5 with at most'
\echo '2 % of the rows (651) left in smaller classes to suppress; none of them changes the table'
\echo
CREATE TEMP TABLE country_us_or_elsewhere AS
SELECT DISTINCT native_country AS "from",
	CASE WHEN native_country = 'United-States' THEN native_country ELSE 'elsewhere' END AS "to"
FROM adult;
SELECT name AS "generalization",
	CASE WHEN name = 'none' THEN '' WHEN local THEN 'singletons only' ELSE 'every row' END AS "rows touched",
	k_anonymity AS "k before suppression", rows_below_k AS "rows in classes < 5", rows_modified AS "rows modified",
	values_changed AS "values changed", CASE WHEN meets_target THEN 'yes' ELSE 'no' END AS "meets target",
	CASE WHEN best THEN '<- best' ELSE '' END AS " "
FROM qid_generalize('adult', ARRAY['age', 'sex', 'race', 'native_country'], '[
	{"name": "age in ranges of >= 500 people", "columns": {"age": {"range": 500}}},
	{"name": "age in ranges of >= 500 people", "local": true, "columns": {"age": {"range": 500}}},
	{"name": "country suppressed", "columns": {"native_country": {"constant": "*"}}},
	{"name": "country suppressed", "local": true, "columns": {"native_country": {"constant": "*"}}},
	{"name": "both", "local": true,
	 "columns": {"age": {"range": 500}, "native_country": {"constant": "*"}}},
	{"name": "age in ranges of >= 800 people, country: US or elsewhere",
	 "columns": {"age": {"range": 800}, "native_country": {"map": "pg_temp.country_us_or_elsewhere"}}}]',
	k => 5, max_suppressed => 0.02);

\echo 'A release of eight quasi-identifiers with k = 5, at most 2 % of the rows suppressed and 2 incomes in'
\echo 'every class: qid_lattice classifies the 4,320 generalizations of the UCI Adult hierarchies'
\echo
\i data/load_adult_hierarchies.sql
CREATE TEMP TABLE h AS SELECT '{"age": "adult_hierarchy_age", "workclass": "adult_hierarchy_workclass",
	"education": "adult_hierarchy_education", "marital_status": "adult_hierarchy_marital_status",
	"occupation": "adult_hierarchy_occupation", "race": "adult_hierarchy_race",
	"sex": "adult_hierarchy_sex", "native_country": "adult_hierarchy_native_country"}'::jsonb AS h;
SELECT count(*) AS "nodes", count(*) FILTER (WHERE anonymous) AS "reach the target",
	count(*) FILTER (WHERE minimal) AS "minimal", count(*) FILTER (WHERE evaluated) AS "evaluated",
	(array_agg(levels::text) FILTER (WHERE best))[1] AS "best node (discernibility)",
	(array_agg(rows_suppressed) FILTER (WHERE best))[1] AS "rows suppressed"
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
	h.h, 5, 0.02, 'income', 2);

\echo 'The release written to a new table (adult is unchanged), then measured again on that table'
\echo
SELECT node AS "node", rows_released AS "rows released", rows_suppressed AS "rows suppressed",
	to_char(100.0 * rows_suppressed / (rows_released + rows_suppressed), 'FM990.00') || ' %' AS "suppressed",
	k_anonymity AS "k", l_diversity AS "l"
FROM h, qid_anonymize_into('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
	h.h, 'adult_release', 5, 0.02, 'income', 2);
SELECT k_anonymity(age, workclass, education, marital_status, occupation, race, sex, native_country) AS "k level",
	l_diversity(income, age, workclass, education, marital_status, occupation, race, sex, native_country) AS "l (income)",
	round(entropy_l_diversity(income, age, workclass, education, marital_status, occupation, race, sex,
		native_country)::numeric, 3) AS "entropy l",
	round(t_closeness(income, age, workclass, education, marital_status, occupation, race, sex,
		native_country)::numeric, 3) AS "t (income)"
FROM adult_release;

\echo 'Does it pass tonight''s policy? qid_check on the eight quasi-identifiers, the original and the release'
\echo
SELECT t.name AS "table", c.rule AS "rule", round(c.measured::numeric, 4) AS "measured",
	c.threshold AS "threshold", CASE WHEN c.passed THEN 'pass' ELSE 'FAIL' END AS "result"
FROM (VALUES (1, 'adult'), (2, 'adult_release')) AS t(i, name),
	qid_check(t.name::regclass, '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
		'{"min_k": 5, "max_singleton_share": 0.01, "min_l": {"sensitive": "income", "l": 2},
		  "max_birthday_uniqueness": {"group_size": 20, "max": 0.05}}') AS c
ORDER BY t.i;

\echo 'Dataset risk without choosing a QID: QaR over every 3 of the 14 columns (Bera et al.)'
\echo
SELECT round(risk::numeric, 4) AS "risk T(3, 0.01)", round(u::numeric, 4) AS "u", n_p AS "subsets",
	n_u AS "exceedances", round(xi::numeric, 3) AS "xi", round(beta::numeric, 3) AS "beta", fit_method AS "fit"
FROM qar_risk('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num', 'marital_status',
	'occupation', 'relationship', 'race', 'sex', 'capital_gain', 'capital_loss', 'hours_per_week',
	'native_country']);
