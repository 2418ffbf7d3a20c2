-- Bad input to the approximate estimators and the key path
-- (approx_class_profile, approx_singleton_count, approx_class_count,
-- approx_interval, qid_key and the *_key aggregates): every case raises its
-- documented SQLSTATE, and nothing changes afterwards.  approx_interval is
-- STRICT: NULL in, NULL out.  A window call cannot see VARIADIC (README).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(81 + 7);

CREATE TABLE s (id integer, a integer, b text, p point);
INSERT INTO s SELECT i, i % 7, 'b' || i % 3, point(i, i) FROM generate_series(1, 200) i;
CREATE COLLATION pg_temp.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE names (x text COLLATE pg_temp.ci, y text COLLATE "C");
INSERT INTO names VALUES ('a', 'b'), ('A', 'b'), ('a', 'B');
CREATE ROLE qidrisk_e_nobody;
CREATE ROLE qidrisk_e_cols;
GRANT SELECT (id, a) ON s TO qidrisk_e_cols;

-- load the library, which defines qidrisk.max_state_memory
DO $$BEGIN PERFORM class_count(x) FROM generate_series(1, 2) x; END$$;

-- What must not change: table contents, objects, settings, the current role
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM s t),
					 (SELECT md5(string_agg(n::text, ',' ORDER BY n::text)) FROM names n),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type),
					 current_setting('qidrisk.max_state_memory'), current_setting('search_path'), current_user)
