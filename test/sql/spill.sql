-- Spilling past qidrisk.max_state_memory: temporary files
-- are written (pg_stat_database.temp_files grows), the answers are exact, and
-- no file is left behind after success, error or cancel.
CREATE TABLE sp AS
SELECT i % 2 AS g, abs(hashint4(i)) % 150000 AS v, (i % 7)::text AS t
FROM generate_series(1, 100000) i;
CREATE TABLE sp_parts (LIKE sp) PARTITION BY HASH (v);
CREATE TABLE sp_parts_0 PARTITION OF sp_parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE sp_parts_1 PARTITION OF sp_parts FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO sp_parts SELECT * FROM sp;
ANALYZE sp;
ANALYZE sp_parts;
CREATE TABLE sp_reference AS
SELECT g, count(*) FILTER (WHERE n = 1) AS singletons, count(*) AS classes
FROM (SELECT g, count(*) AS n FROM sp GROUP BY g, v, t) c GROUP BY g;
CREATE FUNCTION temp_files() RETURNS bigint LANGUAGE sql
AS $$ SELECT temp_files FROM pg_stat_database WHERE datname = current_database() $$;
CREATE FUNCTION matches(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	result boolean;
BEGIN
	EXECUTE format('SELECT bool_and(o.s = r.singletons AND o.c = r.classes) AND count(*) = 2
		FROM (%s) o JOIN sp_reference r USING (g)', query) INTO result;
	RETURN result;
END
$$;

SET qidrisk.max_state_memory = '512kB';
-- serial
SET max_parallel_workers_per_gather = 0;
SELECT pg_stat_force_next_flush();
SELECT temp_files() AS before \gset
SELECT matches('SELECT g, singleton_count(v, t) AS s, class_count(v, t) AS c FROM sp GROUP BY g') AS serial_exact;
SELECT pg_stat_force_next_flush();
SELECT temp_files() > :before AS serial_spilled;
-- the _key forms
SELECT matches('SELECT g, singleton_count_key(qid_key(v, t)) AS s, class_count_key(qid_key(v, t)) AS c FROM sp GROUP BY g') AS key_exact;
-- forced parallel plan: workers spill, stream their runs to the leader, which spills too
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT g, singleton_count(v, t) FROM sp GROUP BY g;
SELECT pg_stat_force_next_flush();
SELECT temp_files() AS before \gset
SELECT matches('SELECT g, singleton_count(v, t) AS s, class_count(v, t) AS c FROM sp GROUP BY g') AS parallel_exact;
SELECT pg_sleep(0.1);
SELECT pg_stat_force_next_flush();
SELECT temp_files() > :before AS parallel_spilled;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
-- partitionwise partial aggregation
SET max_parallel_workers_per_gather = 0;
SET enable_partitionwise_aggregate = on;
EXPLAIN (COSTS OFF) SELECT g, singleton_count(v, t) FROM sp_parts GROUP BY g;
SELECT pg_stat_force_next_flush();
SELECT temp_files() AS before \gset
SELECT matches('SELECT g, singleton_count(v, t) AS s, class_count(v, t) AS c FROM sp_parts GROUP BY g') AS partitionwise_exact;
SELECT pg_stat_force_next_flush();
SELECT temp_files() > :before AS partitionwise_spilled;
RESET enable_partitionwise_aggregate;
-- many runs per partition, more than one merge reads at once at 512 kB: they
-- are merged into longer runs first, and every figure stays the in-memory one
RESET qidrisk.max_state_memory;
CREATE TABLE sp_many AS SELECT abs(hashint4(i)) % 500000 AS v FROM generate_series(1, 700000) i;
CREATE TABLE sp_many_in_memory AS
SELECT ROW(singleton_count(v), class_count(v), k_anonymity(v), rows_below_k(3, v),
	class_profile(v), class_profile_key(qid_key(v)))::text AS figures FROM sp_many;
SET qidrisk.max_state_memory = '512kB';
SELECT ROW(singleton_count(v), class_count(v), k_anonymity(v), rows_below_k(3, v),
	class_profile(v), class_profile_key(qid_key(v)))::text = (SELECT figures FROM sp_many_in_memory) AS many_runs_exact
FROM sp_many;
SELECT singleton_count(v) = (SELECT count(*) FROM (SELECT v FROM sp_many GROUP BY v HAVING count(*) = 1) c) AS many_runs_reference
FROM sp_many;
-- nothing left in the temporary directory
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();

-- an error in the middle of a spilling aggregation removes its files
SELECT singleton_count(v, t), 1 / (count(*) - 100000) FROM sp;
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();

-- cancel (statement_timeout) while spilling: no files left, the session goes on
-- (5 s: on 17 the plan scans sp in full once per k, so spilling starts later)
SELECT pg_stat_force_next_flush();
SELECT temp_files() AS before \gset
SET statement_timeout = '5s';
SELECT singleton_count(v, t, k) FROM sp, generate_series(1, 500) k;
RESET statement_timeout;
SELECT pg_stat_force_next_flush();
SELECT temp_files() > :before AS cancelled_while_spilling;
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();
SELECT matches('SELECT g, singleton_count(v, t) AS s, class_count(v, t) AS c FROM sp GROUP BY g') AS still_exact;
-- the same in a parallel plan: the workers' files go too
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET statement_timeout = '5s';
SELECT singleton_count(v, t, k) FROM sp, generate_series(1, 500) k;
RESET statement_timeout;
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();
SELECT matches('SELECT g, singleton_count(v, t) AS s, class_count(v, t) AS c FROM sp GROUP BY g') AS still_exact_parallel;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET qidrisk.max_state_memory;
