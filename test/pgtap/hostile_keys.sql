-- Hostile keys and values for the frequency, approximate and key aggregates:
--   * a quasi-identifier of constants only ('age'::text, ARRAY['age','sex'],
--     qid_key('age'::text)) is refused instead of reporting one safe class;
--   * int8 values chosen, by inverting the fingerprint's public mix, so that
--     every fingerprint shares the 32 bits the hash tables used to place
--     classes by, or has a high half of 0 (always in the distinct sample);
--   * uuid keys that vary in few bits (uuid_generate_v1-like: one clock
--     sequence and node) or are crafted (high half 0);
--   * int8 values whose unkeyed 32-bit hash (the mix of the value's bits
--     that the quantile aggregates once placed values by) is one and the
--     same: such a table grew to ten times its values and more, so within a
--     budget that fits 60,000 values it stopped with 54000;
--   * int8 values whose fingerprints share their low 32 bits, by which
--     kmap_count's probe table placed them (one run of buckets, quadratic):
--     the table is now laid out under a placement key that kmap_count draws
--     at random and passes ahead of the fingerprints, so two keys lay the
--     same fingerprints out differently.
-- Exact counts must equal GROUP BY's, estimates must lie within 10 standard
-- errors of the truth (the standard error at 60,000 classes and the default
-- capacity is about 245).  The time such data used to take (quadratic
-- probing) is measured by bench/flood.sh, not here.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(41);


CREATE TABLE t (a integer, b text);
INSERT INTO t SELECT i, (i % 7)::text FROM generate_series(1, 100) i;

-- constants only: 42P10, naming the aggregate
SELECT throws_ok($$SELECT k_anonymity('age'::text, 'sex'::text) FROM t$$, '42P10',
				 'k_anonymity needs columns as its quasi-identifier, not constants',
				 'k_anonymity of two string constants');
SELECT throws_ok($$SELECT singleton_count(ARRAY['age', 'sex']) FROM t$$, '42P10', NULL,
				 'singleton_count of an array constant');
SELECT throws_ok($$SELECT class_count('age'::varchar) FROM t$$, '42P10', NULL,
				 'class_count of a constant under an implicit cast');
SELECT throws_ok($$SELECT rows_below_k(2, 1, 'x'::text) FROM t$$, '42P10', NULL,
				 'rows_below_k of constants');
SELECT throws_ok($$SELECT class_profile(NULL::int) FROM t$$, '42P10', NULL,
				 'class_profile of a NULL constant');
SELECT throws_ok($$SELECT approx_class_profile(256, 'age'::text) FROM t$$, '42P10', NULL,
				 'approx_class_profile of a constant');
SELECT throws_ok($$SELECT approx_singleton_count('age'::text, 'sex'::text) FROM t$$, '42P10', NULL,
				 'approx_singleton_count of constants');
SELECT throws_ok($$SELECT approx_class_count(42) FROM t$$, '42P10', NULL,
				 'approx_class_count of a constant');
SELECT throws_ok($$SELECT singleton_count('age'::text) OVER () FROM t$$, '42P10', NULL,
				 'singleton_count of a constant as a window function');
SELECT throws_ok($$SELECT singleton_count_key(qid_key('age'::text, 'sex'::text)) FROM t$$, '42P10', NULL,
				 'singleton_count_key of a constant key');
SELECT throws_ok($$SELECT rows_below_k_key(2, qid_key('age'::text)) FROM t$$, '42P10', NULL,
				 'rows_below_k_key of a constant key');
SELECT throws_ok($$SELECT approx_class_count_key(qid_key('age'::text)) FROM t$$, '42P10', NULL,
				 'approx_class_count_key of a constant key');
SELECT throws_ok($$SELECT approx_class_profile_key(256, qid_key('age'::text)) FROM t$$, '42P10', NULL,
				 'approx_class_profile_key of a constant key');
