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
	missing text;
BEGIN
	IF rel IS NULL OR columns IS NULL OR cardinality(columns) = 0 THEN
		RAISE EXCEPTION 'column_distinct_counts needs a table and at least one column'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT c INTO missing FROM unnest(columns) AS c
	WHERE c IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = rel
								   AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped)
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'column "%" does not exist in %', missing, rel
			USING ERRCODE = 'undefined_column';
	END IF;
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

CREATE FUNCTION quantile_bucket_value(value anyelement, cuts anyarray, representatives anycompatiblearray)
RETURNS anycompatible
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT representatives[@extschema@.quantile_bucket(value, cuts)] $$;
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
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT k.class, k.release_rows, k.population_rows,
		   @extschema@.individual_risk(k.release_rows, k.population_rows, method)
	FROM @extschema@.kmap_count(rel, rel, qid, weight) AS k
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
