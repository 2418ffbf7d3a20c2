-- Probabilistic anonymity and 1-D generalization (Lodha and Thomas 2008)

-- Example 3: (gender, date of birth, ZIP), D = 4e9 in n = 3e8: about 0.93
SELECT round(singleton_fraction_bound(4e9, 3e8)::numeric, 2) AS example_3;
-- Example 4: D = 4e8 in n = 6e9 stays below 0.025; the bound is 1/e at D = n
SELECT round(singleton_fraction_bound(4e8, 6e9)::numeric, 3) AS example_4,
	abs(singleton_fraction_bound(1e6, 1e6) - exp(-1)) < 1e-15 AS continuous_at_n;
-- Theorem 3: a 0.87-quasi-identifier needs D > n / ln(1/0.87)
SELECT round(alpha_qid_threshold(3e8, 0.87)) AS threshold,
	alpha_qid_possible(4e9, 3e8, 0.87) AS gender_dob_zip,
	alpha_qid_possible(4e8, 6e9, 0.5) AS nationality_dob_occupation;
-- Example 6: (0.9, 100)-anonymity of n = 3e8 allows about 2.44e6 partitions
SELECT round(anonymity_partitions(3e8, 100, 0.1)) AS example_6;
-- Example 7: gender keeps its 2 values, date of birth and ZIP about 1.1e3 each
SELECT array(SELECT round(b::numeric) FROM unnest(bucket_budget(anonymity_partitions(3e8, 100, 0.1),
	ARRAY[2, 36500, 42000])) AS b) AS example_7;
-- Example 8 (HIPAA, k = 20,000): gender and age in years kept, about 75 ZIP values
SELECT array(SELECT round(b::numeric) FROM unnest(bucket_budget(anonymity_partitions(3e8, 20000, 0.1),
	ARRAY[2, 100, 42000], ARRAY[1, 'Infinity', 1]::float8[])) AS b) AS example_8;
-- weights shift the budget: twice the weight, twice the values
SELECT array(SELECT round(b::numeric) FROM unnest(bucket_budget(1e6, ARRAY[1e6, 1e6], ARRAY[2, 1])) AS b) AS weighted;

-- quantile_cuts: each bucket's smallest value; Example 9's set {1, 12, 4, 7, 3}
SELECT quantile_cuts(x, 2) AS k2, quantile_cuts(x, 3) AS k3, quantile_cuts(x, 5) AS k5
FROM (VALUES (1), (12), (4), (7), (3)) AS s(x);
-- Definition 9: n = 10 = 3 * 3 + 1 distinct values, k = 3: sizes 3, 3 and 4
SELECT quantile_bucket(x, c) AS bucket, count(*)
FROM generate_series(1, 10) AS x,
	(SELECT quantile_cuts(x, 3) AS c FROM generate_series(1, 10) AS x) AS q
GROUP BY 1 ORDER BY 1;
-- ties are never split: five 1s and one 2 with k = 3 make one bucket
SELECT quantile_cuts(x, 3) FROM unnest(ARRAY[1, 1, 1, 1, 1, 2]) AS x;
-- ... and 1,1,2,2,2,3 with k = 2 makes two
SELECT quantile_cuts(x, 2) FROM unnest(ARRAY[1, 1, 2, 2, 2, 3]) AS x;
-- NULLs are not counted and stay NULL; no rows gives NULL
SELECT quantile_cuts(x, 2) AS with_nulls, quantile_bucket(NULL::int, ARRAY[1, 3]) AS null_bucket
FROM unnest(ARRAY[1, NULL, 2, NULL, 3, 4]) AS x;
SELECT quantile_cuts(x, 2) AS empty FROM generate_series(1, 0) AS x;
-- other types
SELECT quantile_cuts(d, 2) FROM unnest(ARRAY['2020-01-05', '2020-01-01', '2020-03-01', '2020-02-01']::date[]) AS d;
SELECT quantile_cuts(x, 2) FROM unnest(ARRAY[1.5, 1.50, 2.25, -0.5]::numeric[]) AS x;
SELECT quantile_cuts(x, 2) FROM unnest(ARRAY[0.5, -0.0, 0.0, 2]::float8[]) AS x;
SELECT quantile_cuts(x, 2) FROM unnest(ARRAY['b', 'a', 'd', 'c']) AS x;

-- mapping: number, range, label, representative; 0 below the first cut
SELECT x, quantile_bucket(x, ARRAY[10, 20, 30]) AS bucket,
	quantile_bucket_range(x, ARRAY[10, 20, 30]) AS range,
	quantile_bucket_label(x, ARRAY[10, 20, 30]) AS label,
	quantile_bucket_value(x, ARRAY[10, 20, 30], ARRAY[12, 25, 31]) AS representative,
	width_bucket(x, ARRAY[10, 20, 30]) AS builtin
