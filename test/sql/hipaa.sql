-- HIPAA Safe Harbor, 45 CFR 164.514(b)(2): the SQL of docs/hipaa_safe_harbor.md
-- (a synthetic population; every value is a function of the row number)
CREATE TABLE zip3_population (zip3 text PRIMARY KEY, people bigint);
INSERT INTO zip3_population
SELECT lpad(i::text, 3, '0'), CASE WHEN i % 4 = 0 THEN 5000 + 300 * i ELSE 30000 + 1000 * i END
FROM generate_series(10, 39) AS i;
CREATE TABLE visits (patient int, zip5 text, birth_date date, admitted date);
INSERT INTO visits
SELECT i, lpad((10 + i % 30)::text, 3, '0') || lpad((i % 97)::text, 2, '0'),
	date '1915-01-01' + (i * 7919) % 32000, date '2024-01-01' + (i * 31) % 366
FROM generate_series(1, 2000) AS i;

-- the three rules: ZIP3 of areas with 20,000 people or fewer becomes 000,
-- ages above 89 become 90 or older, dates keep their year only
CREATE VIEW visits_safe_harbor AS
SELECT v.patient,
	CASE WHEN p.people > 20000 THEN left(v.zip5, 3) ELSE '000' END AS zip3,
	CASE WHEN age > 89 THEN '90+' ELSE age::text END AS age,
	extract(year FROM v.admitted)::int AS admitted_year
FROM visits v
LEFT JOIN zip3_population p ON p.zip3 = left(v.zip5, 3),
	LATERAL (SELECT extract(year FROM age(v.admitted, v.birth_date))::int AS age) a;

-- which ZIP3 areas were suppressed, and how many visits they held
SELECT p.zip3, p.people, count(v.patient) AS visits
FROM zip3_population p LEFT JOIN visits v ON left(v.zip5, 3) = p.zip3
WHERE p.people <= 20000 GROUP BY 1, 2 ORDER BY 1;
-- the released columns: rows, classes, singletons before and after
SELECT 'raw' AS release, (class_profile(zip5, birth_date, admitted)).*
FROM visits
UNION ALL
SELECT 'safe harbor', (class_profile(zip3, age, admitted_year)).*
FROM visits_safe_harbor;
-- Safe Harbor alone still leaves unique people; quantile buckets of age with
-- at least 5 visits each remove them within each ZIP3 area
WITH ages AS (
	SELECT patient, zip3, extract(year FROM age(v.admitted, v.birth_date))::int AS age
	FROM visits_safe_harbor s JOIN visits v USING (patient)
), cuts AS (
	SELECT zip3, quantile_cuts(least(age, 90), 5) AS c FROM ages GROUP BY zip3
)
SELECT k_anonymity(a.zip3, quantile_bucket_label(least(a.age, 90), c.c)) AS k,
	singleton_count(a.zip3, quantile_bucket_label(least(a.age, 90), c.c)) AS singletons
FROM ages a JOIN cuts c USING (zip3);
DROP VIEW visits_safe_harbor;
DROP TABLE visits, zip3_population;