$$;
-- The DETAIL of the error a statement raises
CREATE FUNCTION pg_temp.detail(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	d text;
BEGIN
	EXECUTE stmt;
	RETURN NULL;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN d;
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
	-- approx_class_profile: capacity
	('SELECT approx_class_profile(NULL, a) FROM s', '22004', 'profile: NULL capacity'),
	('SELECT approx_class_profile(63, a) FROM s', '22023', 'profile: capacity 63'),
	('SELECT approx_class_profile(0, a) FROM s', '22023', 'profile: capacity 0'),
	('SELECT approx_class_profile(-1, a) FROM s', '22023', 'profile: negative capacity'),
	('SELECT approx_class_profile(16777217, a) FROM s', '22023', 'profile: capacity above 2^24'),
	('SELECT approx_class_profile(CASE WHEN id % 2 = 0 THEN 64 ELSE 128 END, a) FROM s', '22023', 'profile: capacity changing between rows'),
	('SELECT approx_class_profile(id + 63, a) OVER (ORDER BY id) FROM s', '22023', 'profile: capacity changing in a window'),
	($$SELECT approx_class_profile('x', a) FROM s$$, '22P02', 'profile: capacity not a number'),
	('SELECT approx_class_profile(100.5, a) FROM s', '42883', 'profile: fractional capacity (no such function)'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT approx_class_profile(65536, a) FROM s$$, '54000', 'profile: sample larger than the budget'),
	-- approx_class_profile: QID columns
	('SELECT approx_class_profile(100) FROM s', '42883', 'profile: no QID column'),
	($$SELECT approx_class_profile(100, 'x') FROM s$$, '42P18', 'profile: untyped literal'),
	($$SELECT approx_class_profile(100, a, 'x') FROM s$$, '42P18', 'profile: untyped literal as second column'),
	('SELECT approx_class_profile(100, p) FROM s', '42883', 'profile: type without hashing'),
	($$SELECT approx_class_profile(100, r) FROM (SELECT ROW(1, 'a')) v(r)$$, '42883', 'profile: anonymous record'),
	('SELECT approx_class_profile(100, VARIADIC ARRAY[a]) FROM s', '0A000', 'profile: VARIADIC array'),
	('SELECT approx_class_profile(100, x, y) OVER () FROM names', '42P22', 'profile: window call, two collations'),
	-- approx_singleton_count, approx_class_count
	('SELECT approx_singleton_count() FROM s', '42883', 'singletons: no QID column'),
	('SELECT approx_class_count(*) FROM s', '42883', 'classes: star argument'),
	($$SELECT approx_singleton_count('x') FROM s$$, '42P18', 'singletons: untyped literal'),
	($$SELECT approx_class_count(a, 'x') FROM s$$, '42P18', 'classes: untyped literal as second column'),
	('SELECT approx_singleton_count(p) FROM s', '42883', 'singletons: type without hashing'),
	('SELECT approx_class_count(a, p) FROM s', '42883', 'classes: a second column without hashing'),
	($$SELECT approx_class_count(r) FROM (SELECT ROW(1, 'a')) v(r)$$, '42883', 'classes: anonymous record'),
	('SELECT approx_singleton_count(VARIADIC ARRAY[a]) FROM s', '0A000', 'singletons: VARIADIC array'),
	('SELECT approx_class_count(VARIADIC ARRAY[b, b]) FROM s', '0A000', 'classes: VARIADIC array'),
	('SELECT approx_class_count(x, y) OVER () FROM names', '42P22', 'classes: window call, two collations'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT approx_singleton_count(a) FROM s$$, '54000', 'singletons: default capacity larger than the budget'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT approx_singleton_count(a) FROM s$$, '42501', 'singletons: no SELECT'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT approx_class_count(a, b) FROM s$$, '42501', 'classes: no SELECT on a column'),
	-- approx_interval
	('SELECT approx_interval(1, 1, 0)', '22023', 'interval: rate 0'),
	('SELECT approx_interval(1, 1, -0.5)', '22023', 'interval: negative rate'),
	('SELECT approx_interval(1, 1, 1.5)', '22023', 'interval: rate above 1'),
	($$SELECT approx_interval(1, 1, 'NaN')$$, '22023', 'interval: rate NaN'),
	($$SELECT approx_interval(1, 1, 'Infinity')$$, '22023', 'interval: rate Infinity'),
	('SELECT approx_interval(-1, 1, 0.5)', '22023', 'interval: negative estimate'),
	($$SELECT approx_interval('NaN', 1, 0.5)$$, '22023', 'interval: estimate NaN'),
	($$SELECT approx_interval('Infinity', 1, 0.5)$$, '22023', 'interval: estimate Infinity'),
	('SELECT approx_interval(1, -1, 0.5)', '22023', 'interval: negative standard error'),
	($$SELECT approx_interval(1, 'NaN', 0.5)$$, '22023', 'interval: standard error NaN'),
	($$SELECT approx_interval(1, 'Infinity', 0.5)$$, '22023', 'interval: standard error Infinity'),
	('SELECT approx_interval(1, 1, 0.5, 0)', '22023', 'interval: confidence 0'),
	('SELECT approx_interval(1, 1, 0.5, 1)', '22023', 'interval: confidence 1'),
	('SELECT approx_interval(1, 1, 0.5, -0.1)', '22023', 'interval: negative confidence'),
	($$SELECT approx_interval(1, 1, 0.5, 'NaN')$$, '22023', 'interval: confidence NaN'),
	($$SELECT approx_interval(1, 1, 0.5, 'Infinity')$$, '22023', 'interval: confidence Infinity'),
	($$SELECT approx_interval('x', 1, 0.5)$$, '22P02', 'interval: estimate not a number'),
	-- qid_key
	('SELECT qid_key()', '42883', 'qid_key: no column'),
	($$SELECT qid_key('x')$$, '42P18', 'qid_key: untyped literal'),
	($$SELECT qid_key(1, 'x')$$, '42P18', 'qid_key: untyped literal as second column'),
	('SELECT qid_key(NULL)', '42P18', 'qid_key: untyped NULL'),
	('SELECT qid_key(point(1, 1))', '42883', 'qid_key: type without hashing'),
	($$SELECT qid_key(ROW(1, 'a'))$$, '42883', 'qid_key: anonymous record'),
	('SELECT qid_key(VARIADIC ARRAY[1, 2])', '0A000', 'qid_key: VARIADIC array'),
	('SELECT qid_key(VARIADIC NULL::integer[])', '0A000', 'qid_key: VARIADIC NULL array'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT qid_key(a) FROM s$$, '42501', 'qid_key: no SELECT'),
	-- the exact _key aggregates
	('SELECT singleton_count_key(a) FROM s', '42883', 'singleton_count_key: not a uuid'),
	($$SELECT singleton_count_key('x') FROM s$$, '22P02', 'singleton_count_key: a literal that is not a uuid'),
	('SELECT singleton_count_key(qid_key(a), qid_key(b)) FROM s', '42883', 'singleton_count_key: two keys'),
	('SELECT class_count_key(b::uuid) FROM s', '22P02', 'class_count_key: text that is not a uuid'),
	('SELECT k_anonymity_key(1) FROM s', '42883', 'k_anonymity_key: an integer'),
	('SELECT class_profile_key(qid_key(a), 2) FROM s', '42883', 'class_profile_key: an extra argument'),
	('SELECT rows_below_k_key(NULL, qid_key(a)) FROM s', '22004', 'rows_below_k_key: NULL k'),
	('SELECT rows_below_k_key(0, qid_key(a)) FROM s', '22023', 'rows_below_k_key: k = 0'),
	('SELECT rows_below_k_key(-3, qid_key(a)) FROM s', '22023', 'rows_below_k_key: negative k'),
	('SELECT rows_below_k_key(id, qid_key(a)) FROM s', '22023', 'rows_below_k_key: k changing between rows'),
	('SELECT rows_below_k_key(id % 2 + 1, qid_key(a)) OVER (ORDER BY id) FROM s', '22023', 'rows_below_k_key: k changing in a window'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT singleton_count_key(qid_key(i)) FROM generate_series(1, 100000) i$$, '54000', 'singleton_count_key: state past the budget'),
	-- the approximate _key aggregates
	('SELECT approx_class_profile_key(NULL, qid_key(a)) FROM s', '22004', 'approx_class_profile_key: NULL capacity'),
	('SELECT approx_class_profile_key(63, qid_key(a)) FROM s', '22023', 'approx_class_profile_key: capacity 63'),
	('SELECT approx_class_profile_key(16777217, qid_key(a)) FROM s', '22023', 'approx_class_profile_key: capacity above 2^24'),
	('SELECT approx_class_profile_key(id + 63, qid_key(a)) FROM s', '22023', 'approx_class_profile_key: capacity changing'),
	('SELECT approx_class_profile_key(id + 63, qid_key(a)) OVER (ORDER BY id) FROM s', '22023', 'approx_class_profile_key: capacity changing in a window'),
	('SELECT approx_class_profile_key(100, a) FROM s', '42883', 'approx_class_profile_key: not a uuid'),
	('SELECT approx_singleton_count_key(a) FROM s', '42883', 'approx_singleton_count_key: not a uuid'),
	($$SELECT approx_class_count_key('nope') FROM s$$, '22P02', 'approx_class_count_key: a literal that is not a uuid'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT approx_class_profile_key(65536, qid_key(a)) FROM s$$, '54000', 'approx_class_profile_key: sample larger than the budget')
) AS c(stmt, code, descr);
-- The support functions take internal and cannot be called from SQL.  Recent
-- minor releases refuse the call itself (42883, 42846); older ones (15.18)
-- coerce the NULL to internal and internal_in refuses it (0A000).
SELECT ok(pg_temp.sqlstate_of(stmt) IN (code, '0A000'), descr || ' -> ' || code || ' or 0A000')
FROM (VALUES
	('SELECT qidrisk_internal.qidrisk_sketch_transfn(NULL, 1, 1)', '42883', 'sketch transition function called directly'),
	('SELECT qidrisk_internal.qidrisk_sketch_combine(NULL, NULL)', '42883', 'sketch combine function called directly'),
	('SELECT qidrisk_internal.qidrisk_sketch_serialize(NULL::internal)', '42846', 'sketch state from SQL'),
	($$SELECT qidrisk_internal.qidrisk_freq_key_transfn(NULL, NULL::uuid)$$, '42883', 'key transition function called directly')
) AS c(stmt, code, descr);

