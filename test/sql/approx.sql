-- Approximate estimators (distinct sampling) and the distributed path (qid_key)
-- a fixed sampling key, so that the estimates below repeat from run to run
SET qidrisk.sample_seed = 1;
CREATE TABLE approx_people AS
SELECT i AS id,
	1930 + (hashint4(i) & 63) AS birth_year,
	CASE WHEN hashint4(-i) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
	lpad((abs(hashint4(i + 7)) % 3000)::text, 5, '0') AS zip
FROM generate_series(1, 50000) i;
ANALYZE approx_people;

-- fewer classes than the capacity: exact, standard errors 0
SELECT * FROM (SELECT (approx_class_profile(1024, sex, birth_year)).* FROM approx_people) p;
SELECT (p).rows, (p).classes, (p).singletons, (p).class_sizes, (p).class_counts
FROM (SELECT class_profile(sex, birth_year) AS p FROM approx_people) e;

-- more classes than the capacity: estimates, and the exact figures
SELECT rows, classes, round(classes_se) AS classes_se, singletons, round(singletons_se) AS singletons_se,
	sampling_rate, sampled_classes, class_sizes[1:3], class_counts[1:3]
FROM (SELECT (approx_class_profile(256, birth_year, sex, zip)).* FROM approx_people) p;
SELECT class_count(birth_year, sex, zip), singleton_count(birth_year, sex, zip) FROM approx_people;
SELECT approx_class_count(birth_year, sex, zip), approx_singleton_count(birth_year, sex, zip) FROM approx_people;
SELECT round(low) AS low, round(high) AS high
FROM (SELECT (approx_class_profile(256, birth_year, sex, zip)).* FROM approx_people) p,
	approx_interval(p.singletons, p.singletons_se, p.sampling_rate);
SELECT * FROM approx_interval(0, 0, 0.125, 0.95);
SELECT * FROM approx_interval(100, 0, 1);
SELECT approx_singleton_count(zip) FROM approx_people WHERE false;

-- qid_key: equal values under the type's equality give equal keys
SELECT qid_key(1930, 'F'::text, '00042'::text);
SELECT qid_key(1.0::numeric) = qid_key(1.00::numeric) AS numeric_equal,
	qid_key(NULL::integer) = qid_key(NULL::integer) AS nulls_equal,
	qid_key(1, 2) <> qid_key(2, 1) AS order_matters,
	qid_key(1::integer) <> qid_key(1::bigint) AS types_matter;
CREATE COLLATION approx_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT qid_key('Ab'::text COLLATE approx_ci) = qid_key('aB'::text COLLATE approx_ci) AS ci_equal,
	qid_key('Ab'::text COLLATE "C") = qid_key('aB'::text COLLATE "C") AS c_equal;
-- each argument keeps its own collation, as in the aggregates
CREATE TABLE approx_mixed (a text COLLATE "C", b text COLLATE approx_ci);
INSERT INTO approx_mixed VALUES ('x', 'Y'), ('x', 'y'), ('X', 'y'), ('X', NULL), (NULL, NULL);
SELECT singleton_count(a, b), singleton_count_key(qid_key(a, b)), class_count_key(qid_key(a, b)) FROM approx_mixed;

-- the key aggregates equal the VARIADIC ones
SELECT singleton_count_key(k) = singleton_count(birth_year, sex, zip) AS singletons,
	class_count_key(k) = class_count(birth_year, sex, zip) AS classes,
	k_anonymity_key(k) = k_anonymity(birth_year, sex, zip) AS k_level,
	rows_below_k_key(3, k) = rows_below_k(3, birth_year, sex, zip) AS below3,
	class_profile_key(k) = class_profile(birth_year, sex, zip) AS profile,
	approx_class_profile_key(256, k) = approx_class_profile(256, birth_year, sex, zip) AS approx_profile,
	approx_singleton_count_key(k) = approx_singleton_count(birth_year, sex, zip) AS approx_singletons,
	approx_class_count_key(k) = approx_class_count(birth_year, sex, zip) AS approx_classes
FROM (SELECT *, qid_key(birth_year, sex, zip) AS k FROM approx_people) p;
SELECT singleton_count_key(NULL::uuid), class_profile_key(NULL::uuid), approx_class_count_key(NULL::uuid);

-- moving windows over the key
SELECT bool_and(a = b) AS window_equal FROM (
	SELECT singleton_count_key(qid_key(sex, birth_year)) OVER w AS a,
		singleton_count(sex, birth_year) OVER w AS b
	FROM approx_people WHERE id <= 2000
	WINDOW w AS (ORDER BY id ROWS BETWEEN 50 PRECEDING AND CURRENT ROW)) s;

-- forced parallel plans: partial states are serialized and combined
CREATE TABLE approx_serial_answers AS
SELECT approx_class_profile(256, birth_year, sex, zip) AS p,
	class_profile_key(qid_key(birth_year, sex, zip)) AS ck
