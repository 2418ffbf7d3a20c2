-- Frequency aggregates: behaviour and semantics
CREATE TABLE people (
	id integer,
	birth_year integer,
	sex text,
	zip text,
	region text
);
INSERT INTO people VALUES
	(1, 1980, 'F', '1000', 'north'),
	(2, 1980, 'F', '1000', 'north'),
	(3, 1980, 'M', '1000', 'north'),
	(4, 1975, 'M', '2000', 'north'),
	(5, 1975, 'M', '2000', 'south'),
	(6, 1975, 'M', '2000', 'south'),
	(7, 1990, 'F', '3000', 'south'),
	(8, NULL, 'F', '3000', 'south'),
	(9, NULL, 'F', '3000', 'south'),
	(10, 1990, NULL, NULL, 'south');

SELECT singleton_count(birth_year, sex, zip) FROM people;
SELECT count(*) FROM (SELECT 1 FROM people GROUP BY birth_year, sex, zip HAVING count(*) = 1) s;
SELECT class_count(birth_year, sex, zip), k_anonymity(birth_year, sex, zip),
	rows_below_k(3, birth_year, sex, zip) FROM people;
SELECT (class_profile(birth_year, sex, zip)).* FROM people;
SELECT * FROM class_histogram((SELECT class_profile(birth_year, sex, zip) FROM people));
SELECT rows_below(p, 1), rows_below(p, 2), rows_below(p, 3), rows_below(p, 4)
FROM (SELECT class_profile(birth_year, sex, zip) p FROM people) s;

-- one column, mixed types, many columns
SELECT singleton_count(sex) FROM people;
SELECT singleton_count(id) FROM people;
SELECT singleton_count(birth_year, sex, zip, region, birth_year::numeric, zip::bigint) FROM people;

-- NULL is one more value: two NULLs match, as in GROUP BY
SELECT singleton_count(x) FROM (VALUES (NULL::int), (NULL), (1)) v(x);
SELECT singleton_count(x, y) FROM (VALUES (1, NULL::text), (NULL, '1'), (NULL, NULL), (NULL, NULL)) v(x, y);
-- column order matters: (1, NULL) and (NULL, 1) are different combinations
SELECT class_count(x, y) FROM (VALUES (1, NULL::int), (NULL, 1)) v(x, y);

-- values equal under the type's equality are one value
SELECT singleton_count(x) FROM (VALUES (1.0::numeric), (1.00), (1), (2.50), (2.5)) v(x);
SELECT singleton_count(x) FROM (VALUES ('-0'::float8), (0), ('NaN'), ('NaN'), (1)) v(x);
SELECT singleton_count(x) FROM (VALUES ('-0'::float4), (0::float4)) v(x);
CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT singleton_count(x COLLATE case_insensitive), singleton_count(x COLLATE "C")
FROM (VALUES ('Anna'), ('ANNA'), ('anna'), ('Bob')) v(x);
SELECT count(*) FROM (SELECT 1 FROM (VALUES ('Anna'), ('ANNA'), ('anna'), ('Bob')) v(x)
	GROUP BY x COLLATE case_insensitive HAVING count(*) = 1) s;
-- per-argument collations: each column keeps its own, even when they differ
CREATE TABLE names (x text COLLATE case_insensitive, y text COLLATE "C");
INSERT INTO names VALUES ('a', 'b'), ('A', 'b'), ('a', 'B');
SELECT class_count(x, y), class_count(y, x), class_count(x), class_count(y) FROM names;
SELECT count(*) FROM (SELECT 1 FROM names GROUP BY x, y) s;
-- other hashable types: dates, timestamps, arrays, composites, booleans, uuids
CREATE TYPE pair AS (a integer, b text);
SELECT singleton_count(d, ts, arr, r, b, u), class_count(d, ts, arr, r, b, u)
FROM (VALUES
	('2020-01-01'::date, '2020-01-01 10:00'::timestamptz, ARRAY[1, 2], ROW(1, 'a')::pair, true, '00000000-0000-0000-0000-000000000001'::uuid),
	('2020-01-01', '2020-01-01 10:00', ARRAY[1, 2], ROW(1, 'a')::pair, true, '00000000-0000-0000-0000-000000000001'),
	('2020-01-01', '2020-01-01 10:00', ARRAY[1, 2], ROW(1, 'b')::pair, true, '00000000-0000-0000-0000-000000000001'),
	('2020-01-02', '2020-01-01 10:00', ARRAY[1, 2], ROW(1, 'a')::pair, true, '00000000-0000-0000-0000-000000000001')) v(d, ts, arr, r, b, u);

