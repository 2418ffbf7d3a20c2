/* qidrisk--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION qidrisk" to load this file. \quit

-------------------------------------------------------------------------------
-- Frequency aggregates over a quasi-identifier (one shared transition state)
-------------------------------------------------------------------------------

CREATE FUNCTION qidrisk_freq_transfn(internal, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_invtransfn(internal, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_k_transfn(internal, integer, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_k_invtransfn(internal, integer, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_singleton_count_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_class_count_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_k_anonymity_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_rows_below_k_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Everything class_profile reports about a quasi-identifier's classes
CREATE TYPE qid_profile AS (
	rows bigint,				-- rows aggregated
	classes bigint,				-- distinct value combinations
	singletons bigint,			-- rows alone in their class
	singleton_share double precision,	-- singletons / rows
	k_anonymity bigint,			-- smallest class size
	largest_class bigint,		-- largest class size
	class_sizes bigint[],		-- histogram: the class sizes that occur, ascending
	class_counts bigint[]		-- histogram: how many classes have each size
);

CREATE FUNCTION qidrisk_class_profile_final(internal)
RETURNS qid_profile
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE singleton_count(VARIADIC "any") (
	SFUNC = qidrisk_freq_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_singleton_count_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_transfn,
	MINVFUNC = qidrisk_freq_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_singleton_count_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE class_count(VARIADIC "any") (
	SFUNC = qidrisk_freq_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_class_count_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_transfn,
	MINVFUNC = qidrisk_freq_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_class_count_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE k_anonymity(VARIADIC "any") (
	SFUNC = qidrisk_freq_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_k_anonymity_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_transfn,
	MINVFUNC = qidrisk_freq_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_k_anonymity_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE class_profile(VARIADIC "any") (
	SFUNC = qidrisk_freq_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_class_profile_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_transfn,
	MINVFUNC = qidrisk_freq_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_class_profile_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE rows_below_k(integer, VARIADIC "any") (
	SFUNC = qidrisk_freq_k_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_rows_below_k_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_k_transfn,
	MINVFUNC = qidrisk_freq_k_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_rows_below_k_final,
	PARALLEL = SAFE
);

COMMENT ON AGGREGATE singleton_count(VARIADIC "any") IS
'rows whose quasi-identifier value combination occurs exactly once';
COMMENT ON AGGREGATE class_count(VARIADIC "any") IS
'number of distinct quasi-identifier value combinations (equivalence classes)';
COMMENT ON AGGREGATE k_anonymity(VARIADIC "any") IS
'k-anonymity level: the size of the smallest equivalence class (NULL over no rows)';
COMMENT ON AGGREGATE class_profile(VARIADIC "any") IS
'rows, classes, singletons, share, k level, largest class and class-size histogram';
COMMENT ON AGGREGATE rows_below_k(integer, VARIADIC "any") IS
'rows in equivalence classes smaller than k';

-- Rows of a profile that sit in classes smaller than k
CREATE FUNCTION rows_below(profile qid_profile, k integer)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF k < 1 THEN
		RAISE EXCEPTION 'k must be at least 1, not %', k
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN (SELECT coalesce(sum(h.s * h.c), 0)::bigint
			FROM unnest(profile.class_sizes, profile.class_counts) AS h(s, c)
			WHERE h.s < k);
END
$$;

COMMENT ON FUNCTION rows_below(qid_profile, integer) IS
'rows of a class_profile result that sit in classes smaller than k';

-- One row per class size of a profile's histogram
CREATE FUNCTION class_histogram(profile qid_profile)
RETURNS TABLE (class_size bigint, classes bigint, rows bigint)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT h.s, h.c, h.s * h.c
	FROM unnest(profile.class_sizes, profile.class_counts) WITH ORDINALITY AS h(s, c, i)
	ORDER BY h.i
$$;

COMMENT ON FUNCTION class_histogram(qid_profile) IS
'the class-size histogram of a class_profile result, one row per class size';
