-- qidrisk 0.1.0 -> 0.2.0.  A new installation of 0.2.0 runs qidrisk--0.1.0.sql
-- and then this script, so it holds every change of 0.2.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" to load this file. \quit

-- ==== numbers: keyed sampling of the approximate aggregates ====

-- The approximate aggregates sample classes by a keyed permutation of the
-- fingerprint (the key secret and new per statement, or fixed by the
-- superuser setting qidrisk.sample_seed); this exposes the permutation so
-- that tests can recompute a sample in plain SQL.
CREATE FUNCTION qidrisk_sample_permute(key uuid)
RETURNS uuid
AS 'MODULE_PATHNAME', 'qidrisk_sample_permute'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_sample_permute(uuid) IS
'internal: a qid_key as the approximate aggregates of the current statement sample it (their keyed permutation)';
