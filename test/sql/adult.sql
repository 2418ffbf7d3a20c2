-- UCI Adult (data/adult, CC BY 4.0): the figures of Lodha & Thomas (2008), Fig. 3
\i data/load_adult.sql
SELECT count(*) FROM adult;
-- {age, hours-per-week}: 986 singletons
SELECT singleton_count(age, hours_per_week) FROM adult;
-- all ten public columns: 24,802 singletons
SELECT singleton_count(age, workclass, education, marital_status, occupation,
	relationship, race, sex, hours_per_week, native_country) FROM adult;
-- the same figures from plain SQL
SELECT count(*) FROM (SELECT 1 FROM adult GROUP BY age, hours_per_week HAVING count(*) = 1) s;
SELECT count(*) FROM (SELECT 1 FROM adult GROUP BY age, workclass, education, marital_status,
	occupation, relationship, race, sex, hours_per_week, native_country HAVING count(*) = 1) s;
-- the distinct counts per column: 73, 9, 16, 7, 15, 6, 5, 2, 94, 42
SELECT class_count(age), class_count(workclass), class_count(education), class_count(marital_status),
	class_count(occupation), class_count(relationship), class_count(race), class_count(sex),
	class_count(hours_per_week), class_count(native_country) FROM adult;
-- a profile per sex
SELECT sex, (p).rows, (p).classes, (p).singletons, round((p).singleton_share::numeric, 4) AS share,
	(p).k_anonymity, (p).largest_class, rows_below(p, 5) AS below_5
FROM (SELECT sex, class_profile(age, race, native_country) AS p FROM adult GROUP BY sex) s
ORDER BY sex;
SELECT h.* FROM (SELECT class_profile(age, race, sex) AS p FROM adult) s,
	class_histogram(s.p) h WHERE h.class_size <= 5;
