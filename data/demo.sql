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
