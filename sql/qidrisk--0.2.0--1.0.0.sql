-- qidrisk 0.2.0 -> 1.0.0.  A new installation of 1.0.0 runs qidrisk--0.1.0.sql,
-- qidrisk--0.1.0--0.2.0.sql and then this script, so it holds every change of
-- 1.0.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '1.0.0'" to load this file. \quit

-- ==== One API: the names of docs/reference.md's Naming section ====

-- 1.0.0 gives every argument and result column one name per meaning: a list
-- of QID columns is qid, a list of candidate columns searched by subsets is
-- candidates, an argument naming one column ends in _column, a population
-- size is population_size, the number of possible QID combinations
-- partitions, the birthday functions' group size and number of equally likely
-- values group_size and domain_size; k is the anonymity level, an integer;
-- booleans are plain adjectives.  PostgreSQL cannot rename an argument or a
-- result column in place (CREATE OR REPLACE refuses), so each function that
-- changes is dropped and created again, with its comment; a user's view or
-- function that depends on one makes this update fail with PostgreSQL's
-- dependency error until it is dropped (CHANGELOG.md, upgrade notes).

-- ==== Birthday uniqueness: group_size and domain_size ====

DROP FUNCTION birthday_uniqueness(bigint, double precision);
DROP FUNCTION birthday_uniqueness(bigint, double precision, double precision);
DROP FUNCTION birthday_uniqueness_approx(bigint, double precision, double precision);
DROP FUNCTION birthday_uniqueness_poisson(bigint, double precision);
DROP FUNCTION birthday_max_k(double precision, double precision);
DROP FUNCTION birthday_max_k(double precision, double precision, double precision);
DROP AGGREGATE birthday_uniqueness_exact(bigint, anyelement);
DROP AGGREGATE birthday_uniqueness_exact(bigint, anyelement, double precision);
DROP AGGREGATE qidrisk_internal.birthday_uniqueness_exact(bigint, anyelement);
DROP AGGREGATE qidrisk_internal.birthday_uniqueness_exact(bigint, anyelement, double precision);
DROP AGGREGATE birthday_uniqueness_poisson_product(bigint, anyelement);
DROP AGGREGATE birthday_uniqueness_poisson_product(bigint, anyelement, double precision);