FROM approx_people;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT approx_class_profile(256, birth_year, sex, zip), class_profile_key(qid_key(birth_year, sex, zip)) FROM approx_people;
SELECT approx_class_profile(256, birth_year, sex, zip) = s.p AS approx_equal,
	class_profile_key(qid_key(birth_year, sex, zip)) = s.ck AS key_equal
FROM approx_people, approx_serial_answers s GROUP BY s.p, s.ck;
EXPLAIN (COSTS OFF)
SELECT sex, approx_singleton_count(birth_year, zip) FROM approx_people GROUP BY sex;
SELECT sex, approx_singleton_count(birth_year, zip), singleton_count_key(qid_key(birth_year, zip))
FROM approx_people GROUP BY sex ORDER BY sex;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 0;
SELECT sex, approx_singleton_count(birth_year, zip), singleton_count_key(qid_key(birth_year, zip))
FROM approx_people GROUP BY sex ORDER BY sex;

-- the Citus shapes on a hash-partitioned table ("shards" = partitions,
-- "distribution column" = zip): grouped by the distribution column, each
-- partition aggregates whole (pushdown); otherwise partial states per
-- partition are combined on top (the split Citus makes through SERIALFUNC)
CREATE TABLE approx_people_parts (LIKE approx_people) PARTITION BY HASH (zip);
CREATE TABLE approx_people_parts_0 PARTITION OF approx_people_parts FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE approx_people_parts_1 PARTITION OF approx_people_parts FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE approx_people_parts_2 PARTITION OF approx_people_parts FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO approx_people_parts SELECT * FROM approx_people;
ANALYZE approx_people_parts;
SET enable_partitionwise_aggregate = on;
EXPLAIN (COSTS OFF)
SELECT approx_class_profile_key(256, qid_key(birth_year, sex, zip)) FROM approx_people_parts;
SELECT approx_class_profile_key(256, qid_key(birth_year, sex, zip)) = s.p AS partitionwise_equal
FROM approx_people_parts, approx_serial_answers s GROUP BY s.p;
EXPLAIN (COSTS OFF)
SELECT zip, singleton_count_key(qid_key(birth_year, sex)) FROM approx_people_parts GROUP BY zip;
SELECT count(*) AS groups_differing FROM (
	(SELECT zip, singleton_count_key(qid_key(birth_year, sex)), approx_class_count_key(qid_key(birth_year, sex))
	 FROM approx_people_parts GROUP BY zip)
	EXCEPT
	(SELECT zip, singleton_count(birth_year, sex), approx_class_count(birth_year, sex)
	 FROM approx_people GROUP BY zip)) d;
-- qid_key is IMMUTABLE: it can be a stored generated column, and a table
-- distributed (here: hash-partitioned) by the key holds each class in one
-- shard, so plain GROUP BY key runs whole in every shard
CREATE TABLE approx_keyed (LIKE approx_people, k uuid) PARTITION BY HASH (k);
CREATE TABLE approx_keyed_0 PARTITION OF approx_keyed FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE approx_keyed_1 PARTITION OF approx_keyed FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE approx_keyed_2 PARTITION OF approx_keyed FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO approx_keyed SELECT *, qid_key(birth_year, sex, zip) FROM approx_people;
ANALYZE approx_keyed;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM (SELECT k FROM approx_keyed GROUP BY k HAVING count(*) = 1) s;
SELECT count(*) = (SELECT singleton_count(birth_year, sex, zip) FROM approx_people) AS keyed_equal
FROM (SELECT k FROM approx_keyed GROUP BY k HAVING count(*) = 1) s;
ALTER TABLE approx_people ADD COLUMN key uuid GENERATED ALWAYS AS (qid_key(birth_year, sex, zip)) STORED;
SELECT singleton_count_key(key) = singleton_count(birth_year, sex, zip) AS generated_equal FROM approx_people;
RESET enable_partitionwise_aggregate;
RESET max_parallel_workers_per_gather;

-- bad input
SELECT approx_class_profile(NULL, zip) FROM approx_people;
SELECT approx_class_profile(10, zip) FROM approx_people;
SELECT approx_class_profile(CASE WHEN id < 10 THEN 64 ELSE 65 END, zip) FROM approx_people;
SET qidrisk.max_state_memory = 64;
SELECT approx_class_profile(65536, zip) FROM approx_people;
RESET qidrisk.max_state_memory;
SELECT approx_singleton_count(VARIADIC ARRAY[zip]) FROM approx_people;
SELECT approx_class_count('x') FROM approx_people;
SELECT qid_key();
SELECT qid_key(point(1, 1));
SELECT rows_below_k_key(0, qid_key(zip)) FROM approx_people;
SELECT approx_interval(1, 1, 2);
SELECT approx_interval(1, 1, 0.5, 0);

DROP TABLE approx_people, approx_people_parts, approx_keyed, approx_mixed, approx_serial_answers;
DROP COLLATION approx_ci;
