-- Bad input gets a clear error
CREATE TABLE t (a integer, b text, p point);
INSERT INTO t SELECT i, i::text, point(i, i) FROM generate_series(1, 100) i;

-- untyped literal: ask for a cast
SELECT singleton_count('a');
SELECT singleton_count(a, 'x') FROM t;
-- a type without a hash function
SELECT singleton_count(p) FROM t;
SELECT class_profile(a, p) FROM t;
SELECT singleton_count(r) FROM (SELECT ROW(1, 'a')) v(r);
-- VARIADIC array calls
SELECT singleton_count(VARIADIC ARRAY[a, a]) FROM t;
SELECT rows_below_k(2, VARIADIC ARRAY[b]) FROM t;
-- no arguments
SELECT singleton_count() FROM t;
SELECT singleton_count(*) FROM t;
SELECT rows_below_k(2) FROM t;
-- k must be a positive constant
SELECT rows_below_k(0, a) FROM t;
SELECT rows_below_k(NULL, a) FROM t;
SELECT rows_below_k(a, a) FROM t;
SELECT rows_below(class_profile(a), 0) FROM t;
SELECT rows_below(class_profile(a), NULL) FROM t;
-- transition functions are not for direct calls: the call is refused, as
-- "does not exist" (42883) on recent minor releases and as "cannot accept a
-- value of type internal" (0A000) on older ones, in PostgreSQL's own words
CREATE FUNCTION pg_temp.refused(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ran';
EXCEPTION WHEN undefined_function OR feature_not_supported THEN
	RETURN 'refused';
END
$$;
SELECT pg_temp.refused('SELECT qidrisk_internal.qidrisk_freq_transfn(NULL, 1)') AS transfn,
	pg_temp.refused('SELECT qidrisk_internal.qidrisk_freq_combine(NULL, NULL)') AS combine;

-- a state past its memory budget stops with an error naming the setting:
-- below the spilling minimum (512 kB) ...
-- (terse: the number of classes held when the table must grow depends on the
-- random key that places classes in it)
SET qidrisk.max_state_memory = '64kB';
\set VERBOSITY terse
SELECT singleton_count(i) FROM generate_series(1, 100000) i;
\set VERBOSITY default
SELECT class_count(i % 100) FROM generate_series(1, 100000) i;
-- ... or with spilling turned off
SET qidrisk.max_state_memory = '1MB';
SET qidrisk.spill = off;
\set VERBOSITY terse
SELECT singleton_count(i) FROM generate_series(1, 100000) i;
\set VERBOSITY default
SET qidrisk.spill = on;
SELECT singleton_count(i) FROM generate_series(1, 100000) i;
RESET qidrisk.spill;
SHOW qidrisk.spill;
RESET qidrisk.max_state_memory;
-- out of range (22023); the wording of PostgreSQL's range message varies by version
\set VERBOSITY sqlstate
SET qidrisk.max_state_memory = -2;
\set VERBOSITY default
SET qidrisk.unknown_setting = 1;
SHOW qidrisk.max_state_memory;
-- with -1 the budget is 256 times work_mem
SET work_mem = '64kB';
SET qidrisk.spill = off;
SELECT singleton_count(i) FROM generate_series(1, 1000000) i;
RESET qidrisk.spill;
RESET work_mem;

-- long aggregations can be cancelled
SET statement_timeout = '100ms';
SELECT singleton_count(i, i) FROM generate_series(1, 100000000) i;
RESET statement_timeout;
-- the session is fine afterwards
SELECT singleton_count(a) FROM t;