FROM unnest(ARRAY[5, 10, 19, 20, 35]) AS x;
SELECT quantile_bucket_range('2020-02-15'::date, ARRAY['2020-01-01', '2020-02-01', '2020-03-01']::date[]),
	quantile_bucket_range(2.5::numeric, ARRAY[1, 2, 3]::numeric[]),
	quantile_bucket_range(7::bigint, ARRAY[1, 5]::bigint[]);
-- medians and means of each bucket
SELECT quantile_medians(x, c) AS medians, quantile_means(x, c) AS means
FROM generate_series(1, 10) AS x, (SELECT ARRAY[1, 4, 7] AS c) AS q;

-- optimal_cuts: the dynamic program; 1,2,3 | 10,11,12 beats balanced quantiles
SELECT optimal_cuts(x, 2) AS sse, optimal_cuts(x, 2, 'k_median') AS kmedian,
	optimal_cuts(x, 2, 'k_center') AS kcenter, quantile_cuts(x, 2) AS quantiles
FROM unnest(ARRAY[1, 2, 3, 10, 11, 12, 13, 30]) AS x;

-- quantile_cuts_approx keeps every row when the sample is larger than the table
SELECT quantile_cuts_approx(x % 17, 20) = quantile_cuts(x % 17, 20) AS exact_when_all_sampled,
	quantile_sample_size(0.001, 0.01) AS default_sample
FROM generate_series(1, 1000) AS x;

-- utility; Example 11: {1, 12, 4, 7, 3} mapped to 3, 7, 3, 7, 3 has rank difference 3
SELECT (generalization_utility(x, g)).*
FROM (VALUES (1, 3), (12, 7), (4, 3), (7, 7), (3, 3)) AS s(x, g);

-- categorical generalization through a child -> parent hierarchy
CREATE TABLE places (child text, parent text);
INSERT INTO places VALUES ('02138', 'Cambridge'), ('02139', 'Cambridge'), ('02446', 'Brookline'),
	('Cambridge', 'Middlesex'), ('Brookline', 'Norfolk'), ('Middlesex', 'MA'), ('Norfolk', 'MA');
CREATE TABLE patients (zip text);
INSERT INTO patients VALUES ('02138'), ('02138'), ('02139'), ('02446'), ('02446'), ('02446'), (NULL);
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 3);
-- NULL cannot climb a hierarchy: it stays NULL and counts towards neither limit
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', min_rows => 2);

-- bad input: each gets a clear error and its SQLSTATE
\set VERBOSITY sqlstate
SELECT quantile_cuts(x, 0) FROM generate_series(1, 3) AS x;
SELECT quantile_cuts(x, 4) FROM generate_series(1, 3) AS x;
SELECT quantile_cuts(x, NULL) FROM generate_series(1, 3) AS x;
SELECT quantile_cuts(x, 1) FROM unnest(ARRAY[1, 'NaN']::float8[]) AS x;
SELECT quantile_cuts(p, 1) FROM (VALUES (point(1, 2))) AS s(p);
SELECT optimal_cuts(x, 1, 'k_means') FROM generate_series(1, 3) AS x;
SELECT optimal_cuts(x, 1) FROM unnest(ARRAY['a', 'b']) AS x;
SELECT quantile_means(d, ARRAY[current_date]) FROM (VALUES (current_date)) AS s(d);
SELECT quantile_medians(x, ARRAY[5]) FROM generate_series(1, 10) AS x;
SELECT quantile_medians(x, ARRAY[5, 2]) FROM generate_series(1, 10) AS x;
SELECT quantile_bucket(1, ARRAY[1.5]);
SELECT quantile_bucket(1, ARRAY[1, NULL]);
SELECT quantile_cuts_approx(x, 2, 0, 0.5) FROM generate_series(1, 3) AS x;
SELECT singleton_fraction_bound(0, 10);
SELECT alpha_qid_possible(10, 10, 0.4);
SELECT anonymity_partitions(1e6, 1, 0.1);
SELECT anonymity_partitions(1e6, 10, 1);
SELECT bucket_budget(1e6, ARRAY[10, NULL]);
SELECT bucket_budget(1e6, ARRAY[10, 20], ARRAY[1]);
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places');
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 0);
INSERT INTO places VALUES ('MA', '02138');
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 1);
DELETE FROM places WHERE child = 'MA';
INSERT INTO places VALUES ('02138', 'Boston');
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 1);
DELETE FROM places WHERE parent = 'Boston';
SELECT * FROM hierarchy_generalize('patients', 'zip', 'places', min_rows => 100);
SELECT * FROM column_distinct_counts('patients', ARRAY['nope']);
SELECT * FROM column_distinct_counts('patients', ARRAY['zip'], estimated => true);
\set VERBOSITY default
DROP TABLE patients, places;