SELECT is(pg_temp.snapshot(), s, 'nothing changed: tables, objects, settings and role') FROM before;
SELECT ok((SELECT low IS NULL AND high IS NULL FROM approx_interval(NULL, 1, 0.5)), 'approx_interval is STRICT');
-- the messages count arguments from 1, and name k
SELECT throws_ok('SELECT qid_key(1, point(1, 1))', '42883', NULL, 'qid_key: a second column without hashing');
SELECT is(pg_temp.detail('SELECT qid_key(1, point(1, 1))'),
		  'Argument 2 of qid_key must be of a type with a hash operator class.', 'qid_key counts its arguments from 1');
SELECT throws_ok('SELECT rows_below_k_key(id, qid_key(a)) FROM s', '22023',
				 'k must be the same for every row of a group', 'rows_below_k_key names k, as rows_below_k does');
-- and they still work
SELECT is((SELECT approx_class_count(a, b) FROM s), (SELECT count(*)::float8 FROM (SELECT DISTINCT a, b FROM s) d),
		  'approx_class_count still works after the errors (exact below the capacity)');
SELECT is((SELECT rows_below_k_key(20, qid_key(a, b)) FROM s),
		  (SELECT coalesce(sum(n), 0)::bigint FROM (SELECT count(*) n FROM s GROUP BY a, b) g WHERE n < 20),
		  'rows_below_k_key still works after the errors');

DROP OWNED BY qidrisk_e_nobody, qidrisk_e_cols;
DROP ROLE qidrisk_e_nobody, qidrisk_e_cols;

SELECT * FROM finish();
ROLLBACK;
