-- Bad input to the frequency aggregates (singleton_count, class_count,
-- k_anonymity, rows_below_k, class_profile, rows_below, class_histogram):
-- every case raises its documented SQLSTATE, and nothing changes afterwards
-- (the table's contents, the objects in the database, the settings).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(26 + 3);

CREATE TABLE t (a integer, b text, p point);
INSERT INTO t SELECT i, i::text, point(i, i) FROM generate_series(1, 100) i;
CREATE COLLATION pg_temp.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE names (x text COLLATE pg_temp.ci, y text COLLATE "C");
INSERT INTO names VALUES ('a', 'b'), ('A', 'b'), ('a', 'B');

-- load the library, which defines qidrisk.max_state_memory
DO $$BEGIN PERFORM class_count(x) FROM generate_series(1, 2) x; END$$;

-- What must not change: table contents, objects, the memory setting
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(t::text, ',' ORDER BY a)) FROM t),
					 (SELECT md5(string_agg(n::text, ',' ORDER BY n::text)) FROM names n),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc),
					 (SELECT count(*) FROM pg_type), current_setting('qidrisk.max_state_memory'))
$$;

-- Run a statement under a memory budget, restoring the setting whatever happens
CREATE FUNCTION pg_temp.with_budget(budget text, stmt text) RETURNS void LANGUAGE plpgsql
SET qidrisk.max_state_memory = '-1' AS $$
BEGIN
	PERFORM set_config('qidrisk.max_state_memory', budget, true);
	EXECUTE stmt;
END
$$;

-- The SQLSTATE stmt raises (NULL if none)
CREATE FUNCTION pg_temp.sqlstate_of(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN NULL;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(stmt, code, NULL, descr || ' -> ' || code)
FROM (VALUES
	($$SELECT singleton_count('a')$$, '42P18', 'untyped literal'),
	($$SELECT singleton_count(a, 'x') FROM t$$, '42P18', 'untyped literal as second column'),
	('SELECT singleton_count(p) FROM t', '42883', 'type without a hash function'),
	('SELECT class_profile(a, p) FROM t', '42883', 'a second column without a hash function'),
	($$SELECT singleton_count(r) FROM (SELECT ROW(1, 'a')) v(r)$$, '42883', 'anonymous record'),
	('SELECT k_anonymity(VARIADIC ARRAY[a, a]) FROM t', '0A000', 'VARIADIC array call of k_anonymity'),
	('SELECT class_count(VARIADIC ARRAY[b]) FROM t', '0A000', 'VARIADIC array call of class_count'),
	('SELECT rows_below_k(2, VARIADIC ARRAY[b]) FROM t', '0A000', 'VARIADIC array call of rows_below_k'),
	('SELECT singleton_count() FROM t', '42883', 'no QID column'),
	('SELECT class_profile(*) FROM t', '42883', 'star argument'),
	('SELECT rows_below_k(2) FROM t', '42883', 'rows_below_k without a QID column'),
	('SELECT rows_below_k(0, a) FROM t', '22023', 'k = 0'),
	('SELECT rows_below_k(-5, a, b) FROM t', '22023', 'negative k'),
	('SELECT rows_below_k(NULL, a) FROM t', '22004', 'NULL k'),
	('SELECT rows_below_k(a, a) FROM t', '22023', 'k changing between rows'),
	('SELECT rows_below_k(a % 2 + 1, b) OVER (ORDER BY a) FROM t', '22023', 'k changing in a window'),
	('SELECT rows_below(class_profile(a), 0) FROM t', '22023', 'rows_below with k = 0'),
	('SELECT rows_below(class_profile(a), -1) FROM t', '22023', 'rows_below with negative k'),
	('SELECT class_count(x, y) OVER () FROM names', '42P22', 'window call with a non-deterministic collation among several text columns'),
	($$SELECT pg_temp.with_budget('64kB', 'SELECT singleton_count(i) FROM generate_series(1, 100000) i')$$, '54000', 'state past qidrisk.max_state_memory'),
	($$SELECT pg_temp.with_budget('64kB', 'SELECT class_profile(i, i::text) FROM generate_series(1, 100000) i')$$, '54000', 'class_profile state past the budget'),
	($$SET LOCAL qidrisk.max_state_memory = -2$$, '22023', 'budget below -1'),
	($$SELECT pg_temp.with_budget('3TB', 'SELECT 1')$$, '22023', 'budget beyond the largest value')
) AS c(stmt, code, descr);
-- The support functions take internal and cannot be called from SQL.  Recent
-- minor releases refuse the call itself (42883, 42846); older ones (15.18)
-- coerce the NULL to internal and internal_in refuses it (0A000).
SELECT ok(pg_temp.sqlstate_of(stmt) IN (code, '0A000'), descr || ' -> ' || code || ' or 0A000')
FROM (VALUES
	('SELECT qidrisk_internal.qidrisk_freq_transfn(NULL, 1)', '42883', 'transition function called directly'),
	('SELECT qidrisk_internal.qidrisk_freq_combine(NULL, NULL)', '42883', 'combine function called directly'),
	($$SELECT qidrisk_internal.qidrisk_freq_serialize(NULL::internal)$$, '42846', 'internal state from SQL')
) AS c(stmt, code, descr);

SELECT is(pg_temp.snapshot(), s, 'nothing changed: tables, objects and settings') FROM before;
SELECT is((SELECT singleton_count(a) FROM t), 100::bigint, 'the aggregates still work after the errors');
SELECT is(current_setting('qidrisk.max_state_memory'), '-1', 'the memory budget is back to its default');

SELECT * FROM finish();
ROLLBACK;