-- a constant beside a column is allowed: it changes nothing
SELECT is((SELECT ROW(singleton_count(b, 'x'::text), class_count(b, 'x'::text))::text FROM t),
		  (SELECT ROW(singleton_count(b), class_count(b))::text FROM t),
		  'a constant beside a column is accepted');
-- The inverse of the fingerprint's 64-bit mix (MurmurHash3's finalizer),
-- on bigints holding unsigned 64-bit words
CREATE FUNCTION pg_temp.mul(x bigint, c numeric) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN m >= 9223372036854775808 THEN (m - 18446744073709551616)::bigint ELSE m::bigint END
	FROM (SELECT mod((CASE WHEN x < 0 THEN x + 18446744073709551616 ELSE x END) * c,
					 18446744073709551616) AS m) s
$$;
CREATE FUNCTION pg_temp.xs33(x bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
	SELECT x # ((x >> 33) & 2147483647)
$$;
CREATE FUNCTION pg_temp.unmix(h bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
	SELECT pg_temp.xs33(pg_temp.mul(pg_temp.xs33(pg_temp.mul(pg_temp.xs33(h),
		11291846944257947611)), 5725274745694666757))
$$;

-- Set A: one int8 column whose fingerprints' low halves all begin with
-- 0x5bd1e995 (the old placement: 32 bits of the low half).  The low half of
-- a one-column int8 fingerprint is mix(v xor K), K = -7859690448294053229
-- (the seeds of fingerprint.c), so v = unmix(low) xor K.
CREATE TABLE flood (v bigint);
INSERT INTO flood
SELECT pg_temp.unmix((x'5bd1e995'::bigint << 32) | i) # -7859690448294053229
FROM generate_series(1, 60000) i, generate_series(1, CASE WHEN i <= 1000 THEN 2 ELSE 1 END);
SELECT is((SELECT count(DISTINCT substr(replace(qid_key(v)::text, '-', ''), 17, 8)) FROM flood), 1::bigint,
		  'set A: every fingerprint has the same 32 placement bits of the old tables');
SELECT is((SELECT count(DISTINCT v) FROM flood), 60000::bigint, 'set A: 60,000 distinct values');
SELECT is((SELECT ROW(singleton_count(v), class_count(v), k_anonymity(v), rows_below_k(3, v))::text FROM flood),
		  (SELECT ROW(count(*) FILTER (WHERE n = 1), count(*), min(n), sum(n) FILTER (WHERE n < 3))::text
		   FROM (SELECT count(*) AS n FROM flood GROUP BY v) g),
		  'set A: exact aggregates equal GROUP BY');
SELECT is((SELECT class_profile(v)::text FROM flood),
		  (SELECT class_profile(v)::text FROM (SELECT v FROM flood ORDER BY v DESC) o),
		  'set A: class_profile does not depend on the order of the rows');
SELECT is((SELECT ROW(count(*), sum(release_rows), sum(population_rows))::text
		   FROM kmap_count('flood', 'flood', ARRAY['v'])),
		  ROW(60000, 61000, 61000)::text, 'set A: kmap_count finds every class');

-- Set B: fingerprints whose high half is i (below 2^16), which the old
-- sample kept at every level; the high half is mix(v xor K'),
-- K' = 3793230540842369759
CREATE TABLE biased (v bigint);
INSERT INTO biased SELECT pg_temp.unmix(i) # 3793230540842369759 FROM generate_series(1, 60000) i;
SELECT is((SELECT count(*) FROM biased WHERE qid_key(v)::text NOT LIKE '00000000-0000-%'), 0::bigint,
		  'set B: every fingerprint has a high half below 2^16');
SELECT ok((SELECT abs(approx_class_count(v) - 60000) < 2450 FROM biased),
		  'set B: approx_class_count within 10 standard errors of 60,000');
SELECT ok((SELECT abs(approx_singleton_count(v) - 60000) < 2450 FROM biased),
		  'set B: approx_singleton_count within 10 standard errors of 60,000');
SELECT ok((SELECT abs((approx_class_profile(32768, v)).classes - 60000) < 2450 FROM biased),
		  'set B: approx_class_profile within 10 standard errors of 60,000');

-- Set C: values v = unmix(h) whose mix h has the same low 32 bits, which
-- the quantile aggregates' unkeyed hash tables placed values by
CREATE FUNCTION pg_temp.mix(h bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
	SELECT pg_temp.xs33(pg_temp.mul(pg_temp.xs33(pg_temp.mul(pg_temp.xs33(h),
		18397679294719823053)), 14181476777654086739))
$$;
CREATE TABLE same_hash (v bigint);
INSERT INTO same_hash SELECT pg_temp.unmix((i::bigint << 32) | x'5bd1e995'::bigint) FROM generate_series(1, 60000) i;
SELECT is((SELECT ROW(count(DISTINCT v), count(DISTINCT pg_temp.mix(v) & 4294967295))::text FROM same_hash),
		  ROW(60000, 1)::text, 'set C: 60,000 distinct values, one unkeyed 32-bit hash');
-- 60,000 values take about 3 MB of table; the unkeyed one took 14 MB and more
SET qidrisk.max_state_memory = '8MB';
SELECT is((SELECT quantile_cuts(v, 2) FROM same_hash),
		  ARRAY(SELECT v FROM (SELECT v, row_number() OVER (ORDER BY v) AS n FROM same_hash) s
				WHERE n % 2 = 1 ORDER BY v),
		  'set C: quantile_cuts within a budget that fits 60,000 values, every other value a cut');
SELECT is((SELECT quantile_medians(v, ARRAY[(SELECT min(v) FROM same_hash)]) FROM same_hash),
		  ARRAY[(SELECT v FROM same_hash ORDER BY v OFFSET 29999 LIMIT 1)],
		  'set C: quantile_medians within the same budget');
SELECT is((SELECT cardinality(quantile_cuts(v::numeric, 3)) FROM same_hash), 20000,
		  'set C as numeric (hashed by its type, keyed): quantile_cuts within the same budget');
RESET qidrisk.max_state_memory;

-- Set D: fingerprints whose low half ends in the same 32 bits; laid out by
-- qidrisk_kmap_probe under two placement keys (the keys argument is the
-- key, then each fingerprint as two little-endian 64-bit halves, low first)
CREATE TABLE low_run (v bigint);
INSERT INTO low_run
SELECT pg_temp.unmix((i::bigint << 32) | x'5bd1e995'::bigint) # -7859690448294053229 FROM generate_series(1, 5000) i;
SELECT is((SELECT count(DISTINCT substr(replace(qid_key(v)::text, '-', ''), 25, 8)) FROM low_run), 1::bigint,
		  'set D: every fingerprint ends in the same 32 bits');
CREATE FUNCTION pg_temp.le(h text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT string_agg(substr(h, 15 - 2 * i, 2), '' ORDER BY i) FROM generate_series(0, 7) i
$$;
-- the buckets (8-byte sums) that a probe state filled
CREATE FUNCTION pg_temp.filled(sums bytea) RETURNS int[] LANGUAGE sql IMMUTABLE AS $$
	SELECT array_agg(i ORDER BY i) FROM generate_series(0, length(sums) / 8 - 1) i
	WHERE substr(sums, 8 * i + 1, 8) <> '\x0000000000000000'::bytea
$$;
CREATE TABLE layouts AS
SELECT key, pg_temp.filled((SELECT qidrisk_internal.qidrisk_kmap_probe(decode(repeat(key, 16) || f.fps, 'hex'), 1, v) FROM low_run)) AS filled
FROM (SELECT string_agg(pg_temp.le(substr(k, 17, 16)) || pg_temp.le(substr(k, 1, 16)), '') AS fps
	  FROM (SELECT replace(qid_key(v)::text, '-', '') AS k FROM low_run) s) f,
	 unnest(ARRAY['01', '03']) AS key;
SELECT is((SELECT array_agg(cardinality(filled)) FROM layouts), ARRAY[5000, 5000],
		  'set D: the probe finds all 5,000 fingerprints under either placement key');
SELECT ok((SELECT filled FROM layouts WHERE key = '01') <> (SELECT filled FROM layouts WHERE key = '03'),
		  'set D: two placement keys lay the fingerprints out in different buckets');
SELECT ok((SELECT bool_and(filled[5000] - filled[1] > 5000) FROM layouts),
		  'set D: the fingerprints are spread, not one run of 5,000 buckets');

-- uuid keys: v1-like (one clock sequence and node, the time varying) and
-- crafted (high half 0)
CREATE TABLE keys (v1 uuid, crafted uuid);
INSERT INTO keys
SELECT (lpad(to_hex(i * 7919), 8, '0') || '-1dd2-11b2-8000-0242ac120002')::uuid,
	   ('00000000-0000-0000-0000-' || lpad(to_hex(i), 12, '0'))::uuid
FROM generate_series(1, 60000) i;
SELECT is((SELECT ROW(singleton_count_key(v1), class_count_key(v1), k_anonymity_key(v1),
					  rows_below_k_key(2, v1))::text FROM keys),
		  ROW(60000, 60000, 1, 60000)::text, 'v1-like keys: exact key aggregates');
SELECT is((SELECT ROW(singleton_count_key(crafted), class_count_key(crafted))::text FROM keys),
		  ROW(60000, 60000)::text, 'crafted keys: exact key aggregates');
SELECT is((SELECT class_profile_key(k)::text FROM (SELECT v1 AS k FROM keys UNION ALL SELECT v1 FROM keys WHERE v1 < '00010000-0000-0000-0000-000000000000') s),
		  (SELECT class_profile(k)::text FROM (SELECT v1 AS k FROM keys UNION ALL SELECT v1 FROM keys WHERE v1 < '00010000-0000-0000-0000-000000000000') s),
		  'v1-like keys with repeats: class_profile_key equals class_profile of the uuids');
SELECT ok((SELECT abs(approx_class_count_key(v1) - 60000) < 2450 FROM keys),
		  'v1-like keys: approx_class_count_key within 10 standard errors (was 0)');
SELECT ok((SELECT abs(approx_singleton_count_key(v1) - 60000) < 2450 FROM keys),
		  'v1-like keys: approx_singleton_count_key within 10 standard errors (was 0)');
SELECT ok((SELECT abs(approx_class_count_key(crafted) - 60000) < 2450 FROM keys),
		  'crafted keys: approx_class_count_key within 10 standard errors (was 4,294,836,224)');
SELECT ok((SELECT abs((approx_class_profile_key(32768, crafted)).singletons - 60000) < 2450 FROM keys),
		  'crafted keys: approx_class_profile_key within 10 standard errors');

-- the sampling key: fixed by qidrisk.sample_seed (superuser only), else per statement
SET qidrisk.sample_seed = 7;
CREATE TEMP TABLE seeded AS SELECT approx_class_count(v) AS c FROM biased;
SELECT is((SELECT approx_class_count(v) FROM biased), (SELECT c FROM seeded),
		  'qidrisk.sample_seed makes estimates reproducible');
RESET qidrisk.sample_seed;

-- with the default per-statement key, parallel workers must draw the
-- leader's key: their partial samples merge (a different key is an error)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
CREATE FUNCTION pg_temp.plan_of(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	plan text := '';
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	RETURN plan;
END
$$;
SELECT ok(pg_temp.plan_of('SELECT approx_class_count(v) FROM biased') LIKE '%Partial Aggregate%',
		  'the parallel check below runs partial aggregates in workers');
SELECT ok((SELECT abs(approx_class_count(v) - 60000) < 2450 FROM biased),
		  'per-statement key under a parallel plan: the workers'' samples merge, estimate within 10 standard errors');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;

SELECT * FROM finish();
ROLLBACK;
