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

-------------------------------------------------------------------------------
-- Probabilistic anonymity (Lodha and Thomas 2008): tests and budgets
-------------------------------------------------------------------------------

CREATE FUNCTION singleton_fraction_bound(distinct_values double precision, population double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_singleton_fraction_bound'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION singleton_fraction_bound(double precision, double precision) IS
'largest expected share of singletons among population rows over distinct_values values: D/(e n) for D <= n, e^(-n/D) above';

CREATE FUNCTION alpha_qid_threshold(population double precision, alpha double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_alpha_qid_threshold'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alpha_qid_threshold(double precision, double precision) IS
'distinct combinations a QID must exceed to possibly be an alpha-quasi-identifier: n / ln(1/alpha) (Theorem 3)';

CREATE FUNCTION alpha_qid_possible(distinct_values double precision, population double precision, alpha double precision)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qidrisk_alpha_qid_possible'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alpha_qid_possible(double precision, double precision, double precision) IS
'whether a QID of distinct_values combinations can be an alpha-quasi-identifier of the population (Theorem 3)';

CREATE FUNCTION anonymity_partitions(population double precision, k double precision, beta double precision DEFAULT 0.1)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_anonymity_partitions'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION anonymity_partitions(double precision, double precision, double precision) IS
'most equally likely QID partitions that keep every row among k of the population with probability 1-beta (Theorem 4)';

CREATE FUNCTION bucket_budget(partitions double precision, distinct_counts double precision[],
							  weights double precision[] DEFAULT NULL)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'qidrisk_bucket_budget'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bucket_budget(double precision, double precision[], double precision[]) IS
'distinct values each column may keep so that their product is partitions (equation 1); columns already within budget keep theirs';

-- Distinct values per column, exact (one scan) or from pg_stats
CREATE FUNCTION column_distinct_counts(rel regclass, columns text[], estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	counts double precision[];
BEGIN
	IF rel IS NULL OR columns IS NULL OR cardinality(columns) = 0 THEN
		RAISE EXCEPTION 'column_distinct_counts needs a table and at least one column'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM @extschema@.qidrisk_require_columns(rel, columns);
	IF NOT estimated THEN
		-- NULL counts as one more value, as in GROUP BY
		EXECUTE format('SELECT ARRAY[%s]::float8[] FROM %s',
					   (SELECT string_agg(format('count(DISTINCT %1$I) + max(CASE WHEN %1$I IS NULL THEN 1 ELSE 0 END)', c), ', '
										  ORDER BY o)
						FROM unnest(columns) WITH ORDINALITY AS u(c, o)),
					   rel)
		INTO counts;
		RETURN QUERY SELECT c, coalesce(counts[o], 0)
					 FROM unnest(columns) WITH ORDINALITY AS u(c, o) ORDER BY o;
		RETURN;
	END IF;
	-- pg_stats shows only columns the caller may read
	RETURN QUERY
		SELECT u.c,
			   CASE WHEN s.n_distinct >= 0 THEN s.n_distinct
					ELSE -s.n_distinct * greatest(cl.reltuples, 0) END
			   + CASE WHEN s.null_frac > 0 THEN 1 ELSE 0 END
		FROM unnest(columns) WITH ORDINALITY AS u(c, o)
		JOIN pg_class cl ON cl.oid = rel
		JOIN pg_namespace n ON n.oid = cl.relnamespace
		LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = cl.relname
							AND s.attname = u.c AND NOT s.inherited
		ORDER BY u.o;
	IF EXISTS (SELECT 1 FROM unnest(columns) AS c
			   WHERE NOT EXISTS (SELECT 1 FROM pg_stats s JOIN pg_class cl ON cl.oid = rel
								 JOIN pg_namespace n ON n.oid = cl.relnamespace
								 WHERE s.schemaname = n.nspname AND s.tablename = cl.relname
								 AND s.attname = c AND NOT s.inherited)) THEN
		RAISE EXCEPTION '% has no statistics for some of these columns', rel
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Run ANALYZE on the table, or pass estimated => false for exact counts.';
	END IF;
END
$$;
COMMENT ON FUNCTION column_distinct_counts(regclass, text[], boolean) IS
'distinct values of each column (NULL counted as a value), exact or estimated from pg_stats';

CREATE FUNCTION distinct_product(rel regclass, columns text[], estimated boolean DEFAULT false)
RETURNS double precision
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT exp(sum(ln(greatest(d.distinct_values, 1))))
	FROM @extschema@.column_distinct_counts(rel, columns, estimated) AS d
$$;
COMMENT ON FUNCTION distinct_product(regclass, text[], boolean) IS
'the Multiple Domain Assumption: product of the columns'' distinct counts, exact or from pg_stats';

CREATE FUNCTION column_budgets(rel regclass, columns text[], population double precision,
							   k double precision, beta double precision DEFAULT 0.1,
							   weights double precision[] DEFAULT NULL,
							   estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision, budget double precision,
			   generalize boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH d AS (
		SELECT array_agg(c.column_name ORDER BY c.o) AS names,
			   array_agg(c.distinct_values ORDER BY c.o) AS counts
		FROM (SELECT x.*, row_number() OVER () AS o
			  FROM @extschema@.column_distinct_counts(rel, columns, estimated) AS x) AS c
	), b AS (
		SELECT d.names, d.counts,
			   @extschema@.bucket_budget(@extschema@.anonymity_partitions(population, k, beta),
										 d.counts, weights) AS budgets
		FROM d
	)
	SELECT b.names[i], b.counts[i], b.budgets[i], b.budgets[i] < b.counts[i]
	FROM b, generate_subscripts(b.names, 1) AS i
	ORDER BY i
$$;
COMMENT ON FUNCTION column_budgets(regclass, text[], double precision, double precision, double precision, double precision[], boolean) IS
'how many distinct values each QID column may keep for probabilistic (1-beta, k)-anonymity in a population (Theorem 4 and equation 1)';

-------------------------------------------------------------------------------
-- k-anonymous 1-D generalization: quantile buckets (Lodha and Thomas 2008,
-- Section 4)
-------------------------------------------------------------------------------

CREATE FUNCTION qidrisk_value_count_transfn(internal, anyelement, integer)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_value_count_cost_transfn(internal, anyelement, integer, text)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_value_count_cuts_transfn(internal, anyelement, anyarray)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_value_count_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_value_count_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_value_count_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_quantile_cuts_final(internal, anyelement, integer)
RETURNS anyarray
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_optimal_cuts_final(internal, anyelement, integer)
RETURNS anyarray
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_optimal_cuts_final(internal, anyelement, integer, text)
RETURNS anyarray
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_quantile_medians_final(internal, anyelement, anyarray)
RETURNS anyarray
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_quantile_means_final(internal, anyelement, anyarray)
RETURNS double precision[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE quantile_cuts(value anyelement, k integer) (
	SFUNC = qidrisk_value_count_transfn, STYPE = internal,
	FINALFUNC = qidrisk_quantile_cuts_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_value_count_serialize, DESERIALFUNC = qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE quantile_cuts(anyelement, integer) IS
'smallest value of each bucket of the most buckets of at least k rows that never split equal values (the quantile transformation)';

CREATE AGGREGATE optimal_cuts(value anyelement, k integer) (
	SFUNC = qidrisk_value_count_transfn, STYPE = internal,
	FINALFUNC = qidrisk_optimal_cuts_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_value_count_serialize, DESERIALFUNC = qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE optimal_cuts(anyelement, integer) IS
'cuts of the k-anonymous 1-D clustering of least sum of squares (dynamic program, ties never split)';

CREATE AGGREGATE optimal_cuts(value anyelement, k integer, cost text) (
	SFUNC = qidrisk_value_count_cost_transfn, STYPE = internal,
	FINALFUNC = qidrisk_optimal_cuts_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_value_count_serialize, DESERIALFUNC = qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE optimal_cuts(anyelement, integer, text) IS
'cuts of the k-anonymous 1-D clustering of least cost: sum_of_squares, k_median or k_center';

CREATE AGGREGATE quantile_medians(value anyelement, cuts anyarray) (
	SFUNC = qidrisk_value_count_cuts_transfn, STYPE = internal,
	FINALFUNC = qidrisk_quantile_medians_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_value_count_serialize, DESERIALFUNC = qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE quantile_medians(anyelement, anyarray) IS
'lower median of each bucket of cuts: the representative values of the quantile transformation';

CREATE AGGREGATE quantile_means(value anyelement, cuts anyarray) (
	SFUNC = qidrisk_value_count_cuts_transfn, STYPE = internal,
	FINALFUNC = qidrisk_quantile_means_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_value_count_serialize, DESERIALFUNC = qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE quantile_means(anyelement, anyarray) IS
'mean of each bucket of cuts, for numeric types';

CREATE FUNCTION quantile_bucket(value anyelement, cuts anyarray)
RETURNS integer
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket(anyelement, anyarray) IS
'bucket of a value: how many cuts are <= value (0 below the first cut), by binary search';

CREATE FUNCTION quantile_bucket_label(value anyelement, cuts anyarray)
RETURNS text
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_label'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_label(anyelement, anyarray) IS
'bucket of a value as text "[lower,upper)" in the type''s output format';

-- Raise the error for representatives that do not pair up with the cuts
CREATE FUNCTION qidrisk_representatives_mismatch(ncuts integer, nrepresentatives integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'representatives must have one element per cut (%), not %',
		coalesce(ncuts, 0), coalesce(nrepresentatives, 0)
		USING ERRCODE = 'array_subscript_error',
			  HINT = 'Use quantile_medians or quantile_means over the same cuts.';
END
$$;
COMMENT ON FUNCTION qidrisk_representatives_mismatch(integer, integer) IS
'internal: raise the error of quantile_bucket_value for representatives that do not pair up with the cuts';

-- the PL/pgSQL call happens only on a mismatch, not on every row
CREATE FUNCTION quantile_bucket_value(value anyelement, cuts anyarray, representatives anycompatiblearray)
RETURNS anycompatible
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT representatives[CASE WHEN coalesce(cardinality(cuts), 0) = coalesce(cardinality(representatives), 0)
								  THEN @extschema@.quantile_bucket(value, cuts)
								  ELSE @extschema@.qidrisk_representatives_mismatch(cardinality(cuts),
																					cardinality(representatives)) END] $$;
COMMENT ON FUNCTION quantile_bucket_value(anyelement, anyarray, anycompatiblearray) IS
'representative of a value''s bucket (from quantile_medians or quantile_means)';

CREATE FUNCTION quantile_bucket_range(value integer, cuts integer[])
RETURNS int4range
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_range'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_range(integer, integer[]) IS
'bucket of a value as a range [cut, next cut), unbounded before the first cut and after the last';

CREATE FUNCTION quantile_bucket_range(value bigint, cuts bigint[])
RETURNS int8range
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_range'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_range(bigint, bigint[]) IS
'bucket of a value as a range [cut, next cut), unbounded before the first cut and after the last';

CREATE FUNCTION quantile_bucket_range(value numeric, cuts numeric[])
RETURNS numrange
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_range'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_range(numeric, numeric[]) IS
'bucket of a value as a range [cut, next cut), unbounded before the first cut and after the last';

CREATE FUNCTION quantile_bucket_range(value date, cuts date[])
RETURNS daterange
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_range'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_range(date, date[]) IS
'bucket of a value as a range [cut, next cut), unbounded before the first cut and after the last';

CREATE FUNCTION quantile_bucket_range(value timestamp, cuts timestamp[])
RETURNS tsrange
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_range'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_range(timestamp, timestamp[]) IS
'bucket of a value as a range [cut, next cut), unbounded before the first cut and after the last';

CREATE FUNCTION quantile_bucket_range(value timestamptz, cuts timestamptz[])
RETURNS tstzrange
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_range'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_bucket_range(timestamptz, timestamptz[]) IS
'bucket of a value as a range [cut, next cut), unbounded before the first cut and after the last';

CREATE FUNCTION qidrisk_sample_transfn(internal, anyelement, integer)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sample_transfn(internal, anyelement, integer, double precision, double precision)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sample_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sample_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_sample_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_quantile_cuts_approx_final(internal, anyelement, integer)
RETURNS anyarray
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_quantile_cuts_approx_final(internal, anyelement, integer, double precision, double precision)
RETURNS anyarray
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE quantile_cuts_approx(value anyelement, k integer) (
	SFUNC = qidrisk_sample_transfn, STYPE = internal,
	FINALFUNC = qidrisk_quantile_cuts_approx_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_sample_combine,
	SERIALFUNC = qidrisk_sample_serialize, DESERIALFUNC = qidrisk_sample_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE quantile_cuts_approx(anyelement, integer) IS
'quantile_cuts from a uniform sample of (1/eps) ln(1/delta) values, eps = 0.001, delta = 0.01: bounded memory, mergeable';

CREATE AGGREGATE quantile_cuts_approx(value anyelement, k integer, eps double precision, delta double precision) (
	SFUNC = qidrisk_sample_transfn, STYPE = internal,
	FINALFUNC = qidrisk_quantile_cuts_approx_final, FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_sample_combine,
	SERIALFUNC = qidrisk_sample_serialize, DESERIALFUNC = qidrisk_sample_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE quantile_cuts_approx(anyelement, integer, double precision, double precision) IS
'quantile_cuts from a uniform sample of (1/eps) ln(1/delta) values: bounded memory, mergeable';

CREATE FUNCTION quantile_sample_size(eps double precision, delta double precision)
RETURNS integer
AS 'MODULE_PATHNAME', 'qidrisk_quantile_sample_size'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION quantile_sample_size(double precision, double precision) IS
'sample size ceil((1/eps) ln(1/delta)) that quantile_cuts_approx keeps';

-------------------------------------------------------------------------------
-- Utility of a generalization
-------------------------------------------------------------------------------

CREATE TYPE generalization_utility AS (
	rows bigint,
	rows_modified bigint,
	error double precision,
	min_error double precision,
	normalized_error double precision,
	rank_difference double precision
);

CREATE FUNCTION qidrisk_utility_transfn(internal, double precision, double precision)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_utility_final(internal)
RETURNS generalization_utility
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE generalization_utility(original double precision, generalized double precision) (
	SFUNC = qidrisk_utility_transfn, STYPE = internal,
	FINALFUNC = qidrisk_utility_final,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE generalization_utility(double precision, double precision) IS
'rows modified, squared error, Error/MinError and rank difference of a generalization of a numeric column';

-------------------------------------------------------------------------------
-- Categorical generalization through a hierarchy table
-------------------------------------------------------------------------------

CREATE FUNCTION hierarchy_generalize(rel regclass, column_name text, hierarchy regclass,
									 max_values bigint DEFAULT NULL, min_rows bigint DEFAULT NULL,
									 child_column text DEFAULT 'child',
									 parent_column text DEFAULT 'parent')
RETURNS TABLE (value text, generalized text, level integer, rows bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad text;
BEGIN
	IF rel IS NULL OR column_name IS NULL OR hierarchy IS NULL
	   OR child_column IS NULL OR parent_column IS NULL THEN
		RAISE EXCEPTION 'hierarchy_generalize needs a table, a column and a hierarchy'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF max_values IS NULL AND min_rows IS NULL THEN
		RAISE EXCEPTION 'hierarchy_generalize needs max_values, min_rows or both'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF max_values < 1 OR min_rows < 1 THEN
		RAISE EXCEPTION 'max_values and min_rows must be at least 1'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- a child with two parents has no single generalization
	EXECUTE format('SELECT %1$I::text FROM %3$s WHERE %1$I IS NOT NULL GROUP BY %1$I
					HAVING count(DISTINCT %2$I) > 1 LIMIT 1',
				   child_column, parent_column, hierarchy)
	INTO bad;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'hierarchy % gives "%" more than one parent', hierarchy, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	EXECUTE format($q$
		WITH RECURSIVE chain(node, depth) AS (
			SELECT DISTINCT %1$I::text, 0 FROM %2$s
			UNION ALL
			SELECT h.%4$I::text, c.depth + 1
			FROM chain c JOIN %3$s h ON h.%5$I::text = c.node
			WHERE h.%4$I IS NOT NULL
		) CYCLE node SET looped USING path
		SELECT node FROM chain WHERE looped LIMIT 1$q$,
		column_name, rel, hierarchy, parent_column, child_column)
	INTO bad;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'hierarchy % has a cycle through "%"', hierarchy, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	RETURN QUERY EXECUTE format($q$
		WITH RECURSIVE vals AS (
			SELECT %1$I::text AS value, count(*) AS rows FROM %2$s GROUP BY 1
		), chain(value, node, depth) AS (
			SELECT v.value, v.value, 0 FROM vals v
			UNION ALL
			SELECT c.value, h.%4$I::text, c.depth + 1
			FROM chain c JOIN %3$s h ON h.%5$I::text = c.node
			WHERE h.%4$I IS NOT NULL
		), tops AS (
			SELECT c.value, max(c.depth) AS top FROM chain c GROUP BY c.value
		), levels AS (
			SELECT generate_series(0, (SELECT max(t.top) FROM tops t)) AS level
		), mapped AS (
			SELECT l.level, v.value, v.rows, c.node AS generalized
			FROM levels l CROSS JOIN vals v
			LEFT JOIN tops t ON t.value IS NOT DISTINCT FROM v.value
			LEFT JOIN chain c ON c.value = v.value AND c.depth = least(l.level, t.top)
		), fits AS (
			SELECT g.level FROM (
				SELECT m.level, m.generalized, sum(m.rows) AS r FROM mapped m
				WHERE m.value IS NOT NULL GROUP BY 1, 2
			) g
			GROUP BY g.level
			HAVING ($1 IS NULL OR count(*) <= $1) AND ($2 IS NULL OR min(g.r) >= $2)
			ORDER BY g.level LIMIT 1
		)
		SELECT m.value, m.generalized, m.level, m.rows::bigint
		FROM mapped m JOIN fits f ON f.level = m.level
		ORDER BY m.generalized, m.value$q$,
		column_name, rel, hierarchy, parent_column, child_column)
	USING max_values, min_rows;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'no level of hierarchy % meets max_values = % and min_rows = %',
			hierarchy, max_values, min_rows
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Even the top of the hierarchy is too fine; add a coarser level or relax the policy.';
	END IF;
END
$$;
COMMENT ON FUNCTION hierarchy_generalize(regclass, text, regclass, bigint, bigint, text, text) IS
'lowest level of a child -> parent hierarchy at which a column has at most max_values values and at least min_rows rows per value';

-- ==== pre-publication checks (issue 8) ====

-- The rules a policy may name, in the order qid_check reports them.  Adding a
-- rule: one row here and one branch in qidrisk_check_rule (and its settings
-- in qidrisk_check_validate).
CREATE FUNCTION qid_check_rules()
RETURNS TABLE (rule text, setting text, description text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.rule, r.setting, r.description
	FROM (VALUES
		(1, 'min_k', 'whole number >= 1',
		 'k-anonymity level (smallest class size) must be at least this'),
		(2, 'max_singleton_share', 'number in [0, 1]',
		 'share of rows alone in their class must be at most this'),
		(3, 'max_rows_below_k', '{"k": whole number >= 1, "max": number >= 0}',
		 'rows in classes smaller than k must be at most max'),
		(4, 'max_birthday_uniqueness', '{"group_size": whole number >= 1, "max": number in [0, 1]}',
		 'probability that group_size people drawn from the table''s QID distribution are all distinct must be at most max'),
		(5, 'min_kmap', '{"population": table name, "k": whole number >= 1, "weight": column name (optional), "population_qid": array of column names (optional)}',
		 'k-map value against the population table (smallest population count of a QID class, see kmap_count) must be at least k'),
		(6, 'max_qar_risk', '{"max": number in [0, 1], "columns": array of column names (optional, default the QID), "p": whole number >= 1 (default 3), "alpha": number in (0, 1) (default 0.01), "pi_u": number in (0, 1) (default 0.05)}',
		 'QaR dataset risk T(p, alpha) over the p-column subsets of the columns (see qar_risk) must be at most max')
	) AS r(o, rule, setting, description)
	ORDER BY r.o
$$;
COMMENT ON FUNCTION qid_check_rules() IS
'the rules a qid_check policy may contain, with the form of their setting';

-- History of checks run with record_history => true; each role sees its own
-- rows, the extension's owner all of them
CREATE TABLE qidrisk_check_history (
	checked_at timestamptz NOT NULL DEFAULT now(),
	checked_by name NOT NULL DEFAULT current_user,
	relation text NOT NULL,
	qid text[] NOT NULL,
	policy jsonb NOT NULL,
	results jsonb NOT NULL,
	passed boolean NOT NULL
);
COMMENT ON TABLE qidrisk_check_history IS
'runs of qid_check / qid_assert with record_history => true: when, who, which table and QID, policy, per-rule results';
SELECT pg_catalog.pg_extension_config_dump('qidrisk_check_history', '');
ALTER TABLE qidrisk_check_history ENABLE ROW LEVEL SECURITY;
-- a role sees the rows of roles it is a member of (itself included); pg_read_all_data sees all
CREATE POLICY qidrisk_check_history_read ON qidrisk_check_history FOR SELECT
	USING (checked_by = current_user
		   OR pg_catalog.pg_has_role('pg_read_all_data', 'MEMBER')
		   OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
					  WHERE r.rolname = checked_by AND pg_catalog.pg_has_role(r.oid, 'MEMBER')));
-- nobody records a run in another role's name
CREATE POLICY qidrisk_check_history_write ON qidrisk_check_history FOR INSERT
	WITH CHECK (checked_by = current_user);
GRANT SELECT, INSERT ON qidrisk_check_history TO PUBLIC;
-- the installing role owns the history: it reads every row and can pg_dump it
-- (pg_dump refuses tables whose row-level security applies to the dumping role)
ALTER TABLE qidrisk_check_history OWNER TO @extowner@;

-- Raise 42703 naming the first of columns that rel lacks (column_distinct_counts, qid_check)
CREATE FUNCTION qidrisk_require_columns(rel regclass, columns text[])
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	missing text;
BEGIN
	SELECT c INTO missing FROM unnest(columns) AS c
	WHERE c IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = rel
								   AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped)
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'column "%" does not exist in %', missing, rel
			USING ERRCODE = 'undefined_column';
	END IF;
END
$$;
COMMENT ON FUNCTION qidrisk_require_columns(regclass, text[]) IS
'internal: raise undefined_column for the first listed column the relation lacks';

-- A number from a policy setting, within [low, high], whole if asked; else 22023
CREATE FUNCTION qidrisk_check_number(rule text, setting jsonb, field text,
									 low double precision, high double precision, whole boolean)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v jsonb := CASE WHEN field IS NULL THEN setting ELSE setting -> field END;
	x double precision;
	what text := CASE WHEN field IS NULL THEN rule ELSE format('%s.%s', rule, field) END;
BEGIN
	IF v IS NULL OR jsonb_typeof(v) <> 'number' THEN
		RAISE EXCEPTION 'policy rule % must be a number, not %', what, coalesce(v::text, 'missing')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'SELECT * FROM qid_check_rules() lists every rule and its setting.';
	END IF;
	-- compared as numeric first: a JSON number may lie beyond double precision
	IF v::text::numeric < low::numeric OR v::text::numeric > least(high, 1e300)::numeric THEN
		x := 'NaN';
	ELSE
		x := v::text::double precision;
	END IF;
	IF x = 'NaN' OR x < low OR x > high OR (whole AND x <> trunc(x)) THEN
		RAISE EXCEPTION 'policy rule % must be a % %, not %', what,
			CASE WHEN whole THEN 'whole number' ELSE 'number' END,
			CASE WHEN high = 'Infinity' THEN format('at least %s', low)
				 ELSE format('in [%s, %s]', low, high) END, v
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN x;
END
$$;
COMMENT ON FUNCTION qidrisk_check_number(text, jsonb, text, double precision, double precision, boolean) IS
'internal: a validated number from a qid_check policy setting';

-- An optional array of column names in a policy setting; else 22023
CREATE FUNCTION qidrisk_check_names(rule text, setting jsonb, field text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v jsonb := setting -> field;
BEGIN
	IF v IS NULL THEN
		RETURN NULL;
	END IF;
	IF jsonb_typeof(v) <> 'array' OR jsonb_array_length(v) = 0
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) AS e WHERE jsonb_typeof(e) <> 'string') THEN
		RAISE EXCEPTION 'policy rule %.% must be a non-empty array of column names, not %', rule, field, v
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN ARRAY(SELECT jsonb_array_elements_text(v));
END
$$;
COMMENT ON FUNCTION qidrisk_check_names(text, jsonb, text) IS
'internal: a validated optional array of column names from a qid_check policy setting';

-- The min_kmap population table; an unqualified name is in the checked table's schema
CREATE FUNCTION qidrisk_check_population(rel regclass, setting jsonb)
RETURNS regclass
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	parts text[] := parse_ident(setting ->> 'population');
BEGIN
	IF cardinality(parts) = 1 THEN
		parts := ARRAY[(SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
						WHERE c.oid = rel), parts[1]];
	END IF;
	IF cardinality(parts) <> 2 THEN
		RAISE EXCEPTION 'policy rule min_kmap.population must be a table name, not %', setting -> 'population'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN format('%I.%I', parts[1], parts[2])::regclass;
END
$$;
COMMENT ON FUNCTION qidrisk_check_population(regclass, jsonb) IS
'internal: the population table of a min_kmap rule; an unqualified name is looked up in the schema of the checked table';

-- Reject a policy, table or QID qid_check cannot evaluate, before any scan
CREATE FUNCTION qidrisk_check_validate(rel regclass, qid text[], policy jsonb)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad text;
	s jsonb;
BEGIN
	IF rel IS NULL OR qid IS NULL OR policy IS NULL THEN
		RAISE EXCEPTION 'qid_check needs a table, its QID columns and a policy, not NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF cardinality(qid) = 0 THEN
		RAISE EXCEPTION 'qid_check needs at least one QID column'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM @extschema@.qidrisk_require_columns(rel, qid);
	IF jsonb_typeof(policy) <> 'object' THEN
		RAISE EXCEPTION 'a qid_check policy must be a JSON object, not %', jsonb_typeof(policy)
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example ''{"min_k": 5, "max_singleton_share": 0}''.';
	END IF;
	SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO bad
	FROM jsonb_object_keys(policy) AS k
	WHERE k NOT IN (SELECT r.rule FROM @extschema@.qid_check_rules() AS r);
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'unknown qid_check policy rule %', bad
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('Known rules: %s.',
								(SELECT string_agg(r.rule, ', ') FROM @extschema@.qid_check_rules() AS r));
	END IF;
	IF policy = '{}' THEN
		RAISE EXCEPTION 'a qid_check policy needs at least one rule'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- IF, not PERFORM ... WHERE: the planner folds immutable calls on constants
	IF policy ? 'min_k' THEN
		PERFORM @extschema@.qidrisk_check_number('min_k', policy -> 'min_k', NULL, 1, 'Infinity', true);
	END IF;
	IF policy ? 'max_singleton_share' THEN
		PERFORM @extschema@.qidrisk_check_number('max_singleton_share', policy -> 'max_singleton_share',
												 NULL, 0, 1, false);
	END IF;
	FOR s, bad IN
		SELECT policy -> r.rule, r.rule FROM @extschema@.qid_check_rules() AS r
		WHERE policy ? r.rule AND r.setting LIKE '{%'
	LOOP
		IF jsonb_typeof(s) <> 'object' THEN
			RAISE EXCEPTION 'policy rule % must be an object %, not %', bad,
				(SELECT r.setting FROM @extschema@.qid_check_rules() AS r WHERE r.rule = bad), s
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		IF EXISTS (SELECT 1 FROM jsonb_object_keys(s) AS k
				   WHERE k <> ALL (CASE bad
									   WHEN 'max_rows_below_k' THEN ARRAY['k', 'max']
									   WHEN 'max_birthday_uniqueness' THEN ARRAY['group_size', 'max']
									   WHEN 'min_kmap' THEN ARRAY['population', 'k', 'weight', 'population_qid']
									   WHEN 'max_qar_risk' THEN ARRAY['max', 'columns', 'p', 'alpha', 'pi_u']
								   END)) THEN
			RAISE EXCEPTION 'policy rule % has an unknown setting in %', bad, s
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'SELECT * FROM qid_check_rules() lists every rule and its setting.';
		END IF;
	END LOOP;
	IF policy ? 'max_rows_below_k' THEN
		PERFORM @extschema@.qidrisk_check_number('max_rows_below_k', policy -> 'max_rows_below_k', 'k',
												 1, 2147483647, true);
		PERFORM @extschema@.qidrisk_check_number('max_rows_below_k', policy -> 'max_rows_below_k', 'max',
												 0, 'Infinity', false);
	END IF;
	IF policy ? 'max_birthday_uniqueness' THEN
		PERFORM @extschema@.qidrisk_check_number('max_birthday_uniqueness', policy -> 'max_birthday_uniqueness',
												 'group_size', 1, 9.2e18, true);
		PERFORM @extschema@.qidrisk_check_number('max_birthday_uniqueness', policy -> 'max_birthday_uniqueness',
												 'max', 0, 1, false);
	END IF;
	IF policy ? 'min_kmap' THEN
		s := policy -> 'min_kmap';
		PERFORM @extschema@.qidrisk_check_number('min_kmap', s, 'k', 1, 'Infinity', true);
		IF jsonb_typeof(s -> 'population') IS DISTINCT FROM 'string' THEN
			RAISE EXCEPTION 'policy rule min_kmap.population must be a table name, not %',
				coalesce((s -> 'population')::text, 'missing')
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		PERFORM @extschema@.qidrisk_check_population(rel, s);
		IF s ? 'weight' AND jsonb_typeof(s -> 'weight') <> 'string' THEN
			RAISE EXCEPTION 'policy rule min_kmap.weight must be a column name, not %', s -> 'weight'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		PERFORM @extschema@.qidrisk_check_names('min_kmap', s, 'population_qid');
	END IF;
	IF policy ? 'max_qar_risk' THEN
		s := policy -> 'max_qar_risk';
		PERFORM @extschema@.qidrisk_check_number('max_qar_risk', s, 'max', 0, 1, false);
		PERFORM @extschema@.qidrisk_check_names('max_qar_risk', s, 'columns');
		IF s ? 'p' THEN
			PERFORM @extschema@.qidrisk_check_number('max_qar_risk', s, 'p', 1, 2147483647, true);
		END IF;
		IF s ? 'alpha' THEN
			PERFORM @extschema@.qidrisk_check_number('max_qar_risk', s, 'alpha', 0, 1, false);
		END IF;
		IF s ? 'pi_u' THEN
			PERFORM @extschema@.qidrisk_check_number('max_qar_risk', s, 'pi_u', 0, 1, false);
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION qidrisk_check_validate(regclass, text[], jsonb) IS
'internal: reject a NULL, empty or unknown table/QID/policy of qid_check with a clear error';

-- Check a table against a publication policy, one row per rule of the policy
CREATE FUNCTION qid_check(rel regclass, qid text[], policy jsonb, record_history boolean DEFAULT false)
RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision,
			   passed boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols text;
	profile @extschema@.qid_profile;
	r record;
	results jsonb := '[]';
BEGIN
	PERFORM @extschema@.qidrisk_check_validate(rel, qid, policy);
	IF record_history IS NULL THEN
		RAISE EXCEPTION 'record_history must not be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT string_agg(format('%I', c), ', ' ORDER BY o) INTO cols
	FROM unnest(qid) WITH ORDINALITY AS u(c, o);
	-- one scan serves every rule read from the class profile
	IF policy ?| ARRAY['min_k', 'max_singleton_share', 'max_rows_below_k'] THEN
		EXECUTE format('SELECT (p.p).* FROM (SELECT @extschema@.class_profile(%s) AS p FROM %s) AS p', cols, rel)
		INTO profile;
	END IF;
	FOR r IN SELECT q.rule FROM @extschema@.qid_check_rules() AS q WHERE policy ? q.rule LOOP
		rule := r.rule;
		setting := policy -> r.rule;
		CASE r.rule
			WHEN 'min_k' THEN
				measured := profile.k_anonymity;
				threshold := setting::text::double precision;
				passed := measured IS NULL OR measured >= threshold;
			WHEN 'max_singleton_share' THEN
				measured := profile.singleton_share;
				threshold := setting::text::double precision;
				passed := measured IS NULL OR measured <= threshold;
			WHEN 'max_rows_below_k' THEN
				measured := @extschema@.rows_below(profile, (setting ->> 'k')::integer);
				threshold := (setting ->> 'max')::double precision;
				passed := measured <= threshold;
			WHEN 'max_birthday_uniqueness' THEN
				-- the QID's class frequencies are the distribution people are drawn from
				EXECUTE format('SELECT @extschema@.birthday_uniqueness_exact($1, c.id, c.n)
								FROM (SELECT row_number() OVER () AS id, count(*)::float8 AS n
									  FROM %s GROUP BY %s) AS c', rel, cols)
				INTO measured USING (setting ->> 'group_size')::bigint;
				threshold := (setting ->> 'max')::double precision;
				passed := measured IS NULL OR measured <= threshold;
			WHEN 'min_kmap' THEN
				-- an empty release has no class to find in the population
				measured := @extschema@.kmap_value(rel, @extschema@.qidrisk_check_population(rel, setting), qid,
												   setting ->> 'weight',
												   @extschema@.qidrisk_check_names(r.rule, setting, 'population_qid'));
				threshold := (setting ->> 'k')::double precision;
				passed := measured IS NULL OR measured >= threshold;
			WHEN 'max_qar_risk' THEN
				SELECT q.risk INTO measured
				FROM @extschema@.qar_risk(rel,
										  coalesce(@extschema@.qidrisk_check_names(r.rule, setting, 'columns'), qid),
										  coalesce((setting ->> 'p')::integer, 3),
										  coalesce((setting ->> 'alpha')::double precision, 0.01),
										  coalesce((setting ->> 'pi_u')::double precision, 0.05)) AS q;
				threshold := (setting ->> 'max')::double precision;
				passed := measured <= threshold;
		END CASE;
		results := results || jsonb_build_object('rule', rule, 'setting', setting, 'measured', measured,
												  'threshold', threshold, 'passed', passed);
		RETURN NEXT;
	END LOOP;
	IF record_history THEN
		INSERT INTO @extschema@.qidrisk_check_history (relation, qid, policy, results, passed)
		VALUES (rel::text, qid, policy, results, NOT (results @> '[{"passed": false}]'));
	END IF;
END
$$;
COMMENT ON FUNCTION qid_check(regclass, text[], jsonb, boolean) IS
'check a table or view against a publication policy: one row per rule (measured, threshold, passed); record_history => true also appends the run to qidrisk_check_history';

-- The failing rules of a check as a JSON array (empty when the policy holds)
CREATE FUNCTION qidrisk_check_failures(rel regclass, qid text[], policy jsonb, record_history boolean)
RETURNS jsonb
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(jsonb_agg(jsonb_build_object('rule', c.rule, 'measured', c.measured,
												 'threshold', c.threshold)) FILTER (WHERE NOT c.passed),
					'[]')
	FROM @extschema@.qid_check(rel, qid, policy, record_history) AS c
$$;
COMMENT ON FUNCTION qidrisk_check_failures(regclass, text[], jsonb, boolean) IS
'internal: the rules of qid_check that failed, as a JSON array';

-- Raise SQLSTATE QR001 naming the failed rules, if any
CREATE FUNCTION qidrisk_check_raise(rel regclass, failures jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF jsonb_array_length(failures) = 0 THEN
		RETURN;
	END IF;
	RAISE EXCEPTION 'qidrisk policy check failed for %: %', rel,
		(SELECT string_agg(f ->> 'rule', ', ' ORDER BY o) FROM jsonb_array_elements(failures) WITH ORDINALITY AS a(f, o))
		USING ERRCODE = 'QR001',
			  DETAIL = (SELECT string_agg(format('%s: measured %s, threshold %s.', f ->> 'rule',
												 coalesce(f ->> 'measured', 'NULL'), f ->> 'threshold'), ' ' ORDER BY o)
						FROM jsonb_array_elements(failures) WITH ORDINALITY AS a(f, o)),
			  HINT = 'qid_check() with the same arguments lists every rule.';
END
$$;
COMMENT ON FUNCTION qidrisk_check_raise(regclass, jsonb) IS
'internal: raise SQLSTATE QR001 naming the failed rules of a check';

-- The asserting form: no SET clause (it would forbid COMMIT); every name is qualified
CREATE PROCEDURE qid_assert(rel regclass, qid text[], policy jsonb, record_history boolean DEFAULT false)
LANGUAGE plpgsql
AS $$
DECLARE
	failures jsonb;
BEGIN
	failures := @extschema@.qidrisk_check_failures(rel, qid, policy, record_history);
	IF record_history THEN
		-- keep the history row of a failing run
		COMMIT;
	END IF;
	PERFORM @extschema@.qidrisk_check_raise(rel, failures);
END
$$;
COMMENT ON PROCEDURE qid_assert(regclass, text[], jsonb, boolean) IS
'raise SQLSTATE QR001 naming the failed rules when a table breaks its publication policy; record_history => true records the run and commits it first (needs a CALL outside a transaction block)';

-- ==== Quasi-identifier search and generalization (issue 3) ====

CREATE FUNCTION qid_search(rel regclass, columns text[] DEFAULT NULL, max_size integer DEFAULT NULL,
						   drop_incomplete boolean DEFAULT false, summary boolean DEFAULT false)
RETURNS TABLE (columns text[], size integer, singletons bigint, singleton_share double precision,
			   classes bigint, is_identifier boolean, is_minimal_identifier boolean,
			   is_best boolean, rows bigint, rows_dropped bigint)
AS 'MODULE_PATHNAME', 'qidrisk_qid_search'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qid_search(regclass, text[], integer, boolean, boolean) IS
'singletons and classes of every subset of the candidate columns (one scan, stripped partitions), best quasi-identifier first';

-- ==== k-map and weighted-sample risk (issue 6) ====

-- The population scan of kmap_count: an aggregate, so that it can run in
-- parallel workers; its final value is the sum table of the release's classes
CREATE FUNCTION qidrisk_kmap_probe_transfn(internal, bytea, double precision, VARIADIC "any")
RETURNS internal AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_kmap_probe_transfn(internal, bytea, double precision, VARIADIC "any") IS
'internal: transition function of qidrisk_kmap_probe';
CREATE FUNCTION qidrisk_kmap_probe_combine(internal, internal)
RETURNS internal AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_kmap_probe_combine(internal, internal) IS
'internal: combine function of qidrisk_kmap_probe';
CREATE FUNCTION qidrisk_kmap_probe_serialize(internal)
RETURNS bytea AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_kmap_probe_serialize(internal) IS
'internal: serialization function of qidrisk_kmap_probe';
CREATE FUNCTION qidrisk_kmap_probe_deserialize(bytea, internal)
RETURNS internal AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_kmap_probe_deserialize(bytea, internal) IS
'internal: deserialization function of qidrisk_kmap_probe';
CREATE FUNCTION qidrisk_kmap_probe_final(internal)
RETURNS bytea AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_kmap_probe_final(internal) IS
'internal: final function of qidrisk_kmap_probe';
CREATE AGGREGATE qidrisk_kmap_probe(keys bytea, weight double precision, VARIADIC qid "any") (
	SFUNC = qidrisk_kmap_probe_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_kmap_probe_final,
	COMBINEFUNC = qidrisk_kmap_probe_combine,
	SERIALFUNC = qidrisk_kmap_probe_serialize,
	DESERIALFUNC = qidrisk_kmap_probe_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE qidrisk_kmap_probe(bytea, double precision, VARIADIC "any") IS
'internal to kmap_count: sums the weights of the rows whose QID fingerprint is one of keys, as a table laid out by those keys';

CREATE FUNCTION kmap_count(release regclass, population regclass, qid text[],
						   population_weight text DEFAULT NULL,
						   population_qid text[] DEFAULT NULL)
RETURNS TABLE (class jsonb, release_rows bigint, population_rows double precision)
AS 'MODULE_PATHNAME', 'qidrisk_kmap_count'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kmap_count(regclass, regclass, text[], text, text[]) IS
'k-map: for each QID class of the release, its rows and the matching rows of the population (or the sum of their weights); NULL matches NULL';

CREATE FUNCTION kmap_row_counts(release regclass, population regclass, qid text[],
								population_weight text DEFAULT NULL,
								population_qid text[] DEFAULT NULL)
RETURNS TABLE (release_row jsonb, class jsonb, release_rows bigint,
			   population_rows double precision)
AS 'MODULE_PATHNAME', 'qidrisk_kmap_row_counts'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kmap_row_counts(regclass, regclass, text[], text, text[]) IS
'k-map per release row: each row of the release (to_jsonb) with its class and the class''s release and population counts';

CREATE FUNCTION kmap_value(release regclass, population regclass, qid text[],
						   population_weight text DEFAULT NULL,
						   population_qid text[] DEFAULT NULL)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT min(k.population_rows)
	FROM @extschema@.kmap_count(release, population, qid, population_weight, population_qid) AS k
$$;
COMMENT ON FUNCTION kmap_value(regclass, regclass, text[], text, text[]) IS
'the k-map value of the release: the smallest population count of its QID classes (NULL for an empty release)';

CREATE FUNCTION kmap_rows_below(release regclass, population regclass, qid text[],
								k double precision,
								population_weight text DEFAULT NULL,
								population_qid text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF k IS NULL THEN
		RAISE EXCEPTION 'kmap_rows_below: k must not be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF k = 'NaN'::float8 OR k = 'Infinity'::float8 OR k <= 0 THEN
		RAISE EXCEPTION 'kmap_rows_below: k must be a finite number above 0, not %', k
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN (SELECT coalesce(sum(c.release_rows) FILTER (WHERE c.population_rows < k), 0)::bigint
			FROM @extschema@.kmap_count(release, population, qid, population_weight,
										population_qid) AS c);
END
$$;
COMMENT ON FUNCTION kmap_rows_below(regclass, regclass, text[], double precision, text, text[]) IS
'rows of the release whose QID class matches fewer than k population rows (or less than k of population weight)';

CREATE FUNCTION individual_risk(sample_frequency bigint, population_frequency double precision,
								method text DEFAULT 'approx')
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_individual_risk'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION individual_risk(bigint, double precision, text) IS
're-identification risk of a record in a sample class of f rows with estimated population F (Benedetti-Franconi negative-binomial model, as sdcMicro indivRisk; method approx or exact)';

CREATE FUNCTION weighted_risk(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
RETURNS TABLE (class jsonb, sample_rows bigint, estimated_population double precision,
			   individual_risk double precision)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- checked before the scan, so that an empty table cannot hide a bad argument
	IF rel IS NULL OR qid IS NULL OR method IS NULL THEN
		RAISE EXCEPTION 'weighted_risk: % must not be NULL',
			CASE WHEN rel IS NULL THEN 'rel' WHEN qid IS NULL THEN 'qid' ELSE 'method' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM @extschema@.individual_risk(1, 1, method);
	RETURN QUERY
	SELECT k.class, k.release_rows, k.population_rows,
		   @extschema@.individual_risk(k.release_rows, k.population_rows, method)
	FROM @extschema@.kmap_count(rel, rel, qid, weight) AS k;
END
$$;
COMMENT ON FUNCTION weighted_risk(regclass, text[], text, text) IS
'per QID class of a weighted sample: its rows f_k, the estimated population F_k (sum of weights) and the individual risk of each of its records';

CREATE FUNCTION weighted_risk_summary(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
RETURNS TABLE (sample_rows bigint, classes bigint, sample_uniques bigint,
			   estimated_population double precision, expected_reidentifications double precision,
			   reidentification_rate double precision, max_individual_risk double precision)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(sum(w.sample_rows), 0)::bigint,
		   count(*),
		   count(*) FILTER (WHERE w.sample_rows = 1),
		   coalesce(sum(w.estimated_population), 0),
		   coalesce(sum(w.sample_rows * w.individual_risk), 0),
		   sum(w.sample_rows * w.individual_risk) / sum(w.sample_rows),
		   max(w.individual_risk)
	FROM @extschema@.weighted_risk(rel, qid, weight, method) AS w
$$;
COMMENT ON FUNCTION weighted_risk_summary(regclass, text[], text, text) IS
'global risk of a weighted sample: expected number of re-identifications (sum of the records'' individual risks), its rate per record, sample uniques and the largest individual risk';

-- ==== Approximate estimators and the distributed path (issue 9) ====

-- What approx_class_profile estimates about a quasi-identifier's classes
CREATE TYPE qid_profile_estimate AS (
	rows bigint,				-- rows aggregated (exact)
	classes double precision,	-- estimated distinct value combinations
	classes_se double precision,	-- its standard error
	singletons double precision,	-- estimated rows alone in their class
	singletons_se double precision,	-- its standard error
	singleton_share double precision,	-- singletons / rows
	sampling_rate double precision,	-- share of classes kept: 2^-level (1: exact)
	sampled_classes bigint,		-- classes kept in the sample
	class_sizes bigint[],		-- histogram: the class sizes seen in the sample, ascending
	class_counts double precision[],	-- estimated classes of each size
	class_counts_se double precision[]	-- their standard errors
);

CREATE FUNCTION qidrisk_sketch_transfn(internal, integer, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_default_transfn(internal, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_key_transfn(internal, integer, uuid)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_key_default_transfn(internal, uuid)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_profile_final(internal)
RETURNS qid_profile_estimate
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_singletons_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_sketch_classes_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE approx_class_profile(capacity integer, VARIADIC qid "any") (
	SFUNC = qidrisk_sketch_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_sketch_profile_final,
	COMBINEFUNC = qidrisk_sketch_combine,
	SERIALFUNC = qidrisk_sketch_serialize,
	DESERIALFUNC = qidrisk_sketch_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE approx_singleton_count(VARIADIC "any") (
	SFUNC = qidrisk_sketch_default_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_sketch_singletons_final,
	COMBINEFUNC = qidrisk_sketch_combine,
	SERIALFUNC = qidrisk_sketch_serialize,
	DESERIALFUNC = qidrisk_sketch_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE approx_class_count(VARIADIC "any") (
	SFUNC = qidrisk_sketch_default_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_sketch_classes_final,
	COMBINEFUNC = qidrisk_sketch_combine,
	SERIALFUNC = qidrisk_sketch_serialize,
	DESERIALFUNC = qidrisk_sketch_deserialize,
	PARALLEL = SAFE
);

COMMENT ON AGGREGATE approx_class_profile(integer, VARIADIC "any") IS
'estimated classes, singletons and class-size histogram from a distinct sample of at most capacity classes, with standard errors';
COMMENT ON AGGREGATE approx_singleton_count(VARIADIC "any") IS
'estimated rows whose quasi-identifier value combination occurs exactly once (distinct sample of 32768 classes)';
COMMENT ON AGGREGATE approx_class_count(VARIADIC "any") IS
'estimated number of distinct quasi-identifier value combinations (distinct sample of 32768 classes)';

CREATE FUNCTION approx_interval(estimate double precision, standard_error double precision,
	sampling_rate double precision, confidence double precision DEFAULT 0.95,
	OUT low double precision, OUT high double precision)
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION approx_interval(double precision, double precision, double precision, double precision) IS
'confidence interval of an approx_class_profile estimate: normal approximation, never below the sampled classes';

-- The distributed path: a per-row key and one-argument aggregates over it

CREATE FUNCTION qid_key(VARIADIC "any")
RETURNS uuid
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION qid_key(VARIADIC "any") IS
'the 128-bit fingerprint of a row''s quasi-identifier values, as a uuid, for the *_key aggregates';

CREATE FUNCTION qidrisk_freq_key_transfn(internal, uuid)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_key_invtransfn(internal, uuid)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_key_k_transfn(internal, integer, uuid)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_freq_key_k_invtransfn(internal, integer, uuid)
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE singleton_count_key(key uuid) (
	SFUNC = qidrisk_freq_key_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_singleton_count_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_key_transfn,
	MINVFUNC = qidrisk_freq_key_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_singleton_count_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE class_count_key(key uuid) (
	SFUNC = qidrisk_freq_key_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_class_count_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_key_transfn,
	MINVFUNC = qidrisk_freq_key_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_class_count_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE k_anonymity_key(key uuid) (
	SFUNC = qidrisk_freq_key_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_k_anonymity_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_key_transfn,
	MINVFUNC = qidrisk_freq_key_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_k_anonymity_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE class_profile_key(key uuid) (
	SFUNC = qidrisk_freq_key_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_class_profile_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_key_transfn,
	MINVFUNC = qidrisk_freq_key_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_class_profile_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE rows_below_k_key(k integer, key uuid) (
	SFUNC = qidrisk_freq_key_k_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_rows_below_k_final,
	COMBINEFUNC = qidrisk_freq_combine,
	SERIALFUNC = qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_freq_deserialize,
	MSFUNC = qidrisk_freq_key_k_transfn,
	MINVFUNC = qidrisk_freq_key_k_invtransfn,
	MSTYPE = internal,
	MFINALFUNC = qidrisk_rows_below_k_final,
	PARALLEL = SAFE
);

CREATE AGGREGATE approx_class_profile_key(capacity integer, key uuid) (
	SFUNC = qidrisk_sketch_key_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_sketch_profile_final,
	COMBINEFUNC = qidrisk_sketch_combine,
	SERIALFUNC = qidrisk_sketch_serialize,
	DESERIALFUNC = qidrisk_sketch_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE approx_singleton_count_key(key uuid) (
	SFUNC = qidrisk_sketch_key_default_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_sketch_singletons_final,
	COMBINEFUNC = qidrisk_sketch_combine,
	SERIALFUNC = qidrisk_sketch_serialize,
	DESERIALFUNC = qidrisk_sketch_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE approx_class_count_key(key uuid) (
	SFUNC = qidrisk_sketch_key_default_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_sketch_classes_final,
	COMBINEFUNC = qidrisk_sketch_combine,
	SERIALFUNC = qidrisk_sketch_serialize,
	DESERIALFUNC = qidrisk_sketch_deserialize,
	PARALLEL = SAFE
);

COMMENT ON AGGREGATE singleton_count_key(uuid) IS
'singleton_count over qid_key() values: rows whose key occurs exactly once (NULL keys skipped)';
COMMENT ON AGGREGATE class_count_key(uuid) IS
'class_count over qid_key() values: distinct keys (NULL keys skipped)';
COMMENT ON AGGREGATE k_anonymity_key(uuid) IS
'k_anonymity over qid_key() values: the smallest class size (NULL keys skipped)';
COMMENT ON AGGREGATE class_profile_key(uuid) IS
'class_profile over qid_key() values (NULL keys skipped)';
COMMENT ON AGGREGATE rows_below_k_key(integer, uuid) IS
'rows_below_k over qid_key() values: rows in classes smaller than k (NULL keys skipped)';
COMMENT ON AGGREGATE approx_class_profile_key(integer, uuid) IS
'approx_class_profile over qid_key() values (NULL keys skipped)';
COMMENT ON AGGREGATE approx_singleton_count_key(uuid) IS
'approx_singleton_count over qid_key() values (NULL keys skipped)';
COMMENT ON AGGREGATE approx_class_count_key(uuid) IS
'approx_class_count over qid_key() values (NULL keys skipped)';

-- ==== Quasi-identifier generalization what-ifs (issue 3) ====

-- The rows qid_search and qid_generalize drop as incomplete: a NULL, or an
-- empty string of a string type, in any QID column; the WHERE clause keeping the others
CREATE FUNCTION qidrisk_complete_filter(rel regclass, qid text[])
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(string_agg(CASE WHEN t.typcategory = 'S'
									THEN format('(%1$I IS NOT NULL AND %1$I <> %2$L)', u.c, '')
									ELSE format('%I IS NOT NULL', u.c) END, ' AND ' ORDER BY u.o), 'true')
	FROM unnest(qid) WITH ORDINALITY u(c, o)
	JOIN pg_attribute a ON a.attrelid = rel AND a.attname = u.c
	JOIN pg_type t ON t.oid = a.atttypid
$$;
COMMENT ON FUNCTION qidrisk_complete_filter(regclass, text[]) IS
'internal: the WHERE clause keeping the rows without a NULL or empty QID value';

-- The query behind a generalization what-if: the QID columns (or every column)
-- of rel with the generalized ones replaced, and whether the row was modified
CREATE FUNCTION qidrisk_generalization_query(rel regclass, qid text[], whatif jsonb,
											 drop_incomplete boolean, all_columns boolean,
											 funcname text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	gens jsonb;
	is_local boolean;
	col text;
	spec jsonb;
	kinds text[];
	k integer;
	filter text := 'true';
	qidlist text;
	base text;
	cols text[];
	exprs text[] := '{}';
	mods text[] := '{}';
	joins text := '';
	n integer := 0;
	coltype text;
	g text;
	orig text;
	cuts text;
	means text;
	map_rel regclass;
	from_col text;
	to_col text;
	to_type text;
	bad text;
BEGIN
	IF rel IS NULL OR qid IS NULL OR whatif IS NULL OR drop_incomplete IS NULL THEN
		RAISE EXCEPTION '% needs a table, QID columns and a generalization', funcname
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF cardinality(qid) = 0 THEN
		RAISE EXCEPTION '% needs at least one QID column', funcname
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT c INTO bad FROM unnest(qid) AS c
	WHERE c IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = rel
								   AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped)
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'column "%" does not exist in %', bad, rel
			USING ERRCODE = 'undefined_column';
	END IF;
	IF (SELECT count(DISTINCT c) FROM unnest(qid) c) <> cardinality(qid) THEN
		RAISE EXCEPTION '%: a QID column is listed twice', funcname
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	gens := whatif -> 'columns';
	IF jsonb_typeof(whatif) <> 'object' OR gens IS NULL OR jsonb_typeof(gens) <> 'object'
	   OR gens = '{}'::jsonb THEN
		RAISE EXCEPTION '%: a generalization must be an object with a non-empty "columns" object', funcname
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Got %s.', whatif),
				  HINT = 'For example {"name": "S_loc", "local": true, "columns": {"sex": {"constant": "*"}}}.';
	END IF;
	-- a misspelt key ("lokal") must not silently change the what-if
	SELECT x INTO bad FROM jsonb_object_keys(whatif) AS x WHERE x NOT IN ('name', 'local', 'columns') LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '%: unknown key "%" in a generalization', funcname, bad
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A generalization has the keys name, local and columns.';
	END IF;
	BEGIN
		is_local := coalesce((whatif ->> 'local')::boolean, false);
	EXCEPTION WHEN invalid_text_representation THEN
		RAISE EXCEPTION '%: "local" must be true or false', funcname
			USING ERRCODE = 'invalid_parameter_value';
	END;
	SELECT c INTO bad FROM jsonb_object_keys(gens) AS c WHERE c <> ALL (qid) LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '%: column "%" is generalized but not part of the QID', funcname, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	qidlist := (SELECT string_agg(quote_ident(c), ', ' ORDER BY o) FROM unnest(qid) WITH ORDINALITY u(c, o));
	IF drop_incomplete THEN
		filter := @extschema@.qidrisk_complete_filter(rel, qid);
	END IF;
	IF all_columns THEN
		SELECT array_agg(a.attname::text ORDER BY a.attnum) INTO cols
		FROM pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
		base := format('SELECT * FROM %s WHERE %s', rel, filter);
	ELSE
		cols := qid;
		base := format('SELECT %s FROM %s WHERE %s', qidlist, rel, filter);
	END IF;
	IF is_local THEN
		-- the rows that are singletons under the whole QID
		base := format('SELECT b.*, count(*) OVER (PARTITION BY %s) = 1 AS qidrisk_single FROM (%s) b',
					   qidlist, base);
	END IF;

	FOREACH col IN ARRAY cols LOOP
		spec := gens -> col;
		IF spec IS NULL THEN
			exprs := exprs || format('b.%I', col);
			CONTINUE;
		END IF;
		n := n + 1;
		SELECT format_type(a.atttypid, NULL) INTO coltype
		FROM pg_attribute a WHERE a.attrelid = rel AND a.attname = col;
		IF jsonb_typeof(spec) <> 'object' THEN
			spec := '{}';
		END IF;
		kinds := ARRAY(SELECT x FROM jsonb_object_keys(spec) x
					   WHERE x IN ('map', 'constant', 'range', 'mean'));
		IF cardinality(kinds) <> 1 THEN
			RAISE EXCEPTION '%: column "%" needs exactly one of map, constant, range or mean', funcname, col
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Got %s.', gens -> col);
		END IF;
		SELECT x INTO bad FROM jsonb_object_keys(spec) AS x
		WHERE x <> kinds[1] AND NOT (kinds[1] = 'map' AND x IN ('from', 'to')) LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION '%: unknown key "%" in the % of column "%"', funcname, bad, kinds[1], col
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Only a map takes more keys: "from" and "to".';
		END IF;
		CASE kinds[1]
		WHEN 'constant' THEN
			IF jsonb_typeof(spec -> 'constant') NOT IN ('string', 'number', 'boolean') THEN
				RAISE EXCEPTION '%: the constant of column "%" must be a string or a number', funcname, col
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			g := format('%L::text', spec ->> 'constant');
			orig := format('b.%I::text', col);
		WHEN 'map' THEN
			-- an OID, a qualified name, or a name in rel's schema (this function's
			-- search_path is not the caller's)
			map_rel := NULL;
			BEGIN
				IF jsonb_typeof(spec -> 'map') = 'number' THEN
					map_rel := (spec ->> 'map')::oid::regclass;
					IF NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = map_rel) THEN
						map_rel := NULL;
					END IF;
				ELSIF jsonb_typeof(spec -> 'map') = 'string' THEN
					IF cardinality(parse_ident(spec ->> 'map')) = 1 THEN
						map_rel := to_regclass(format('%I.%I', (SELECT n.nspname FROM pg_class c
							JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = rel),
							(parse_ident(spec ->> 'map'))[1]));
					END IF;
					map_rel := coalesce(map_rel, to_regclass(spec ->> 'map'));
				END IF;
			EXCEPTION WHEN invalid_name OR syntax_error OR invalid_text_representation THEN
				map_rel := NULL;
			END;
			IF map_rel IS NULL THEN
				RAISE EXCEPTION '%: mapping table % of column "%" does not exist', funcname, spec -> 'map', col
					USING ERRCODE = 'undefined_table',
						  HINT = 'Give the table''s name (looked up in the schema of the table searched, unless qualified) or its OID.';
			END IF;
			from_col := coalesce(spec ->> 'from', 'from');
			to_col := coalesce(spec ->> 'to', 'to');
			SELECT format_type(a.atttypid, NULL) INTO to_type
			FROM pg_attribute a WHERE a.attrelid = map_rel AND a.attname = to_col AND a.attnum > 0 AND NOT a.attisdropped;
			IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = map_rel
										AND a.attname = from_col AND a.attnum > 0 AND NOT a.attisdropped) THEN
				RAISE EXCEPTION '%: mapping table % needs columns "%" and "%"', funcname, map_rel, from_col, to_col
					USING ERRCODE = 'undefined_column',
						  HINT = 'Name them with "from" and "to" in the column''s generalization.';
			END IF;
			-- one value, one generalization
			EXECUTE format('SELECT %1$I::text FROM %3$s GROUP BY %1$I HAVING count(DISTINCT %2$I) > 1 LIMIT 1',
						   from_col, to_col, map_rel) INTO bad;
			IF bad IS NOT NULL THEN
				RAISE EXCEPTION '%: mapping table % maps "%" to more than one value', funcname, map_rel, bad
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			IF to_type = coltype THEN
				orig := format('b.%I', col);
				joins := joins || format(' LEFT JOIN (SELECT DISTINCT %1$I AS f, %2$I AS t FROM %3$s) m%4$s ON m%4$s.f = b.%5$I',
										 from_col, to_col, map_rel, n, col);
				g := format('coalesce(m%s.t, b.%I)', n, col);
			ELSE
				orig := format('b.%I::text', col);
				joins := joins || format(' LEFT JOIN (SELECT DISTINCT %1$I::text AS f, %2$I::text AS t FROM %3$s) m%4$s ON m%4$s.f = b.%5$I::text',
										 from_col, to_col, map_rel, n, col);
				g := format('coalesce(m%s.t, b.%I::text)', n, col);
			END IF;
		ELSE
			-- range or mean: buckets of at least k rows that never split equal values
			IF jsonb_typeof(spec -> kinds[1]) <> 'number' THEN
				RAISE EXCEPTION '%: the % of column "%" needs k, a whole number of rows', funcname, kinds[1], col
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			-- checked as numeric first: 1e400 must not surface as an integer overflow
			IF (spec ->> kinds[1])::numeric NOT BETWEEN 1 AND 2147483647
			   OR trunc((spec ->> kinds[1])::numeric) <> (spec ->> kinds[1])::numeric THEN
				RAISE EXCEPTION '%: k of column "%" must be a whole number from 1 to 2147483647', funcname, col
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('Got %s.', left((spec -> kinds[1])::text, 40));
			END IF;
			k := (spec ->> kinds[1])::numeric;
			EXECUTE format('SELECT @extschema@.quantile_cuts(%I, %s)::text FROM %s WHERE %s',
						   col, k, rel, filter) INTO cuts;
			IF kinds[1] = 'range' THEN
				g := format('@extschema@.quantile_bucket_label(b.%I, %L::%s[])', col, cuts, coltype);
				orig := format('b.%I::text', col);
			ELSE
				EXECUTE format('SELECT @extschema@.quantile_means(%I, %L::%s[])::text FROM %s WHERE %s',
							   col, cuts, coltype, rel, filter) INTO means;
				g := format('(%L::float8[])[@extschema@.quantile_bucket(b.%I, %L::%s[])]', means, col, cuts, coltype);
				orig := format('b.%I::float8', col);
			END IF;
		END CASE;
		IF is_local THEN
			exprs := exprs || format('CASE WHEN b.qidrisk_single THEN %s ELSE %s END AS %I', g, orig, col);
			mods := mods || format('(b.qidrisk_single AND %s IS DISTINCT FROM %s)', g, orig);
		ELSE
			exprs := exprs || format('%s AS %I', g, col);
			mods := mods || format('(%s IS DISTINCT FROM %s)', g, orig);
		END IF;
	END LOOP;
	RETURN format('SELECT %s, (%s) AS qidrisk_modified FROM (%s) b%s',
				  array_to_string(exprs, ', '), array_to_string(mods, ' OR '), base, joins);
END
$$;
COMMENT ON FUNCTION qidrisk_generalization_query(regclass, text[], jsonb, boolean, boolean, text) IS
'internal: the query of a generalization what-if (used by qid_generalize and qid_generalize_into)';

CREATE FUNCTION qid_generalize(rel regclass, qid text[], generalizations jsonb,
							   drop_incomplete boolean DEFAULT false)
RETURNS TABLE (name text, local boolean, singletons bigint, singleton_share double precision,
			   rows_modified bigint, rows_removed bigint, classes bigint, rows bigint,
			   is_best boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	items jsonb;
	item jsonb;
	ord integer := 0;
	query text;
	qidlist text;
	everything bigint;
	filter_rows bigint;
	r record;
	results jsonb := '[]';
BEGIN
	IF rel IS NULL OR qid IS NULL OR generalizations IS NULL OR drop_incomplete IS NULL THEN
		RAISE EXCEPTION 'qid_generalize needs a table, QID columns and generalizations'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	items := CASE jsonb_typeof(generalizations) WHEN 'array' THEN generalizations
				  ELSE jsonb_build_array(generalizations) END;
	IF jsonb_array_length(items) = 0 THEN
		RAISE EXCEPTION 'qid_generalize needs at least one generalization'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOR item IN SELECT * FROM jsonb_array_elements(items) LOOP
		ord := ord + 1;
		query := @extschema@.qidrisk_generalization_query(rel, qid, item, drop_incomplete, false,
														   'qid_generalize');
		qidlist := (SELECT string_agg(quote_ident(c), ', ' ORDER BY o) FROM unnest(qid) WITH ORDINALITY u(c, o));
		EXECUTE format('SELECT (p).rows, (p).singletons, (p).singleton_share, (p).classes, m
						FROM (SELECT @extschema@.class_profile(%s) AS p,
									 count(*) FILTER (WHERE qidrisk_modified) AS m
							  FROM (%s) s) x', qidlist, query)
		INTO r;
		results := results || jsonb_build_object('ord', ord,
			'name', coalesce(item ->> 'name', 'generalization ' || ord),
			'local', coalesce((item ->> 'local')::boolean, false), 'singletons', r.singletons,
			'singleton_share', r.singleton_share, 'rows_modified', r.m, 'classes', r.classes,
			'rows', r.rows);
	END LOOP;
	-- the QID as it is, for comparison
	EXECUTE format('SELECT (p).rows, (p).singletons, (p).singleton_share, (p).classes
					FROM (SELECT @extschema@.class_profile(%s) AS p FROM %s WHERE %s) x',
				   qidlist, rel,
				   CASE WHEN drop_incomplete THEN @extschema@.qidrisk_complete_filter(rel, qid)
				   ELSE 'true' END)
	INTO r;
	EXECUTE format('SELECT count(*) FROM %s', rel) INTO everything;
	filter_rows := r.rows;
	RETURN QUERY
		SELECT w.name, w.local, w.singletons, w.singleton_share, w.rows_modified,
			   everything - filter_rows, w.classes, w.rows,
			   w.ord > 0 AND row_number() OVER (ORDER BY w.ord = 0, w.singletons, w.rows_modified, w.ord) = 1
		FROM (SELECT x.* FROM jsonb_to_recordset(results) AS x(ord integer, name text, local boolean,
					singletons bigint, singleton_share double precision, rows_modified bigint,
					classes bigint, rows bigint)
			  UNION ALL
			  SELECT 0, 'none', false, r.singletons, r.singleton_share, 0, r.classes, r.rows) w
		ORDER BY w.ord = 0, w.singletons, w.rows_modified, w.ord;
END
$$;
COMMENT ON FUNCTION qid_generalize(regclass, text[], jsonb, boolean) IS
'what-if generalizations of a QID (mapping table, constant, ranges of at least k rows, their means; global or local to the singletons): singletons, rows modified, rows removed and classes of each, best first; modifies nothing';

CREATE FUNCTION qid_generalize_into(rel regclass, qid text[], generalization jsonb,
									target_table text, drop_incomplete boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	query text;
	target text;
	written bigint;
BEGIN
	IF target_table IS NULL THEN
		RAISE EXCEPTION 'qid_generalize_into needs a target table name'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF jsonb_typeof(generalization) = 'array' THEN
		RAISE EXCEPTION 'qid_generalize_into writes one generalization, not a list'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	query := @extschema@.qidrisk_generalization_query(rel, qid, generalization, drop_incomplete, true,
													   'qid_generalize_into');
	-- an unqualified name goes into rel's schema (this function's search_path is not the caller's)
	target := (SELECT string_agg(quote_ident(p), '.') FROM unnest(parse_ident(target_table)) p);
	IF cardinality(parse_ident(target_table)) = 1 THEN
		target := format('%I.%s', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n
									 ON n.oid = c.relnamespace WHERE c.oid = rel), target);
	END IF;
	IF to_regclass(target) IS NOT NULL THEN
		RAISE EXCEPTION 'table % already exists', target
			USING ERRCODE = 'duplicate_table',
				  HINT = 'qid_generalize_into writes only into a new table; pick another name or drop it.';
	END IF;
	EXECUTE format('CREATE TABLE %s AS SELECT %s FROM (%s) s', target,
				   (SELECT string_agg(format('s.%I', a.attname), ', ' ORDER BY a.attnum)
					FROM pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped),
				   query);
	GET DIAGNOSTICS written = ROW_COUNT;
	RETURN written;
END
$$;
COMMENT ON FUNCTION qid_generalize_into(regclass, text[], jsonb, text, boolean) IS
'write rel with one generalization of its QID applied (as qid_generalize measures it) into a new table; the source is not modified';

-- ==== QaR: dataset risk and per-record contributions (issue 7) ====

CREATE FUNCTION gpd_fit(excesses float8[], method text DEFAULT 'auto',
	OUT xi float8, OUT beta float8, OUT fit_method text, OUT loglik float8, OUT n integer)
RETURNS record
AS 'MODULE_PATHNAME', 'gpd_fit'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION gpd_fit(float8[], text) IS
'Generalised Pareto fit of threshold excesses: maximum likelihood (profile in xi/beta, grid + golden section, xi > -1), falling back to probability-weighted moments, then moments (method auto); or one method forced';

CREATE FUNCTION qar_risk_from_thetas(thetas float8[], alpha float8 DEFAULT 0.01,
	pi_u float8 DEFAULT 0.05, rows bigint DEFAULT NULL,
	OUT risk float8, OUT u float8, OUT n_p bigint, OUT n_u integer, OUT xi float8,
	OUT beta float8, OUT fit_method text, OUT rows_used bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'qar_risk_from_thetas'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION qar_risk_from_thetas(float8[], float8, float8, bigint) IS
'QaR dataset risk T(p, alpha) from the thetas of all subsets: u = theta_(ceil(n_p (1 - pi_u))), GPD fit of logit(theta) - logit(u) over the thetas above u; rows clamps thetas to [1/(2 rows), 1 - 1/(2 rows)]';

CREATE FUNCTION qar_thetas(rel regclass, candidate_columns text[], p integer DEFAULT 3)
RETURNS TABLE(columns text[], theta float8, classes bigint, singletons bigint)
AS 'MODULE_PATHNAME', 'qar_thetas'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_thetas(regclass, text[], integer) IS
'QaR: theta = H/L (distinct combinations over rows) of every p-column subset of the candidate columns, in lexicographic order, with its classes and singletons';

CREATE FUNCTION qar_risk(rel regclass, columns text[], p integer DEFAULT 3,
	alpha float8 DEFAULT 0.01, pi_u float8 DEFAULT 0.05,
	OUT risk float8, OUT u float8, OUT n_p bigint, OUT n_u integer, OUT xi float8,
	OUT beta float8, OUT fit_method text, OUT rows bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'qar_risk'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_risk(regclass, text[], integer, float8, float8) IS
'QaR dataset risk T(p, alpha) of a table (Béra et al. 2023): GPD fit of the logit thetas of all p-column subsets above their empirical 1 - pi_u quantile u';

CREATE FUNCTION qar_record_scores(rel regclass, columns text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL)
RETURNS TABLE(key text, u_plus float8, unique_subsets integer)
AS 'MODULE_PATHNAME', 'qar_record_scores'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_record_scores(regclass, text[], integer, text) IS
'QaR proxy U+(i) = sum of theta(j) over the p-column subsets j on which row i is unique, per row with its key (ctid when key_column is NULL)';

CREATE FUNCTION qar_record_contributions(rel regclass, columns text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL, alpha float8 DEFAULT 0.01, pi_u float8 DEFAULT 0.05,
	max_rows integer DEFAULT 10000)
RETURNS TABLE(key text, contribution float8, risk_without float8)
AS 'MODULE_PATHNAME', 'qar_record_contributions'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_record_contributions(regclass, text[], integer, text, float8, float8, integer) IS
'QaR exact contribution T(p, alpha) - T(p, alpha; without row i) of every row; refuses tables above max_rows rows';

CREATE FUNCTION qar_record_entropy(rel regclass, columns text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL, max_rows integer DEFAULT 10000)
RETURNS TABLE(key text, entropy float8)
AS 'MODULE_PATHNAME', 'qar_record_entropy'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_record_entropy(regclass, text[], integer, text, integer) IS
'QaR record entropy E(i): entropy of the empirical-cdf ranks H(i,j) over the p-column subsets, binned into floor(sqrt(N_p)) bins; refuses tables above max_rows rows';

CREATE FUNCTION qar_greedy_removal(rel regclass, columns text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL, steps integer DEFAULT 10,
	alpha float8 DEFAULT 0.01, pi_u float8 DEFAULT 0.05)
RETURNS TABLE(step integer, key text, u_plus float8, risk_after float8)
AS 'MODULE_PATHNAME', 'qar_greedy_removal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_greedy_removal(regclass, text[], integer, text, integer, float8, float8) IS
'QaR greedy removal without touching the table: at each step the row with the largest current U+ goes (uniqueness updated incrementally), and the risk after it; step 0 is the table as it is';

CREATE FUNCTION qar_tail_risk(u float8, xi float8, beta float8, n_p bigint, n_u integer,
	alpha float8 DEFAULT 0.01)
RETURNS float8
AS 'MODULE_PATHNAME', 'qar_tail_risk'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qar_tail_risk(float8, float8, float8, bigint, integer, float8) IS
'QaR formula alone: expit(logit(u) + beta/xi ((n_p alpha / n_u)^(-xi) - 1)), and its xi -> 0 limit expit(logit(u) + beta ln(n_u / (n_p alpha)))';
