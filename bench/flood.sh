#!/bin/bash
# bench/flood.sh: chosen values against qidrisk's hash tables and samples.
#
# 60,000 int8 values chosen (by inverting the fingerprint's public mix) so
# that their fingerprints share the 32 bits the hash tables once placed
# classes by, 60,000 uuid keys that vary in few bits (uuid_generate_v1-like),
# and, for comparison, 60,000 random values: singleton_count, kmap_count and
# singleton_count_key on each, timed with \timing in one psql session after a
# warm-up.  With keyed placement the chosen data take about as long as the
# random data (before: 5.7 s, 6.1 s and 5.6 s against about 20 ms).  Two more
# chosen sets: 60,000 int8 values whose own 64-bit mix has one low half, which
# the quantile aggregates placed values by (quantile_cuts took 4.2 s against
# 21 ms for random values), and 60,000 whose fingerprints share their low 32
# bits, which kmap_count's probe table placed the release's classes by (4.7 s
# against 0.15 s).  Timings are printed, not asserted;
# test/pgtap/hostile_keys.sql checks the answers and the placement.
# Uses the server in PGHOST/PGPORT/PGUSER, database PGDATABASE (default
# postgres), e.g.  NONROOT=1 pg_virtualenv -v 15 bash bench/flood.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${PGDATABASE:-postgres}

psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<'SQL'
CREATE EXTENSION IF NOT EXISTS qidrisk;
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
CREATE TEMP TABLE chosen AS
SELECT pg_temp.unmix((x'5bd1e995'::bigint << 32) | i) # -7859690448294053229 AS v
FROM generate_series(1, 60000) i;
-- v = unmix(h): the mix of v (the quantile tables' old hash) has low half 0x5bd1e995
CREATE TEMP TABLE same_hash AS
SELECT pg_temp.unmix((i::bigint << 32) | x'5bd1e995'::bigint) AS v FROM generate_series(1, 60000) i;
-- fingerprints whose low halves end in 0x5bd1e995 (kmap's old probe placement)
CREATE TEMP TABLE low_run AS
SELECT pg_temp.unmix((i::bigint << 32) | x'5bd1e995'::bigint) # -7859690448294053229 AS v
FROM generate_series(1, 60000) i;
CREATE TEMP TABLE random_values AS
SELECT hashint8extended(i, 42) AS v FROM generate_series(1, 60000) i;
CREATE TEMP TABLE keys AS
SELECT (lpad(to_hex(i * 7919), 8, '0') || '-1dd2-11b2-8000-0242ac120002')::uuid AS k,
	   gen_random_uuid() AS r
FROM generate_series(1, 60000) i;
ANALYZE chosen; ANALYZE same_hash; ANALYZE low_run; ANALYZE random_values; ANALYZE keys;
SELECT singleton_count(v) FROM chosen;
\timing on
\echo singleton_count, chosen int8
SELECT singleton_count(v) FROM chosen;
\echo singleton_count, random int8
SELECT singleton_count(v) FROM random_values;
\echo kmap_count, chosen int8
SELECT count(*) FROM kmap_count('chosen', 'chosen', ARRAY['v']);
\echo kmap_count, random int8
SELECT count(*) FROM kmap_count('random_values', 'random_values', ARRAY['v']);
\echo quantile_cuts, int8 of one unkeyed hash
SELECT cardinality(quantile_cuts(v, 2)) FROM same_hash;
\echo quantile_cuts, random int8
SELECT cardinality(quantile_cuts(v, 2)) FROM random_values;
\echo kmap_count, fingerprints ending alike
SELECT count(*) FROM kmap_count('low_run', 'low_run', ARRAY['v']);
\echo kmap_count, random int8
SELECT count(*) FROM kmap_count('random_values', 'random_values', ARRAY['v']);
\echo singleton_count_key, v1-like uuids
SELECT singleton_count_key(k) FROM keys;
\echo singleton_count_key, random uuids
SELECT singleton_count_key(r) FROM keys;
SQL
