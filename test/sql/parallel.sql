-- Partial aggregation: parallel workers, partitionwise plans, serialization
CREATE TABLE pop AS
SELECT i AS id,
	1930 + abs(hashint4(i) % 90) AS birth_year,
	CASE WHEN hashint4(-i) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
	lpad(abs(hashint4(i + 1000000) % 5000)::text, 5, '0') AS zip,
	CASE WHEN i % 97 = 0 THEN NULL ELSE (i % 13)::numeric / 4 END AS score
FROM generate_series(1, 200000) i;
ANALYZE pop;

-- the serial answers, and the plain-SQL reference
CREATE TABLE serial_answers AS
SELECT singleton_count(birth_year, sex, zip) AS singletons,
	class_count(birth_year, sex, zip) AS classes,
	k_anonymity(birth_year, zip) AS k_level,
	rows_below_k(5, birth_year, sex, zip) AS below5,
	class_profile(sex, score) AS profile,
	class_profile(birth_year, sex, zip) AS wide_profile
FROM pop;
SELECT singletons, classes, k_level, below5, profile FROM serial_answers;
SELECT (SELECT count(*) FROM (SELECT 1 FROM pop GROUP BY birth_year, sex, zip HAVING count(*) = 1) s) AS singletons,
	(SELECT count(*) FROM (SELECT 1 FROM pop GROUP BY birth_year, sex, zip) s) AS classes,
	(SELECT min(c) FROM (SELECT count(*) c FROM pop GROUP BY birth_year, zip) s) AS k_level,
	(SELECT sum(c) FROM (SELECT count(*) c FROM pop GROUP BY birth_year, sex, zip HAVING count(*) < 5) s) AS below5;

-- force real partial plans
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;

EXPLAIN (COSTS OFF)
SELECT singleton_count(birth_year, sex, zip), class_count(birth_year, sex, zip),
	k_anonymity(birth_year, zip), rows_below_k(5, birth_year, sex, zip), class_profile(sex, score)
FROM pop;
SELECT singleton_count(birth_year, sex, zip) = s.singletons AS singletons_equal,
	class_count(birth_year, sex, zip) = s.classes AS classes_equal,
	k_anonymity(birth_year, zip) = s.k_level AS k_equal,
	rows_below_k(5, birth_year, sex, zip) = s.below5 AS below5_equal,
	class_profile(sex, score) = s.profile AS profile_equal,
	class_profile(birth_year, sex, zip) = s.wide_profile AS wide_profile_equal
FROM pop, serial_answers s GROUP BY s.singletons, s.classes, s.k_level, s.below5, s.profile, s.wide_profile;

-- grouped partial aggregation
EXPLAIN (COSTS OFF)
SELECT sex, singleton_count(birth_year, zip) FROM pop GROUP BY sex;
SELECT sex, singleton_count(birth_year, zip), class_count(birth_year, zip) FROM pop GROUP BY sex ORDER BY sex;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
SELECT sex, singleton_count(birth_year, zip), class_count(birth_year, zip) FROM pop GROUP BY sex ORDER BY sex;

-- partitionwise aggregation: partial states per partition, combined on top
CREATE TABLE pop_parts (LIKE pop) PARTITION BY HASH (id);
CREATE TABLE pop_parts_0 PARTITION OF pop_parts FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE pop_parts_1 PARTITION OF pop_parts FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE pop_parts_2 PARTITION OF pop_parts FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO pop_parts SELECT * FROM pop;
ANALYZE pop_parts;
SET enable_partitionwise_aggregate = on;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF)
SELECT singleton_count(birth_year, sex, zip) FROM pop_parts;
SELECT singleton_count(birth_year, sex, zip) = s.singletons AS equal,
	class_profile(sex, score) = s.profile AS profile_equal
FROM pop_parts, serial_answers s GROUP BY s.singletons, s.profile;
-- and in parallel, which also serializes the states
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT sex, singleton_count(birth_year, zip) FROM pop_parts GROUP BY sex;
SELECT sex, singleton_count(birth_year, zip), class_count(birth_year, zip) FROM pop_parts GROUP BY sex ORDER BY sex;
SELECT singleton_count(birth_year, sex, zip) = s.singletons AS equal,
	class_profile(sex, score) = s.profile AS profile_equal
FROM pop_parts, serial_answers s GROUP BY s.singletons, s.profile;
-- every row its own class: each worker ships ~100,000 classes in the ascending encoding
SELECT singleton_count(id) AS unique_ids, class_count(id % 150000) AS classes,
	k_anonymity(id % 150000) AS k_level, rows_below_k(2, id % 150000) AS below2
FROM pop;
-- the memory budget holds in parallel workers too: past it they spill to
-- temporary files and the answer is the serial one; with spilling off they
-- stop with an error, and the session goes on
SET qidrisk.max_state_memory = '1MB';
SELECT singleton_count(birth_year, sex, zip) = s.singletons AS equal FROM pop, serial_answers s GROUP BY s.singletons;
SET qidrisk.spill = off;
\set VERBOSITY terse
SELECT singleton_count(birth_year, sex, zip) FROM pop;
\set VERBOSITY default
RESET qidrisk.spill;
RESET qidrisk.max_state_memory;
SELECT singleton_count(birth_year, sex, zip) = s.singletons AS equal FROM pop, serial_answers s GROUP BY s.singletons;

-- The leader's own partial state is lent to the finalize aggregate in the
-- same process instead of being serialized, once for each aggregate sharing
-- it.  With no worker allowed to start, the leader runs the whole partial
-- plan, so this happens every time.
SET parallel_leader_participation = on;
SET max_parallel_workers = 0;
EXPLAIN (COSTS OFF)
SELECT singleton_count(birth_year, sex, zip), class_count(birth_year, sex, zip) FROM pop;
SET client_min_messages = debug1;
SELECT l.singletons = s.singletons AS singletons_equal, l.classes = s.classes AS classes_equal
FROM (SELECT singleton_count(birth_year, sex, zip) AS singletons,
		class_count(birth_year, sex, zip) AS classes FROM pop) l, serial_answers s;
RESET client_min_messages;
RESET max_parallel_workers;
