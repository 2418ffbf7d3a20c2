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

CREATE AGGREGATE rows_below_k(k integer, VARIADIC qid "any") (
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

-------------------------------------------------------------------------------
-- Heterogeneity and birthday uniqueness (Koot, Mandjes, van 't Noordende and
-- de Laat 2011)
-------------------------------------------------------------------------------

CREATE FUNCTION birthday_uniqueness(k bigint, n double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_uniform'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness(bigint, double precision) IS
'probability that k draws from n equally likely values are all distinct: n!/((n-k)! n^k)';

CREATE FUNCTION birthday_uniqueness(k bigint, n double precision, kappa double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_koot'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness(bigint, double precision, double precision) IS
'Koot et al.''s approximation for a distribution at KL distance kappa from uniform: pi_u(k,n) exp(-kappa k^2/n)';

CREATE FUNCTION birthday_uniqueness_approx(k bigint, n double precision, kappa double precision DEFAULT 0)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_approx'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness_approx(bigint, double precision, double precision) IS
'closed-form approximation exp(-(1/2 + kappa) k^2 / n)';

CREATE FUNCTION birthday_uniqueness_poisson(k bigint, n double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_poisson_uniform'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness_poisson(bigint, double precision) IS
'Poissonized uniform probability e^{-k} (1 + k/n)^n (exact for a Poisson(k) number of draws)';

CREATE FUNCTION birthday_max_k(target double precision, n double precision)
RETURNS bigint
AS 'MODULE_PATHNAME', 'birthday_max_k_uniform'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_max_k(double precision, double precision) IS
'largest group size k whose all-distinct probability under n uniform values is at least target';

CREATE FUNCTION birthday_max_k(target double precision, n double precision, kappa double precision)
RETURNS bigint
AS 'MODULE_PATHNAME', 'birthday_max_k_koot'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_max_k(double precision, double precision, double precision) IS
'largest group size k whose all-distinct probability under Koot''s approximation is at least target';

-- Aggregates over a distribution: raw rows share the frequency state
CREATE FUNCTION qidrisk_freq_value_transfn(internal, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'qidrisk_freq_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_value_param_transfn(internal, anyelement, bigint)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_param_value_transfn(internal, bigint, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'qidrisk_freq_k_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_target_value_transfn(internal, double precision, anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'qidrisk_freq_k_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- ... and (value, weight) rows a weighted state
CREATE FUNCTION qidrisk_weight_value_param_transfn(internal, anyelement, double precision, bigint)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_weight_param_transfn(internal, bigint, anyelement, double precision)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_weight_target_transfn(internal, double precision, anyelement, double precision)
RETURNS internal
AS 'MODULE_PATHNAME', 'qidrisk_weight_param_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_weight_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_weight_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_weight_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_kl_uniform_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_kl_uniform_weighted_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_birthday_exact_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_birthday_exact_weighted_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_birthday_poisson_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_birthday_poisson_weighted_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_birthday_max_k_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_birthday_max_k_weighted_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE kl_uniform(value anyelement) (
	SFUNC = qidrisk_freq_value_transfn, STYPE = internal,
	FINALFUNC = qidrisk_kl_uniform_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize, DESERIALFUNC = qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE kl_uniform(anyelement) IS
'Kullback-Leibler distance (natural log) of the values'' distribution to uniform over the observed values';

CREATE AGGREGATE kl_uniform(value anyelement, domain_size bigint) (
	SFUNC = qidrisk_freq_value_param_transfn, STYPE = internal,
	FINALFUNC = qidrisk_kl_uniform_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize, DESERIALFUNC = qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE kl_uniform(anyelement, bigint) IS
'Kullback-Leibler distance (natural log) of the values'' distribution to uniform over domain_size values';

CREATE AGGREGATE kl_uniform(value anyelement, weight double precision, domain_size bigint) (
	SFUNC = qidrisk_weight_value_param_transfn, STYPE = internal,
	FINALFUNC = qidrisk_kl_uniform_weighted_final,
	COMBINEFUNC = qidrisk_weight_combine,
	SERIALFUNC = qidrisk_weight_serialize, DESERIALFUNC = qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE kl_uniform(anyelement, double precision, bigint) IS
'Kullback-Leibler distance to uniform of a (value, weight) distribution such as a census table';

CREATE AGGREGATE birthday_uniqueness_exact(k bigint, value anyelement) (
	SFUNC = qidrisk_freq_param_value_transfn, STYPE = internal,
	FINALFUNC = qidrisk_birthday_exact_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize, DESERIALFUNC = qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_exact(bigint, anyelement) IS
'exact probability k! e_k(p) that k draws from the values'' distribution are all distinct';

CREATE AGGREGATE birthday_uniqueness_exact(k bigint, value anyelement, weight double precision) (
	SFUNC = qidrisk_weight_param_transfn, STYPE = internal,
	FINALFUNC = qidrisk_birthday_exact_weighted_final,
	COMBINEFUNC = qidrisk_weight_combine,
	SERIALFUNC = qidrisk_weight_serialize, DESERIALFUNC = qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_exact(bigint, anyelement, double precision) IS
'exact probability k! e_k(p) that k draws from a (value, weight) distribution are all distinct';

CREATE AGGREGATE birthday_uniqueness_poisson_product(k bigint, value anyelement) (
	SFUNC = qidrisk_freq_param_value_transfn, STYPE = internal,
	FINALFUNC = qidrisk_birthday_poisson_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize, DESERIALFUNC = qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_poisson_product(bigint, anyelement) IS
'Poissonized all-distinct probability prod_i e^{-k p_i} (1 + k p_i) of the values'' distribution';

CREATE AGGREGATE birthday_uniqueness_poisson_product(k bigint, value anyelement, weight double precision) (
	SFUNC = qidrisk_weight_param_transfn, STYPE = internal,
	FINALFUNC = qidrisk_birthday_poisson_weighted_final,
	COMBINEFUNC = qidrisk_weight_combine,
	SERIALFUNC = qidrisk_weight_serialize, DESERIALFUNC = qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_poisson_product(bigint, anyelement, double precision) IS
'Poissonized all-distinct probability prod_i e^{-k p_i} (1 + k p_i) of a (value, weight) distribution';

CREATE AGGREGATE birthday_max_k_exact(target double precision, value anyelement) (
	SFUNC = qidrisk_freq_target_value_transfn, STYPE = internal,
	FINALFUNC = qidrisk_birthday_max_k_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize, DESERIALFUNC = qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_max_k_exact(double precision, anyelement) IS
'largest group size k whose exact all-distinct probability under the values'' distribution is at least target';

CREATE AGGREGATE birthday_max_k_exact(target double precision, value anyelement, weight double precision) (
	SFUNC = qidrisk_weight_target_transfn, STYPE = internal,
	FINALFUNC = qidrisk_birthday_max_k_weighted_final,
	COMBINEFUNC = qidrisk_weight_combine,
	SERIALFUNC = qidrisk_weight_serialize, DESERIALFUNC = qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_max_k_exact(double precision, anyelement, double precision) IS
'largest group size k whose exact all-distinct probability under a (value, weight) distribution is at least target';
