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
			k := (spec ->> kinds[1])::numeric;
			IF k < 1 OR k <> (spec ->> kinds[1])::numeric THEN
				RAISE EXCEPTION '%: k of column "%" must be a whole number at least 1', funcname, col
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
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