CREATE FUNCTION birthday_uniqueness(group_size bigint, domain_size double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_uniform'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness(bigint, double precision) IS
'probability that group_size draws from domain_size equally likely values are all distinct: n!/((n-k)! n^k) with k = group_size, n = domain_size';

CREATE FUNCTION birthday_uniqueness(group_size bigint, domain_size double precision, kappa double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_koot'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness(bigint, double precision, double precision) IS
'Koot et al.''s approximation for a distribution at KL distance kappa from uniform: pi_u(k,n) exp(-kappa k^2/n) with k = group_size, n = domain_size';

CREATE FUNCTION birthday_uniqueness_approx(group_size bigint, domain_size double precision,
										   kappa double precision DEFAULT 0)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_approx'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness_approx(bigint, double precision, double precision) IS
'closed-form approximation exp(-(1/2 + kappa) k^2 / n) with k = group_size, n = domain_size';

CREATE FUNCTION birthday_uniqueness_poisson(group_size bigint, domain_size double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'birthday_uniqueness_poisson_uniform'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_uniqueness_poisson(bigint, double precision) IS
'Poissonized uniform probability e^{-k} (1 + k/n)^n with k = group_size, n = domain_size (exact for a Poisson(k) number of draws)';

CREATE FUNCTION birthday_max_group_size(target double precision, domain_size double precision)
RETURNS bigint
AS 'MODULE_PATHNAME', 'birthday_max_k_uniform'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_max_group_size(double precision, double precision) IS
'largest group size whose all-distinct probability under domain_size uniform values is at least target';

CREATE FUNCTION birthday_max_group_size(target double precision, domain_size double precision,
										kappa double precision)
RETURNS bigint
AS 'MODULE_PATHNAME', 'birthday_max_k_koot'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION birthday_max_group_size(double precision, double precision, double precision) IS
'largest group size whose all-distinct probability under Koot''s approximation is at least target';

CREATE AGGREGATE birthday_uniqueness_exact(group_size bigint, value anyelement) (
	SFUNC = qidrisk_internal.qidrisk_freq_param_value_transfn, STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_exact_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize, DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_exact(bigint, anyelement) IS
'exact probability k! e_k(p) that k = group_size draws from the values'' distribution are all distinct';

CREATE AGGREGATE birthday_uniqueness_exact(group_size bigint, value anyelement, weight double precision) (
	SFUNC = qidrisk_internal.qidrisk_weight_param_transfn, STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_exact_weighted_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_weight_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_weight_serialize, DESERIALFUNC = qidrisk_internal.qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_exact(bigint, anyelement, double precision) IS
'exact probability k! e_k(p) that k = group_size draws from a (value, weight) distribution are all distinct';

CREATE AGGREGATE qidrisk_internal.birthday_uniqueness_exact(group_size bigint, value anyelement) (
	SFUNC = qidrisk_internal.qidrisk_freq_param_value_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_exact_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.birthday_uniqueness_exact(group_size bigint, value anyelement, weight double precision) (
	SFUNC = qidrisk_internal.qidrisk_weight_param_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_exact_weighted_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_weight_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_weight_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_weight_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE birthday_uniqueness_poisson_product(group_size bigint, value anyelement) (
	SFUNC = qidrisk_internal.qidrisk_freq_param_value_transfn, STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_poisson_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize, DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_poisson_product(bigint, anyelement) IS
'Poissonized all-distinct probability prod_i e^{-k p_i} (1 + k p_i) of the values'' distribution, k = group_size';

CREATE AGGREGATE birthday_uniqueness_poisson_product(group_size bigint, value anyelement, weight double precision) (
	SFUNC = qidrisk_internal.qidrisk_weight_param_transfn, STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_poisson_weighted_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_weight_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_weight_serialize, DESERIALFUNC = qidrisk_internal.qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE birthday_uniqueness_poisson_product(bigint, anyelement, double precision) IS
'Poissonized all-distinct probability prod_i e^{-k p_i} (1 + k p_i) of a (value, weight) distribution, k = group_size';

-- only the name changes: renamed in place, so views over it keep working
ALTER AGGREGATE birthday_max_k_exact(double precision, anyelement) RENAME TO birthday_max_group_size_exact;
ALTER AGGREGATE birthday_max_k_exact(double precision, anyelement, double precision)
	RENAME TO birthday_max_group_size_exact;
COMMENT ON AGGREGATE birthday_max_group_size_exact(double precision, anyelement) IS
'largest group size whose exact all-distinct probability under the values'' distribution is at least target';
COMMENT ON AGGREGATE birthday_max_group_size_exact(double precision, anyelement, double precision) IS
'largest group size whose exact all-distinct probability under a (value, weight) distribution is at least target';

-- ==== Probabilistic anonymity: partitions, population_size, qid, k integer ====

DROP FUNCTION singleton_fraction_bound(double precision, double precision);
DROP FUNCTION alpha_qid_threshold(double precision, double precision);
DROP FUNCTION alpha_qid_possible(double precision, double precision, double precision);
DROP FUNCTION anonymity_partitions(double precision, double precision, double precision);
DROP FUNCTION qidrisk_internal.anonymity_partitions(double precision, double precision, double precision);
DROP FUNCTION column_budgets(regclass, text[], double precision, double precision, double precision,
							 double precision[], boolean);
DROP FUNCTION qidrisk_internal.column_budgets(regclass, text[], double precision, double precision,
											  double precision, double precision[], boolean);
DROP FUNCTION distinct_product(regclass, text[], boolean);
DROP FUNCTION qidrisk_internal.distinct_product(regclass, text[], boolean);
DROP FUNCTION column_distinct_counts(regclass, text[], boolean);
DROP FUNCTION qidrisk_internal.column_distinct_counts(regclass, text[], boolean);

CREATE FUNCTION singleton_fraction_bound(partitions double precision, population_size double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_singleton_fraction_bound'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION singleton_fraction_bound(double precision, double precision) IS
'largest expected share of singletons among population_size rows over partitions values: D/(e n) for D <= n, e^(-n/D) above';

CREATE FUNCTION alpha_qid_threshold(population_size double precision, alpha double precision)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_alpha_qid_threshold'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alpha_qid_threshold(double precision, double precision) IS
'distinct combinations a QID must exceed to possibly be an alpha-quasi-identifier: n / ln(1/alpha) (Theorem 3)';

CREATE FUNCTION alpha_qid_possible(partitions double precision, population_size double precision,
								   alpha double precision)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qidrisk_alpha_qid_possible'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alpha_qid_possible(double precision, double precision, double precision) IS
'whether a QID of partitions combinations can be an alpha-quasi-identifier of the population (Theorem 3)';

-- k is an integer now: a C function of its own, since 0.1.0's and 0.2.0's
-- definitions (float8 k) call the old one until they are updated
CREATE FUNCTION anonymity_partitions(population_size double precision, k integer,
									 beta double precision DEFAULT 0.1)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_anonymity_partitions_int4'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION anonymity_partitions(double precision, integer, double precision) IS
'most equally likely QID partitions that keep every row among k of the population with probability 1-beta (Theorem 4)';
CREATE FUNCTION qidrisk_internal.anonymity_partitions(population_size double precision, k integer,
													  beta double precision DEFAULT 0.1)
RETURNS double precision
LANGUAGE c
IMMUTABLE PARALLEL SAFE STRICT
AS 'MODULE_PATHNAME', 'qidrisk_anonymity_partitions_int4';

CREATE FUNCTION qidrisk_internal.column_distinct_counts(rel regclass, qid text[], estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	counts double precision[];
	citus_table boolean := false;
BEGIN
	IF rel IS NULL OR qid IS NULL OR cardinality(qid) = 0 THEN
		RAISE EXCEPTION 'column_distinct_counts needs a table and at least one column'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, qid);
	IF NOT estimated THEN
		-- NULL counts as one more value, as in GROUP BY
		EXECUTE format('SELECT ARRAY[%s]::float8[] FROM %s',
					   (SELECT string_agg(format('count(DISTINCT %1$I) + max(CASE WHEN %1$I IS NULL THEN 1 ELSE 0 END)', c), ', '
										  ORDER BY o)
						FROM unnest(qid) WITH ORDINALITY AS u(c, o)),
					   rel)
		INTO counts;
		RETURN QUERY SELECT c, coalesce(counts[o], 0)
					 FROM unnest(qid) WITH ORDINALITY AS u(c, o) ORDER BY o;
		RETURN;
	END IF;
	-- pg_stats shows only columns the caller may read
	RETURN QUERY
		SELECT u.c,
			   CASE WHEN s.n_distinct >= 0 THEN s.n_distinct
					ELSE -s.n_distinct * greatest(cl.reltuples, 0) END
			   + CASE WHEN s.null_frac > 0 THEN 1 ELSE 0 END
		FROM unnest(qid) WITH ORDINALITY AS u(c, o)
		JOIN pg_class cl ON cl.oid = rel
		JOIN pg_namespace n ON n.oid = cl.relnamespace
		LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = cl.relname
							AND s.attname = u.c AND NOT s.inherited
		ORDER BY u.o;
	IF EXISTS (SELECT 1 FROM unnest(qid) AS c
			   WHERE NOT EXISTS (SELECT 1 FROM pg_stats s JOIN pg_class cl ON cl.oid = rel
								 JOIN pg_namespace n ON n.oid = cl.relnamespace
								 WHERE s.schemaname = n.nspname AND s.tablename = cl.relname
								 AND s.attname = c AND NOT s.inherited)) THEN
		-- a Citus table's rows, and so its statistics, live on its shards
		IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
			EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition '
					'WHERE logicalrelid OPERATOR(pg_catalog.=) $1)'
				INTO citus_table USING rel;
		END IF;
		IF citus_table THEN
			RAISE EXCEPTION '% is a Citus table: its statistics are on its shards, not on this node', rel
				USING ERRCODE = 'feature_not_supported',
					  HINT = 'Pass estimated => false: the exact counts run on the shards.';
		END IF;
		RAISE EXCEPTION '% has no statistics for some of these columns', rel
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Run ANALYZE on the table, or pass estimated => false for exact counts.';
	END IF;
END
$$;
CREATE FUNCTION qidrisk_internal.distinct_product(rel regclass, qid text[], estimated boolean DEFAULT false)
RETURNS double precision
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT exp(sum(ln(greatest(d.distinct_values, 1))))
	FROM qidrisk_internal.column_distinct_counts(rel, qid, estimated) AS d
$$;

CREATE FUNCTION qidrisk_internal.column_budgets(rel regclass, qid text[], population_size double precision,
												k integer, beta double precision DEFAULT 0.1,
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
			  FROM qidrisk_internal.column_distinct_counts(rel, qid, estimated) AS x) AS c
	), b AS (
		SELECT d.names, d.counts,
			   qidrisk_internal.bucket_budget(qidrisk_internal.anonymity_partitions(population_size, k, beta),
										 d.counts, weights) AS budgets
		FROM d
	)
	SELECT b.names[i], b.counts[i], b.budgets[i], b.budgets[i] < b.counts[i]
	FROM b, generate_subscripts(b.names, 1) AS i
	ORDER BY i
$$;

-- the documented names call the bodies above (src/boundary.c)
CREATE FUNCTION column_distinct_counts(rel regclass, qid text[], estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;
COMMENT ON FUNCTION column_distinct_counts(regclass, text[], boolean) IS
'distinct values of each column (NULL counted as a value), exact or estimated from pg_stats';

CREATE FUNCTION distinct_product(rel regclass, qid text[], estimated boolean DEFAULT false)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;
COMMENT ON FUNCTION distinct_product(regclass, text[], boolean) IS
'the Multiple Domain Assumption: product of the columns'' distinct counts, exact or from pg_stats';

CREATE FUNCTION column_budgets(rel regclass, qid text[], population_size double precision,
							   k integer, beta double precision DEFAULT 0.1,
							   weights double precision[] DEFAULT NULL,
							   estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision, budget double precision,
			   generalize boolean)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;
COMMENT ON FUNCTION column_budgets(regclass, text[], double precision, integer, double precision, double precision[], boolean) IS
'how many distinct values each QID column may keep for probabilistic (1-beta, k)-anonymity in a population (Theorem 4 and equation 1)';

-- ==== k-map and weighted risk: population_weight_column, weight_column, k integer, rows, singletons ====

DROP FUNCTION kmap_count(regclass, regclass, text[], text, text[]);
DROP FUNCTION qidrisk_internal.kmap_count(regclass, regclass, text[], text, text[]);
DROP FUNCTION kmap_row_counts(regclass, regclass, text[], text, text[]);
DROP FUNCTION kmap_value(regclass, regclass, text[], text, text[]);
DROP FUNCTION qidrisk_internal.kmap_value(regclass, regclass, text[], text, text[]);
DROP FUNCTION kmap_rows_below(regclass, regclass, text[], double precision, text, text[]);
DROP FUNCTION qidrisk_internal.kmap_rows_below(regclass, regclass, text[], double precision, text, text[]);
DROP FUNCTION weighted_risk(regclass, text[], text, text);
DROP FUNCTION qidrisk_internal.weighted_risk(regclass, text[], text, text);
DROP FUNCTION weighted_risk_summary(regclass, text[], text, text);
DROP FUNCTION qidrisk_internal.weighted_risk_summary(regclass, text[], text, text);

CREATE FUNCTION kmap_count(release regclass, population regclass, qid text[],
						   population_weight_column text DEFAULT NULL,
						   population_qid text[] DEFAULT NULL)
RETURNS TABLE (class jsonb, release_rows bigint, population_rows double precision)
AS 'MODULE_PATHNAME', 'qidrisk_kmap_count'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kmap_count(regclass, regclass, text[], text, text[]) IS
'k-map: for each QID class of the release, its rows and the matching rows of the population (or the sum of their weights); NULL matches NULL';
CREATE FUNCTION qidrisk_internal.kmap_count(release regclass, population regclass, qid text[],
											population_weight_column text DEFAULT NULL::text,
											population_qid text[] DEFAULT NULL::text[])
RETURNS TABLE(class jsonb, release_rows bigint, population_rows double precision)
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qidrisk_kmap_count';

CREATE FUNCTION kmap_row_counts(release regclass, population regclass, qid text[],
								population_weight_column text DEFAULT NULL,
								population_qid text[] DEFAULT NULL)
RETURNS TABLE (release_row jsonb, class jsonb, release_rows bigint,
			   population_rows double precision)
AS 'MODULE_PATHNAME', 'qidrisk_kmap_row_counts'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kmap_row_counts(regclass, regclass, text[], text, text[]) IS
'k-map per release row: each row of the release (to_jsonb) with its class and the class''s release and population counts';

-- the bodies of the documented names below
CREATE FUNCTION qidrisk_internal.kmap_value(release regclass, population regclass, qid text[],
						   population_weight_column text DEFAULT NULL,
						   population_qid text[] DEFAULT NULL)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT min(k.population_rows)
	FROM qidrisk_internal.kmap_count(release, population, qid, population_weight_column, population_qid) AS k
$$;

-- k is the anonymity level, an integer as everywhere else (0.2.0: float8)
CREATE FUNCTION qidrisk_internal.kmap_rows_below(release regclass, population regclass, qid text[], k integer,
												 population_weight_column text DEFAULT NULL,
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
	IF k < 1 THEN
		RAISE EXCEPTION 'kmap_rows_below: k must be at least 1, not %', k
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN (SELECT coalesce(sum(c.release_rows) FILTER (WHERE c.population_rows < k), 0)::bigint
			FROM qidrisk_internal.kmap_count(release, population, qid, population_weight_column,
										population_qid) AS c);
END
$$;

CREATE FUNCTION qidrisk_internal.weighted_risk(rel regclass, qid text[], weight_column text,
											   method text DEFAULT 'approx')
RETURNS TABLE (class jsonb, rows bigint, estimated_population double precision,
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
	PERFORM qidrisk_internal.individual_risk(1, 1, method);
	RETURN QUERY
	SELECT k.class, k.release_rows, k.population_rows,
		   qidrisk_internal.individual_risk(k.release_rows, k.population_rows, method)
	FROM qidrisk_internal.kmap_count(rel, rel, qid, weight_column) AS k;
END
$$;

-- sums in class order (weighted_risk's order differs from call to call)
CREATE FUNCTION qidrisk_internal.weighted_risk_summary(rel regclass, qid text[], weight_column text,
													   method text DEFAULT 'approx')
RETURNS TABLE (rows bigint, classes bigint, singletons bigint,
			   estimated_population double precision, expected_reidentifications double precision,
			   reidentification_rate double precision, max_individual_risk double precision)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(sum(w.rows), 0)::bigint,
		   count(*),
		   count(*) FILTER (WHERE w.rows = 1),
		   coalesce(sum(w.estimated_population ORDER BY w.class), 0),
		   coalesce(sum(w.rows * w.individual_risk ORDER BY w.class), 0),
		   sum(w.rows * w.individual_risk ORDER BY w.class) / sum(w.rows),
		   max(w.individual_risk)
	FROM qidrisk_internal.weighted_risk(rel, qid, weight_column, method) AS w
$$;

-- the documented names call the bodies above (src/boundary.c)
CREATE FUNCTION kmap_value(release regclass, population regclass, qid text[],
						   population_weight_column text DEFAULT NULL,
						   population_qid text[] DEFAULT NULL)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kmap_value(regclass, regclass, text[], text, text[]) IS
'the k-map value of the release: the smallest population count of its QID classes (NULL for an empty release)';

CREATE FUNCTION kmap_rows_below(release regclass, population regclass, qid text[], k integer,
								population_weight_column text DEFAULT NULL,
								population_qid text[] DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kmap_rows_below(regclass, regclass, text[], integer, text, text[]) IS
'rows of the release whose QID class matches fewer than k population rows (or less than k of population weight)';

CREATE FUNCTION weighted_risk(rel regclass, qid text[], weight_column text, method text DEFAULT 'approx')
RETURNS TABLE (class jsonb, rows bigint, estimated_population double precision,
			   individual_risk double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION weighted_risk(regclass, text[], text, text) IS
'per QID class of a weighted sample: its rows f_k, the estimated population F_k (sum of weights) and the individual risk of each of its records';

CREATE FUNCTION weighted_risk_summary(rel regclass, qid text[], weight_column text, method text DEFAULT 'approx')
RETURNS TABLE (rows bigint, classes bigint, singletons bigint,
			   estimated_population double precision, expected_reidentifications double precision,
			   reidentification_rate double precision, max_individual_risk double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION weighted_risk_summary(regclass, text[], text, text) IS
'global risk of a weighted sample: expected number of re-identifications (sum of the records'' individual risks), its rate per record, singletons (sample uniques) and the largest individual risk';

-- ==== Quasi-identifier search and what-ifs: candidates, whatifs, best ====

DROP FUNCTION qid_search(regclass, text[], integer, boolean, boolean);
CREATE FUNCTION qid_search(rel regclass, candidates text[] DEFAULT NULL, max_size integer DEFAULT NULL,
						   drop_incomplete boolean DEFAULT false, summary boolean DEFAULT false)
RETURNS TABLE (columns text[], size integer, singletons bigint, singleton_share double precision,
			   classes bigint, identifier boolean, minimal_identifier boolean,
			   best boolean, rows bigint, rows_removed bigint)
AS 'MODULE_PATHNAME', 'qidrisk_qid_search'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qid_search(regclass, text[], integer, boolean, boolean) IS
'singletons and classes of every subset of the candidate columns (one scan, stripped partitions), best quasi-identifier first';

DROP FUNCTION qid_generalize(regclass, text[], jsonb, boolean, integer, double precision, text);
DROP FUNCTION qidrisk_internal.qid_generalize(regclass, text[], jsonb, boolean, integer, double precision, text);
CREATE FUNCTION qidrisk_internal.qid_generalize(rel regclass, qid text[], whatifs jsonb,
							   drop_incomplete boolean DEFAULT false, k integer DEFAULT 2,
							   max_suppressed double precision DEFAULT 0,
							   cost text DEFAULT 'rows_modified')
RETURNS TABLE (name text, local boolean, singletons bigint, singleton_share double precision,
			   rows_modified bigint, rows_removed bigint, classes bigint, rows bigint,
			   best boolean, k_anonymity bigint, rows_below_k bigint, values_changed bigint,
			   meets_target boolean)
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
	r record;
	results jsonb := '[]';
BEGIN
	IF rel IS NULL OR qid IS NULL OR whatifs IS NULL OR drop_incomplete IS NULL
	   OR k IS NULL OR max_suppressed IS NULL OR cost IS NULL THEN
		RAISE EXCEPTION 'qid_generalize needs a table, QID columns, what-ifs, k, max_suppressed and a cost'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF k < 1 THEN
		RAISE EXCEPTION 'qid_generalize: k must be at least 1'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Got %s.', k);
	END IF;
	IF max_suppressed = 'NaN'::float8 OR max_suppressed < 0 OR max_suppressed > 1 THEN
		RAISE EXCEPTION 'qid_generalize: max_suppressed must be a share from 0 to 1'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Got %s.', max_suppressed);
	END IF;
	IF cost NOT IN ('rows_modified', 'values_changed') THEN
		RAISE EXCEPTION 'qid_generalize: unknown cost "%"', cost
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The cost is rows_modified or values_changed.';
	END IF;
	items := CASE jsonb_typeof(whatifs) WHEN 'array' THEN whatifs ELSE jsonb_build_array(whatifs) END;
	IF jsonb_array_length(items) = 0 THEN
		RAISE EXCEPTION 'qid_generalize needs at least one what-if'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	qidlist := (SELECT string_agg(quote_ident(c), ', ' ORDER BY o) FROM unnest(qid) WITH ORDINALITY u(c, o));
	FOR item IN SELECT * FROM jsonb_array_elements(items) LOOP
		ord := ord + 1;
		query := qidrisk_internal.qidrisk_generalization_query(rel, qid, item, drop_incomplete, false,
														   'qid_generalize');
		EXECUTE format('SELECT (x.p).rows, (x.p).singletons, (x.p).singleton_share, (x.p).classes,
							   (x.p).k_anonymity, qidrisk_internal.rows_below(x.p, %s) AS below, x.m, x.v
						FROM (SELECT qidrisk_internal.class_profile(%s) AS p,
									 pg_catalog.count(*) FILTER (WHERE s.qidrisk_modified) AS m,
									 pg_catalog.sum(s.qidrisk_changed) AS v
							  FROM (%s) s) x', k, qidlist, query)
		INTO r;
		results := results || jsonb_build_object('ord', ord,
			'name', coalesce(item ->> 'name', 'generalization ' || ord),
			'local', coalesce((item ->> 'local')::boolean, false), 'singletons', r.singletons,
			'singleton_share', r.singleton_share, 'rows_modified', r.m,
			'values_changed', coalesce(r.v, 0), 'classes', r.classes, 'rows', r.rows,
			'k_anonymity', r.k_anonymity, 'rows_below_k', r.below);
	END LOOP;
	-- the QID as it is, for comparison
	EXECUTE format('SELECT (x.p).rows, (x.p).singletons, (x.p).singleton_share, (x.p).classes,
						   (x.p).k_anonymity, qidrisk_internal.rows_below(x.p, %s) AS below
					FROM (SELECT qidrisk_internal.class_profile(%s) AS p FROM %s WHERE %s) x',
				   k, qidlist, rel,
				   CASE WHEN drop_incomplete THEN qidrisk_internal.qidrisk_complete_filter(rel, qid)
				   ELSE 'true' END)
	INTO r;
	EXECUTE format('SELECT pg_catalog.count(*) FROM %s', rel) INTO everything;
	-- the target: at most floor(max_suppressed * rows) rows in classes below k;
	-- the best meets it at the least cost (then fewer rows below k, then the
	-- list's order); the what-ifs that miss it follow, nearest first
	RETURN QUERY
		SELECT w.name, w.local, w.singletons, w.singleton_share, w.rows_modified,
			   everything - r.rows, w.classes, w.rows,
			   w.ord > 0 AND w.meets AND row_number() OVER (ORDER BY w.ord = 0, NOT w.meets,
					CASE WHEN w.meets THEN w.cost END, w.rows_below_k, w.cost, w.ord) = 1,
			   w.k_anonymity, w.rows_below_k, w.values_changed, w.meets
		FROM (SELECT x.*, x.rows_below_k <= floor(max_suppressed * x.rows) AS meets,
					 CASE cost WHEN 'rows_modified' THEN x.rows_modified ELSE x.values_changed END AS cost
			  FROM (SELECT y.* FROM jsonb_to_recordset(results) AS y(ord integer, name text, local boolean,
						singletons bigint, singleton_share double precision, rows_modified bigint,
						classes bigint, rows bigint, k_anonymity bigint, rows_below_k bigint,
						values_changed bigint)
					UNION ALL
					SELECT 0, 'none', false, r.singletons, r.singleton_share, 0, r.classes, r.rows,
						   r.k_anonymity, r.below, 0) x) w
		ORDER BY w.ord = 0, NOT w.meets, CASE WHEN w.meets THEN w.cost END, w.rows_below_k, w.cost, w.ord;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.qid_generalize(regclass, text[], jsonb, boolean, integer, double precision, text) IS
'internal: the body of qid_generalize';

-- the documented name calls the body (src/boundary.c)
CREATE FUNCTION qid_generalize(rel regclass, qid text[], whatifs jsonb,
							   drop_incomplete boolean DEFAULT false, k integer DEFAULT 2,
							   max_suppressed double precision DEFAULT 0,
							   cost text DEFAULT 'rows_modified')
RETURNS TABLE (name text, local boolean, singletons bigint, singleton_share double precision,
			   rows_modified bigint, rows_removed bigint, classes bigint, rows bigint,
			   best boolean, k_anonymity bigint, rows_below_k bigint, values_changed bigint,
			   meets_target boolean)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;
COMMENT ON FUNCTION qid_generalize(regclass, text[], jsonb, boolean, integer, double precision, text) IS
'what-if generalizations of a QID (mapping table, constant, ranges of at least k rows, their means; global or local to the singletons): singletons, k reached, rows below the target k, rows modified and values changed of each; best = meets the target k (at most max_suppressed of the rows below it) at the least cost; modifies nothing';

-- 0.2.0 returned the rows written; now the release's figures, as
-- qid_anonymize_into reports them: rows written, modified, dropped as
-- incomplete, and the k-anonymity measured on what was written
DROP FUNCTION qid_generalize_into(regclass, text[], jsonb, text, boolean);
DROP FUNCTION qidrisk_internal.qid_generalize_into(regclass, text[], jsonb, text, boolean);
CREATE FUNCTION qidrisk_internal.qid_generalize_into(rel regclass, qid text[], whatif jsonb,
													 release text, drop_incomplete boolean DEFAULT false)
RETURNS TABLE (rows_released bigint, rows_modified bigint, rows_removed bigint, k_anonymity bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	query text;
	target text;
	cols text;
	everything bigint;
BEGIN
	IF rel IS NULL OR qid IS NULL OR whatif IS NULL OR release IS NULL OR drop_incomplete IS NULL THEN
		RAISE EXCEPTION 'qid_generalize_into needs a table, QID columns, a what-if and a release table name'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF jsonb_typeof(whatif) = 'array' THEN
		RAISE EXCEPTION 'qid_generalize_into writes one what-if, not a list'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	query := qidrisk_internal.qidrisk_generalization_query(rel, qid, whatif, drop_incomplete, true,
													   'qid_generalize_into');
	-- an unqualified name goes into rel's schema (this function's search_path is not the caller's)
	target := (SELECT string_agg(quote_ident(p), '.') FROM unnest(parse_ident(release)) p);
	IF cardinality(parse_ident(release)) = 1 THEN
		target := format('%I.%s', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n
									 ON n.oid = c.relnamespace WHERE c.oid = rel), target);
	END IF;
	IF to_regclass(target) IS NOT NULL THEN
		RAISE EXCEPTION 'table % already exists', target
			USING ERRCODE = 'duplicate_table',
				  HINT = 'qid_generalize_into writes only into a new table; pick another name or drop it.';
	END IF;
	cols := (SELECT string_agg(format('s.%I', a.attname), ', ' ORDER BY a.attnum)
			 FROM pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped);
	EXECUTE format('CREATE TABLE %s AS SELECT %s FROM (%s) s WITH NO DATA', target, cols, query);
	-- one evaluation of the what-if writes the rows and counts them
	EXECUTE format('WITH s AS MATERIALIZED (%s), w AS (INSERT INTO %s SELECT %s FROM s)
					SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE s.qidrisk_modified),
						   qidrisk_internal.k_anonymity(%s)
					FROM s',
				   query, target, cols,
				   (SELECT string_agg(format('s.%I', c), ', ' ORDER BY o) FROM unnest(qid) WITH ORDINALITY u(c, o)))
	INTO rows_released, rows_modified, k_anonymity;
	rows_removed := 0;
	IF drop_incomplete THEN
		EXECUTE format('SELECT pg_catalog.count(*) FROM %s', rel) INTO everything;
		rows_removed := everything - rows_released;
	END IF;
	RETURN NEXT;
END
$$;

-- the documented name calls the body (src/boundary.c)
CREATE FUNCTION qid_generalize_into(rel regclass, qid text[], whatif jsonb,
									release text, drop_incomplete boolean DEFAULT false)
RETURNS TABLE (rows_released bigint, rows_modified bigint, rows_removed bigint, k_anonymity bigint)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qid_generalize_into(regclass, text[], jsonb, text, boolean) IS
'write rel with one what-if of its QID applied (as qid_generalize measures it) into a new table, and report its rows released, modified and removed and its k-anonymity; the source is not modified';

-- ==== The lattice and the release: sensitive_column, rows_suppressed, k_anonymity ====

-- qid_lattice's classes now count the release's classes only (those kept by
-- suppression): 0.2.0 counted the failing classes too
DROP FUNCTION qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
						  double precision, double precision, text, text, text);
DROP FUNCTION qidrisk_internal.qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
										   double precision, double precision, text, text, text);
DROP FUNCTION qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision, text, integer,
								 text, double precision, double precision, text, text, text, boolean);
DROP FUNCTION qidrisk_internal.qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision, text,
												  integer, text, double precision, double precision, text, text,
												  text, boolean);
DROP FUNCTION qidrisk_internal.qidrisk_anonymize(regclass, text[], jsonb, text, integer, double precision, text,
												 integer, text, double precision, double precision, text, text,
												 text, boolean);

CREATE FUNCTION qid_lattice(rel regclass, qid text[], hierarchies jsonb, k integer,
							max_suppressed double precision DEFAULT 0,
							sensitive_column text DEFAULT NULL, l integer DEFAULT 1,
							l_model text DEFAULT 'distinct', c double precision DEFAULT NULL,
							t double precision DEFAULT NULL, t_distance text DEFAULT 'equal',
							metric text DEFAULT 'discernibility', evaluate text DEFAULT 'anonymous')
RETURNS TABLE (levels integer[], anonymous boolean, minimal boolean, evaluated boolean,
			   rows_suppressed bigint, classes bigint, height integer, precision_loss double precision,
			   discernibility double precision, entropy_loss double precision,
			   suppressed_share double precision, loss double precision, best boolean, rows bigint)
AS 'MODULE_PATHNAME', 'qidrisk_qid_lattice'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
								double precision, double precision, text, text, text) IS
'every node of the full-domain generalization lattice: anonymous (k, suppression, l-diversity, t-closeness), minimal, utility, best';
CREATE FUNCTION qidrisk_internal.qid_lattice(rel regclass, qid text[], hierarchies jsonb, k integer,
											 max_suppressed double precision DEFAULT 0,
											 sensitive_column text DEFAULT NULL::text, l integer DEFAULT 1,
											 l_model text DEFAULT 'distinct'::text,
											 c double precision DEFAULT NULL::double precision,
											 t double precision DEFAULT NULL::double precision,
											 t_distance text DEFAULT 'equal'::text,
											 metric text DEFAULT 'discernibility'::text,
											 evaluate text DEFAULT 'anonymous'::text)
RETURNS TABLE(levels integer[], anonymous boolean, minimal boolean, evaluated boolean, rows_suppressed bigint,
			  classes bigint, height integer, precision_loss double precision, discernibility double precision,
			  entropy_loss double precision, suppressed_share double precision, loss double precision,
			  best boolean, rows bigint)
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qidrisk_qid_lattice';

CREATE FUNCTION qidrisk_internal.qidrisk_anonymize(rel regclass, qid text[], hierarchies jsonb, release text,
								  k integer, max_suppressed double precision, sensitive_column text,
								  l integer, l_model text, c double precision, t double precision,
								  t_distance text, metric text, suppression text, local_recoding boolean)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, k_anonymity bigint, l_diversity bigint, t_closeness double precision,
			   rows_recoded bigint, recoding text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- the generated statements' estimates are rough; compiling them costs seconds
SET jit = off
AS $$
DECLARE
	lv integer[];
	best_loss double precision;
	m integer := cardinality(qid);
	joins text := '';
	ctes text := '';
	gens text[] := '{}';
	keep text;
	outcols text[] := '{}';
	changed text[] := '{}';
	att record;
	i integer;
	n_released bigint;
	n_suppressed bigint;
	changes jsonb;
	fk bigint;
	fl bigint;
	ft double precision;
	star boolean;
	ordered boolean := t_distance = 'ordered';
	chain text;
	qcols text := (SELECT string_agg(format('%I', q), ', ') FROM unnest(qid) q);
	-- local recoding
	lctes text[] := '{}';
	ljoins text := '';
	lcols text := '';
	heights integer[];
	cur integer[];
	cand integer[];
	cand_col integer;
	cand_level integer;
	best_n bigint;
	best_cost bigint;
	n_cand bigint;
	cost bigint;
	n_recoded bigint := 0;
	cost_recoded bigint := 0;
	n_failing bigint;
	recoding text := 'suppression';
	rescue text;
	best_rescue text;
	star_col boolean;
	climbed integer[] := '{}';
	j integer;
BEGIN
	IF release IS NULL OR suppression IS NULL OR local_recoding IS NULL THEN
		RAISE EXCEPTION 'qid_anonymize_into needs a release table name, a suppression mode and local_recoding'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF suppression NOT IN ('remove', 'star') THEN
		RAISE EXCEPTION 'qid_anonymize_into: unknown suppression "%"', suppression
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Use remove or star.';
	END IF;
	-- before any work: the release would be computed only for CREATE TABLE to refuse it
	IF to_regclass(release) IS NOT NULL THEN
		RAISE EXCEPTION 'table % already exists', release
			USING ERRCODE = 'duplicate_table',
				  HINT = 'qid_anonymize_into writes only into a new table; pick another name or drop it.';
	END IF;
	star := suppression = 'star';
	-- the caller's empty object arrives as NULL
	hierarchies := coalesce(hierarchies, '{}');
	SELECT q.levels, q.loss INTO lv, best_loss
	FROM qidrisk_internal.qid_lattice(rel, qid, hierarchies, k, max_suppressed, sensitive_column, l, l_model, c,
								 t, t_distance, metric, 'anonymous') q
	WHERE q.best;
	IF lv IS NULL THEN
		RAISE EXCEPTION 'qid_anonymize_into: no generalization of % meets the target', rel
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Allow more suppression, lower k or l, or add coarser hierarchy levels.';
	END IF;

	-- the generalized value of each quasi-identifier (text above level 0)
	FOR i IN 1 .. m LOOP
		IF lv[i] = 0 THEN
			gens := gens || format('t.%I', qid[i]);
		ELSE
			ctes := ctes || format('hr%1$s AS MATERIALIZED (SELECT h.value, h.levels[%2$s] AS g FROM qidrisk_internal.qidrisk_hierarchy_rows(%3$L::regclass, %4$L, %5$L::jsonb) h), ',
								   i, lv[i], rel::oid::regclass::text, qid[i], hierarchies -> qid[i]);
			joins := joins || format(
				' LEFT JOIN hr%1$s h%1$s ON h%1$s.value = CAST(t.%2$I AS text)
				  LEFT JOIN (SELECT g FROM hr%1$s WHERE value IS NULL) n%1$s ON t.%2$I IS NULL',
				i, qid[i]);
			gens := gens || format('coalesce(h%1$s.g, n%1$s.g)', i);
		END IF;
	END LOOP;
	keep := format('qidrisk_size >= %s', k);
	IF l > 1 THEN
		keep := keep || format(' AND qidrisk_distinct >= %s', l);
		IF l_model = 'entropy' THEN
			keep := keep || format(' AND qidrisk_entropy >= ln(%s) * (1 - 1e-9)', l);
		ELSIF l_model = 'recursive' THEN
			keep := keep || format(' AND qidrisk_r1 < %s * qidrisk_tail', c);
		END IF;
	END IF;
	IF t IS NOT NULL THEN
		keep := keep || format(' AND %s <= %s', CASE WHEN ordered THEN 'qidrisk_tord' ELSE 'qidrisk_teq' END, t);
	END IF;
	-- per class of src (qidrisk_key, qidrisk_s): size, distinct sensitive values,
	-- entropy, the recursive test's r1 and tail, the equal and ordered distances
	-- to the distribution of all of src (values ranked in the type's order, NULL
	-- last); rows with a NULL key count in that distribution only
	chain := format($c$
		ks AS (
			SELECT qidrisk_key AS key, qidrisk_s AS s, count(*) AS ns FROM src GROUP BY 1, 2
		), kq AS (
			SELECT ks.*, sum(ns) OVER (PARTITION BY s)::float8 / sum(ns) OVER () AS q,
				   dense_rank() OVER (ORDER BY s) AS rk
			FROM ks
		), kr AS (
			SELECT kq.*, sum(ns) OVER w AS size, count(*) OVER w AS d,
				   row_number() OVER (PARTITION BY key ORDER BY ns DESC) AS r
			FROM kq WINDOW w AS (PARTITION BY key)
		), cls AS (
			SELECT key, max(size) AS qidrisk_size, max(d) AS qidrisk_distinct,
				   -sum(ns::float8 / size * ln(ns::float8 / size)) AS qidrisk_entropy,
				   max(ns) AS qidrisk_r1, coalesce(sum(ns) FILTER (WHERE r >= %1$s), 0) AS qidrisk_tail,
				   (sum(abs(ns::float8 / size - q) - q) + 1) / 2 AS qidrisk_teq
			FROM kr WHERE key IS NOT NULL GROUP BY key
		), ord AS (%2$s
		)$c$, l,
		CASE WHEN ordered AND t IS NOT NULL THEN $o$
			SELECT x.key, sum(abs(x.cum)) / greatest((SELECT count(DISTINCT rk) FROM kq) - 1, 1) AS qidrisk_tord
			FROM (SELECT c.key, sum(coalesce(k.ns, 0)::float8 / c.qidrisk_size - v.q)
									OVER (PARTITION BY c.key ORDER BY v.rk) AS cum
				  FROM cls c CROSS JOIN (SELECT DISTINCT rk, q FROM kq) v
				  LEFT JOIN kr k ON k.key = c.key AND k.rk = v.rk) x
			GROUP BY x.key$o$
		ELSE 'SELECT key, 0::float8 AS qidrisk_tord FROM cls' END);
	IF to_regclass('pg_temp.qidrisk_anonymize_work') IS NOT NULL THEN
		DROP TABLE pg_temp.qidrisk_anonymize_work;
	END IF;
	-- classes by their fingerprint (qid_key), the sensitive values counted per class
	EXECUTE format($q$
		CREATE TEMP TABLE qidrisk_anonymize_work AS
		WITH %1$s src AS (
			SELECT t.*, %2$s, %3$s AS qidrisk_s, qidrisk_internal.qid_key(%4$s) AS qidrisk_key
			FROM %5$s t %6$s
		), %7$s
		SELECT src.*, %8$s AS qidrisk_keep
		FROM src JOIN cls ON cls.key = src.qidrisk_key JOIN ord ON ord.key = src.qidrisk_key$q$,
		ctes,
		(SELECT string_agg(format('%s AS qidrisk_g%s', gens[s.gi], s.gi), ', ') FROM generate_series(1, m) AS s(gi)),
		CASE WHEN sensitive_column IS NULL THEN 'NULL::integer' ELSE format('t.%I', sensitive_column) END,
		array_to_string(gens, ', '), rel, joins, chain, keep);

	-- local recoding: the failing rows climb their hierarchies together, one
	-- column at a time; at each step the column and level whose classes (with
	-- the kept rows of equal values) rescue rows at the fewest changed values
	-- per row; the rescued rows keep their levels, the others climb on
	SELECT count(*) INTO n_failing FROM qidrisk_anonymize_work WHERE NOT qidrisk_keep;
	IF local_recoding AND n_failing > 0 THEN
		heights := array_fill(0, ARRAY[m]);
		FOR i IN 1 .. m LOOP
			IF hierarchies ? qid[i] THEN
				lctes := lctes || format('lh%1$s AS MATERIALIZED (SELECT h.value, h.levels FROM qidrisk_internal.qidrisk_hierarchy_rows(%2$L::regclass, %3$L, %4$L::jsonb) h)',
										 i, rel::oid::regclass::text, qid[i], hierarchies -> qid[i]);
				ljoins := ljoins || format(
					' LEFT JOIN lh%1$s ON lh%1$s.value = CAST(w.%2$I AS text)
					  LEFT JOIN (SELECT levels FROM lh%1$s WHERE value IS NULL) ln%1$s ON w.%2$I IS NULL',
					i, qid[i]);
				lcols := lcols || format(', coalesce(lh%1$s.levels, ln%1$s.levels) AS qidrisk_h%1$s', i);
			END IF;
			lcols := lcols || format(', w.qidrisk_g%1$s, CAST(w.%2$I AS text) AS qidrisk_o%1$s', i, qid[i]);
		END LOOP;
		IF to_regclass('pg_temp.qidrisk_anonymize_local') IS NOT NULL THEN
			DROP TABLE pg_temp.qidrisk_anonymize_local;
		END IF;
		EXECUTE format($q$
			CREATE TEMP TABLE qidrisk_anonymize_local AS
			%1$s SELECT w.ctid AS qidrisk_tid, w.qidrisk_s %2$s, NULL::integer[] AS qidrisk_done,
				NULL::uuid AS qidrisk_k, NULL::integer AS qidrisk_changed
			FROM qidrisk_anonymize_work w %3$s WHERE NOT w.qidrisk_keep$q$,
			CASE WHEN cardinality(lctes) > 0 THEN 'WITH ' || array_to_string(lctes, ', ') ELSE '' END,
			lcols, ljoins);
		FOR i IN 1 .. m LOOP
			IF hierarchies ? qid[i] THEN
				EXECUTE format('SELECT max(cardinality(qidrisk_h%s)) FROM qidrisk_anonymize_local', i)
				INTO j;
				heights[i] := coalesce(j, lv[i]);
			END IF;
		END LOOP;
		cur := lv;
		LOOP
			best_n := 0;
			FOR i IN 1 .. m LOOP
				FOR j IN cur[i] + 1 .. heights[i] LOOP
					cand := cur;
					cand[i] := j;
					-- the candidate's classes over all rows; the failing rows that reach the target
					rescue := format($q$
						WITH cand AS (
							SELECT qidrisk_tid, qidrisk_internal.qid_key(%1$s) AS key, qidrisk_s, %2$s AS changed
							FROM qidrisk_anonymize_local WHERE qidrisk_done IS NULL
						), src AS (
							SELECT qidrisk_key, qidrisk_s FROM qidrisk_anonymize_work WHERE qidrisk_keep %3$s
							UNION ALL
							SELECT qidrisk_k, qidrisk_s FROM qidrisk_anonymize_local WHERE qidrisk_done IS NOT NULL %4$s
							UNION ALL
							SELECT key, qidrisk_s FROM cand
						), %5$s
						SELECT cand.qidrisk_tid, cand.key, cand.changed
						FROM cand JOIN cls ON cls.key = cand.key JOIN ord ON ord.key = cand.key
						WHERE %6$s$q$,
						(SELECT string_agg(CASE WHEN cand[p] = lv[p] THEN format('qidrisk_g%s', p)
												ELSE format('qidrisk_h%s[%s]', p, cand[p]) END, ', ')
						 FROM generate_series(1, m) p),
						(SELECT string_agg(format('(CAST(%s AS text) IS DISTINCT FROM qidrisk_o%s)::integer',
												  CASE WHEN cand[p] = lv[p] THEN format('qidrisk_g%s', p)
													   ELSE format('qidrisk_h%s[%s]', p, cand[p]) END, p), ' + ')
						 FROM generate_series(1, m) p),
						-- without t only the classes the failing rows reach matter
						CASE WHEN t IS NULL THEN 'AND qidrisk_key IN (SELECT key FROM cand)' ELSE '' END,
						CASE WHEN t IS NULL THEN 'AND qidrisk_k IN (SELECT key FROM cand)' ELSE '' END,
						chain, keep);
					EXECUTE format('SELECT count(*), coalesce(sum(changed), 0) FROM (%s) r', rescue)
					INTO n_cand, cost;
					-- the fewest changed values per rescued row; ties: more rows
					IF n_cand > 0 AND (best_n = 0 OR cost * best_n < best_cost * n_cand
									   OR (cost * best_n = best_cost * n_cand AND n_cand > best_n)) THEN
						best_n := n_cand;
						best_cost := cost;
						cand_col := i;
						cand_level := j;
						best_rescue := rescue;
					END IF;
				END LOOP;
			END LOOP;
			EXIT WHEN best_n = 0;
			cur[cand_col] := cand_level;
			EXECUTE format($q$
				WITH r AS (%s)
				UPDATE qidrisk_anonymize_local l SET qidrisk_done = %L, qidrisk_k = r.key, qidrisk_changed = r.changed
				FROM r WHERE l.qidrisk_tid = r.qidrisk_tid$q$,
				best_rescue, cur);
			n_recoded := n_recoded + best_n;
			cost_recoded := cost_recoded + best_cost;
			EXIT WHEN n_recoded = n_failing;
		END LOOP;
		-- kept only when it changes fewer values than suppressing the rows (m each)
		IF n_recoded > 0 AND cost_recoded < n_recoded * m THEN
			recoding := 'local';
			-- a column recoded above level 0 is written as text: its new labels go
			-- to a column added first (no rewrite, so the rows keep their ctid)
			FOR i IN 1 .. m LOOP
				IF lv[i] = 0 AND cur[i] > 0 THEN
					EXECUTE format('SELECT EXISTS (SELECT FROM qidrisk_anonymize_local WHERE qidrisk_done[%s] > 0)', i)
					INTO star_col;
					IF star_col THEN
						EXECUTE format('ALTER TABLE qidrisk_anonymize_work ADD COLUMN qidrisk_r%s text', i);
						climbed := climbed || i;
					END IF;
				END IF;
			END LOOP;
			EXECUTE format($q$
				UPDATE qidrisk_anonymize_work w SET qidrisk_keep = true %s
				FROM qidrisk_anonymize_local l
				WHERE l.qidrisk_done IS NOT NULL AND w.ctid = l.qidrisk_tid$q$,
				(SELECT string_agg(format(', qidrisk_%3$s%1$s = CASE WHEN l.qidrisk_done[%1$s] = %2$s THEN CAST(l.qidrisk_g%1$s AS text) ELSE l.qidrisk_h%1$s[l.qidrisk_done[%1$s]] END',
										  p, lv[p], CASE WHEN lv[p] > 0 THEN 'g' ELSE 'r' END), '')
				 FROM generate_series(1, m) p WHERE lv[p] > 0 OR p = ANY (climbed)));
			FOR i IN SELECT unnest(climbed) LOOP
				EXECUTE format('ALTER TABLE qidrisk_anonymize_work ALTER COLUMN qidrisk_g%1$s TYPE text USING coalesce(qidrisk_r%1$s, CAST(qidrisk_g%1$s AS text))', i);
			END LOOP;
		ELSE
			n_recoded := 0;
		END IF;
		DROP TABLE qidrisk_anonymize_local;
	END IF;

	-- the release: the source's columns in order, quasi-identifiers generalized
	FOR att IN
		SELECT a.attname::text AS name, array_position(qid, a.attname::text) AS pos
		FROM pg_attribute a
		WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum
	LOOP
		IF att.pos IS NULL THEN
			outcols := outcols || format('%I', att.name);
		ELSIF star THEN
			outcols := outcols || format('CASE WHEN qidrisk_keep THEN CAST(qidrisk_g%s AS text) ELSE ''*'' END AS %I',
										 att.pos, att.name);
			changed := changed || format('%L, count(*) FILTER (WHERE CAST(%I AS text) IS DISTINCT FROM CASE WHEN qidrisk_keep THEN CAST(qidrisk_g%s AS text) ELSE ''*'' END)',
										 att.name, att.name, att.pos);
		ELSE
			outcols := outcols || format('qidrisk_g%s AS %I', att.pos, att.name);
			changed := changed || format('%L, count(*) FILTER (WHERE qidrisk_keep AND CAST(%I AS text) IS DISTINCT FROM CAST(qidrisk_g%s AS text))',
										 att.name, att.name, att.pos);
		END IF;
	END LOOP;
	EXECUTE format('CREATE TABLE %s AS SELECT %s FROM qidrisk_anonymize_work %s',
				   release, array_to_string(outcols, ', '),
				   CASE WHEN star THEN '' ELSE 'WHERE qidrisk_keep' END);
	EXECUTE format('SELECT count(*) FILTER (WHERE qidrisk_keep), count(*) FILTER (WHERE NOT qidrisk_keep), jsonb_build_object(%s) FROM qidrisk_anonymize_work',
				   array_to_string(changed, ', '))
	INTO n_released, n_suppressed, changes;

	-- re-check the written table (suppressed rows, all '*', left out)
	EXECUTE format('SELECT qidrisk_internal.k_anonymity(%s) FROM %s %s',
				   (SELECT string_agg(format('%I', q), ', ') FROM unnest(qid) q), release,
				   CASE WHEN star THEN 'WHERE NOT (' ||
						(SELECT string_agg(format('%I IS NOT DISTINCT FROM ''*''', q), ' AND ') FROM unnest(qid) q) || ')'
				   ELSE '' END)
	INTO fk;
	IF sensitive_column IS NOT NULL THEN
		-- t is measured against the source's distribution, suppressed rows included
		EXECUTE format('WITH src AS (SELECT qidrisk_internal.qid_key(%s) AS qidrisk_key, %I AS qidrisk_s FROM %s %s
									 UNION ALL SELECT NULL, qidrisk_s FROM qidrisk_anonymize_work WHERE NOT qidrisk_keep), %s
						SELECT min(qidrisk_distinct), max(CASE WHEN %L THEN qidrisk_tord ELSE qidrisk_teq END)
						FROM cls JOIN ord USING (key)',
					   qcols, sensitive_column, release,
					   CASE WHEN star THEN 'WHERE NOT (' ||
							(SELECT string_agg(format('%I IS NOT DISTINCT FROM ''*''', q), ' AND ') FROM unnest(qid) q) || ')'
					   ELSE '' END, chain, ordered)
		INTO fl, ft;
		IF t IS NULL THEN
			ft := NULL;
		END IF;
	END IF;
	DROP TABLE qidrisk_anonymize_work;
	IF n_released > 0 AND (fk < k OR (l > 1 AND fl < l) OR ft > t) THEN
		RAISE EXCEPTION 'qid_anonymize_into: the written release % has k = %, l = %, t = %, short of the target k = %, l = %, t = %',
			release, fk, fl, ft, k, l, t
			USING ERRCODE = 'internal_error';
	END IF;
	IF n_suppressed > floor(max_suppressed * (n_released + n_suppressed)) THEN
		RAISE EXCEPTION 'qid_anonymize_into: % rows suppressed, more than allowed', n_suppressed
			USING ERRCODE = 'internal_error';
	END IF;
	RETURN QUERY SELECT lv, best_loss, CASE WHEN star THEN n_released + n_suppressed ELSE n_released END,
		n_suppressed, changes, fk, fl, ft, n_recoded, recoding;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_anonymize(regclass, text[], jsonb, text, integer, double precision, text, integer,
									  text, double precision, double precision, text, text, text, boolean) IS
'internal: qid_anonymize_into after the caller''s names are resolved';


-- the body of qid_anonymize_into: resolves the caller's table names with the
-- caller's search_path, so it cannot pin its own; it calls only
-- schema-qualified functions and uses no operator
CREATE FUNCTION qidrisk_internal.qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive_column text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove', local_recoding boolean DEFAULT false)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, k_anonymity bigint, l_diversity bigint, t_closeness double precision,
			   rows_recoded bigint, recoding text)
LANGUAGE sql VOLATILE
AS $$
	SELECT * FROM qidrisk_internal.qidrisk_anonymize(rel, qid,
		(SELECT pg_catalog.jsonb_object_agg(e.key,
			CASE WHEN pg_catalog.texteq(pg_catalog.jsonb_typeof(e.value), 'string')
				 THEN pg_catalog.to_jsonb(qidrisk_internal.qidrisk_qualified_table(
						pg_catalog.jsonb_array_element_text(pg_catalog.jsonb_build_array(e.value), 0)))
				 -- any other "table" is left for qid_lattice to refuse, naming the column
				 WHEN pg_catalog.texteq(pg_catalog.jsonb_typeof(e.value), 'object')
					  AND pg_catalog.texteq(pg_catalog.jsonb_typeof(pg_catalog.jsonb_object_field(e.value, 'table')), 'string')
				 THEN pg_catalog.jsonb_concat(e.value, pg_catalog.jsonb_build_object('table',
						qidrisk_internal.qidrisk_qualified_table(pg_catalog.jsonb_object_field_text(e.value, 'table'))))
				 ELSE e.value END)
		 FROM pg_catalog.jsonb_each(hierarchies) e),
		qidrisk_internal.qidrisk_qualified_new_table(release), k, max_suppressed, sensitive_column, l, l_model, c,
		t, t_distance, metric, suppression, local_recoding)
$$;
COMMENT ON FUNCTION qidrisk_internal.qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision,
								  text, integer, text, double precision, double precision, text, text, text, boolean) IS
'internal: the body of qid_anonymize_into';

-- the documented name calls the body (src/boundary.c), leaving the caller's search_path as it is
CREATE FUNCTION qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive_column text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove', local_recoding boolean DEFAULT false)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, k_anonymity bigint, l_diversity bigint, t_closeness double precision,
			   rows_recoded bigint, recoding text)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision, text, integer,
								  text, double precision, double precision, text, text, text, boolean) IS
'writes a new table: the source generalized to the best anonymous node of qid_lattice, failing rows suppressed or locally recoded, re-checked';

-- ==== QaR: candidates, row_key ====

DROP FUNCTION qar_thetas(regclass, text[], integer);
DROP FUNCTION qar_risk(regclass, text[], integer, float8, float8);
DROP FUNCTION qidrisk_internal.qar_risk(regclass, text[], integer, float8, float8);
DROP FUNCTION qar_record_scores(regclass, text[], integer, text);
DROP FUNCTION qar_record_contributions(regclass, text[], integer, text, float8, float8, integer);
DROP FUNCTION qar_record_entropy(regclass, text[], integer, text, integer);
DROP FUNCTION qar_greedy_removal(regclass, text[], integer, text, integer, float8, float8);

CREATE FUNCTION qar_thetas(rel regclass, candidates text[], p integer DEFAULT 3)
RETURNS TABLE(columns text[], theta float8, classes bigint, singletons bigint)
AS 'MODULE_PATHNAME', 'qar_thetas'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_thetas(regclass, text[], integer) IS
'QaR: theta = H/L (distinct combinations over rows) of every p-column subset of the candidate columns, in lexicographic order, with its classes and singletons';

CREATE FUNCTION qar_risk(rel regclass, candidates text[], p integer DEFAULT 3,
	alpha float8 DEFAULT 0.01, pi_u float8 DEFAULT 0.05,
	OUT risk float8, OUT u float8, OUT n_p bigint, OUT n_u integer, OUT xi float8,
	OUT beta float8, OUT fit_method text, OUT rows bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'qar_risk'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_risk(regclass, text[], integer, float8, float8) IS
'QaR dataset risk T(p, alpha) of a table (Béra et al. 2023): GPD fit of the logit thetas of all p-column subsets above their empirical 1 - pi_u quantile u';
CREATE FUNCTION qidrisk_internal.qar_risk(rel regclass, candidates text[], p integer DEFAULT 3,
										  alpha double precision DEFAULT 0.01, pi_u double precision DEFAULT 0.05,
										  OUT risk double precision, OUT u double precision, OUT n_p bigint,
										  OUT n_u integer, OUT xi double precision, OUT beta double precision,
										  OUT fit_method text, OUT rows bigint)
RETURNS record
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qar_risk';

CREATE FUNCTION qar_record_scores(rel regclass, candidates text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL)
RETURNS TABLE(row_key text, u_plus float8, unique_subsets integer)
AS 'MODULE_PATHNAME', 'qar_record_scores'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_record_scores(regclass, text[], integer, text) IS
'QaR proxy U+(i) = sum of theta(j) over the p-column subsets j on which row i is unique, per row with its key (ctid when key_column is NULL)';

CREATE FUNCTION qar_record_contributions(rel regclass, candidates text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL, alpha float8 DEFAULT 0.01, pi_u float8 DEFAULT 0.05,
	max_rows integer DEFAULT 10000)
RETURNS TABLE(row_key text, contribution float8, risk_without float8)
AS 'MODULE_PATHNAME', 'qar_record_contributions'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_record_contributions(regclass, text[], integer, text, float8, float8, integer) IS
'QaR exact contribution T(p, alpha) - T(p, alpha; without row i) of every row; refuses tables above max_rows rows';

CREATE FUNCTION qar_record_entropy(rel regclass, candidates text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL, max_rows integer DEFAULT 10000)
RETURNS TABLE(row_key text, entropy float8)
AS 'MODULE_PATHNAME', 'qar_record_entropy'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_record_entropy(regclass, text[], integer, text, integer) IS
'QaR record entropy E(i): entropy of the empirical-cdf ranks H(i,j) over the p-column subsets, binned into floor(sqrt(N_p)) bins; refuses tables above max_rows rows';

CREATE FUNCTION qar_greedy_removal(rel regclass, candidates text[], p integer DEFAULT 3,
	key_column text DEFAULT NULL, steps integer DEFAULT 10,
	alpha float8 DEFAULT 0.01, pi_u float8 DEFAULT 0.05)
RETURNS TABLE(step integer, row_key text, u_plus float8, risk_after float8)
AS 'MODULE_PATHNAME', 'qar_greedy_removal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qar_greedy_removal(regclass, text[], integer, text, integer, float8, float8) IS
'QaR greedy removal without touching the table: at each step the row with the largest current U+ goes (uniqueness updated incrementally), and the risk after it; step 0 is the table as it is';

-- ==== Checks: setting_format ====

-- qid_check's setting is the policy's jsonb; what qid_check_rules lists is its format
DROP FUNCTION qid_check_rules();
DROP FUNCTION qidrisk_internal.qid_check_rules();
CREATE FUNCTION qidrisk_internal.qid_check_rules()
RETURNS TABLE (rule text, setting_format text, description text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.rule, r.setting_format, r.description
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
		 'QaR dataset risk T(p, alpha) over the p-column subsets of the columns (see qar_risk) must be at most max'),
		(7, 'min_l', '{"sensitive": column name, "l": whole number >= 1, "model": "distinct" or "entropy" (optional, default distinct)}',
		 'l-diversity of the sensitive column (fewest distinct values of a class, see l_diversity; or exp of the least class entropy, see entropy_l_diversity) must be at least l'),
		(8, 'max_t', '{"sensitive": column name, "max": number in [0, 1], "distance": "equal" or "ordered" (optional, default equal)}',
		 't-closeness of the sensitive column (largest EMD between a class and the table, equal distance, see t_closeness, or ordered distance over the ranks of a numeric, date or timestamp column, see t_closeness_ordered) must be at most max')
	) AS r(o, rule, setting_format, description)
	ORDER BY r.o
$$;
CREATE FUNCTION qid_check_rules()
RETURNS TABLE (rule text, setting_format text, description text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT * FROM qidrisk_internal.qid_check_rules();
END;
COMMENT ON FUNCTION qid_check_rules() IS
'the rules a qid_check policy may contain, with the form of their setting';

CREATE OR REPLACE FUNCTION qidrisk_internal.qidrisk_check_validate(rel regclass, qid text[], policy jsonb)
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
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, qid);
	IF jsonb_typeof(policy) <> 'object' THEN
		RAISE EXCEPTION 'a qid_check policy must be a JSON object, not %', jsonb_typeof(policy)
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example ''{"min_k": 5, "max_singleton_share": 0}''.';
	END IF;
	SELECT string_agg(format('"%s"', k), ', ' ORDER BY k) INTO bad
	FROM jsonb_object_keys(policy) AS k
	WHERE k NOT IN (SELECT r.rule FROM qidrisk_internal.qid_check_rules() AS r);
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'unknown qid_check policy rule %', bad
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('Known rules: %s.',
								(SELECT string_agg(r.rule, ', ') FROM qidrisk_internal.qid_check_rules() AS r));
	END IF;
	IF policy = '{}' THEN
		RAISE EXCEPTION 'a qid_check policy needs at least one rule'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- IF, not PERFORM ... WHERE: the planner folds immutable calls on constants
	IF policy ? 'min_k' THEN
		PERFORM qidrisk_internal.qidrisk_check_number('min_k', policy -> 'min_k', NULL, 1, 'Infinity', true);
	END IF;
	IF policy ? 'max_singleton_share' THEN
		PERFORM qidrisk_internal.qidrisk_check_number('max_singleton_share', policy -> 'max_singleton_share',
												 NULL, 0, 1, false);
	END IF;
	FOR s, bad IN
		SELECT policy -> r.rule, r.rule FROM qidrisk_internal.qid_check_rules() AS r
		WHERE policy ? r.rule AND r.setting_format LIKE '{%'
	LOOP
		IF jsonb_typeof(s) <> 'object' THEN
			RAISE EXCEPTION 'policy rule % must be an object %, not %', bad,
				(SELECT r.setting_format FROM qidrisk_internal.qid_check_rules() AS r WHERE r.rule = bad), s
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
		PERFORM qidrisk_internal.qidrisk_check_number('max_rows_below_k', policy -> 'max_rows_below_k', 'k',
												 1, 2147483647, true);
		PERFORM qidrisk_internal.qidrisk_check_number('max_rows_below_k', policy -> 'max_rows_below_k', 'max',
												 0, 'Infinity', false);
	END IF;
	IF policy ? 'max_birthday_uniqueness' THEN
		PERFORM qidrisk_internal.qidrisk_check_number('max_birthday_uniqueness', policy -> 'max_birthday_uniqueness',
												 'group_size', 1, 9.2e18, true);
		PERFORM qidrisk_internal.qidrisk_check_number('max_birthday_uniqueness', policy -> 'max_birthday_uniqueness',
												 'max', 0, 1, false);
	END IF;
	IF policy ? 'min_kmap' THEN
		s := policy -> 'min_kmap';
		PERFORM qidrisk_internal.qidrisk_check_number('min_kmap', s, 'k', 1, 'Infinity', true);
		IF jsonb_typeof(s -> 'population') IS DISTINCT FROM 'string' THEN
			RAISE EXCEPTION 'policy rule min_kmap.population must be a table name, not %',
				coalesce((s -> 'population')::text, 'missing')
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		PERFORM qidrisk_internal.qidrisk_check_population(rel, s);
		IF s ? 'weight' AND jsonb_typeof(s -> 'weight') <> 'string' THEN
			RAISE EXCEPTION 'policy rule min_kmap.weight must be a column name, not %', s -> 'weight'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		PERFORM qidrisk_internal.qidrisk_check_names('min_kmap', s, 'population_qid');
	END IF;
	IF policy ? 'max_qar_risk' THEN
		s := policy -> 'max_qar_risk';
		PERFORM qidrisk_internal.qidrisk_check_number('max_qar_risk', s, 'max', 0, 1, false);
		PERFORM qidrisk_internal.qidrisk_check_names('max_qar_risk', s, 'columns');
		IF s ? 'p' THEN
			PERFORM qidrisk_internal.qidrisk_check_number('max_qar_risk', s, 'p', 1, 2147483647, true);
		END IF;
		IF s ? 'alpha' THEN
			PERFORM qidrisk_internal.qidrisk_check_number('max_qar_risk', s, 'alpha', 0, 1, false);
		END IF;
		IF s ? 'pi_u' THEN
			PERFORM qidrisk_internal.qidrisk_check_number('max_qar_risk', s, 'pi_u', 0, 1, false);
		END IF;
	END IF;
END
$$;