-- empty input
SELECT singleton_count(x), class_count(x), k_anonymity(x), rows_below_k(2, x) FROM (SELECT 1 WHERE false) v(x);
SELECT (class_profile(x)).* FROM (SELECT 1 WHERE false) v(x);

-- per group, with FILTER, on a view
SELECT region, singleton_count(birth_year, sex, zip), (class_profile(birth_year, sex, zip)).k_anonymity
FROM people GROUP BY region ORDER BY region;
SELECT singleton_count(birth_year, sex) FILTER (WHERE region = 'north'),
	singleton_count(birth_year, sex) FILTER (WHERE region = 'south') FROM people;
CREATE VIEW people_public AS SELECT birth_year / 10 * 10 AS decade, sex FROM people;
SELECT singleton_count(decade, sex), k_anonymity(decade, sex) FROM people_public;

-- window aggregates: running frame, moving frame (inverse transitions), partitions
SELECT id, singleton_count(birth_year, sex) OVER (ORDER BY id) AS running,
	singleton_count(birth_year, sex) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS moving,
	class_count(sex) OVER (PARTITION BY region) AS per_region,
	rows_below_k(2, sex) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS below2
FROM people ORDER BY id;
SELECT id, (class_profile(sex) OVER w).classes, k_anonymity(sex) OVER w
FROM people WINDOW w AS (ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) ORDER BY id;

-- DISTINCT and ORDER BY inside the call are PostgreSQL's, and work
SELECT singleton_count(DISTINCT sex) FROM people;
SELECT singleton_count(sex ORDER BY sex) FROM people;

-- values that core hash functions fold together stay apart: all 64 bits of
-- int8-based types, interval spans, numeric NaN and infinities, array shapes
SELECT class_count(x) FROM (VALUES (1::bigint), (4294967296)) v(x);
SELECT class_count(x) FROM (VALUES ('2020-01-01 00:00'::timestamp), ('2020-01-01 00:00'::timestamp + interval '4294.967296 s')) v(x);
SELECT class_count(x), (SELECT count(DISTINCT y) FROM (VALUES (interval '1 microsecond'), (interval '4294.967296 s'),
	(interval '1 day'), (interval '24 hours'), (interval '1 month'), (interval '30 days'), (interval '-1 hour'),
	(interval '1 day -25 hours')) w(y)) AS distinct_reference
FROM (VALUES (interval '1 microsecond'), (interval '4294.967296 s'), (interval '1 day'), (interval '24 hours'),
	(interval '1 month'), (interval '30 days'), (interval '-1 hour'), (interval '1 day -25 hours')) v(x);
SELECT singleton_count(a, b), k_anonymity(a, b) FROM (VALUES ('NaN'::numeric, 1), ('Infinity', 1), ('-Infinity', 1), ('NaN', 1)) v(a, b);
SELECT class_count(x) FROM (VALUES ('{1,2}'::int[]), ('{{1},{2}}'), ('[0:1]={1,2}'), ('{1,2}')) v(x);

-- a window call sees one collation for all arguments: several collatable
-- columns under a non-deterministic or conflicting collation are refused
SELECT class_count(x, y) OVER () FROM names LIMIT 1;
SELECT class_count(x) OVER () FROM names LIMIT 1;

-- class_size_profile: the profile from class sizes (one row per class), as on
-- a table distributed by a key; NULL sizes ignored; a size below 1 refused
SELECT (class_size_profile(n)).* FROM (SELECT count(*) AS n FROM people GROUP BY birth_year, sex, zip) s;
SELECT (SELECT class_size_profile(n) FROM (SELECT count(*) AS n FROM people GROUP BY birth_year, sex, zip) s)::text
	= (SELECT class_profile(birth_year, sex, zip) FROM people)::text AS same;
SELECT class_size_profile(n) FROM (VALUES (2), (NULL), (1)) v(n);
SELECT class_size_profile(n) FROM (VALUES (2), (0)) v(n);
SELECT class_size_profile(n) FROM (VALUES (9223372036854775807), (1)) v(n);
SELECT qidrisk_internal.qidrisk_class_size_profile_final('{2,1,1,1}');
