-- qidrisk 0.1.0 -> 0.2.0.  A new installation of 0.2.0 runs qidrisk--0.1.0.sql
-- and then this script, so it holds every change of 0.2.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" to load this file. \quit

-- ==== The trust boundary: internals in a schema of their own ====

-- The installing role may own the extension's schema and plant overloads
-- there that a caller's generated SQL would pick.  Every internal object lives
-- in qidrisk_internal instead, which this script creates (it fails if the
-- schema exists) and which only its superuser owner can create objects in;
-- generated SQL calls only objects of qidrisk_internal and pg_catalog.
CREATE SCHEMA qidrisk_internal;
COMMENT ON SCHEMA qidrisk_internal IS
'qidrisk''s internals: support functions, state functions, the check history; not an interface';
GRANT USAGE ON SCHEMA qidrisk_internal TO PUBLIC;

-- 0.1.0's assertion helpers, replaced by the C procedure qid_assert below
DROP FUNCTION qidrisk_check_raise(regclass, jsonb);
DROP FUNCTION qidrisk_check_failures(regclass, text[], jsonb, boolean);

ALTER AGGREGATE @extschema@.qidrisk_kmap_probe(keys bytea, weight double precision, VARIADIC qid "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_birthday_exact_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_birthday_exact_weighted_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_birthday_max_k_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_birthday_max_k_weighted_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_birthday_poisson_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_birthday_poisson_weighted_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_check_names(rule text, setting jsonb, field text) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_check_number(rule text, setting jsonb, field text, low double precision, high double precision, whole boolean) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_check_population(rel regclass, setting jsonb) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_check_validate(rel regclass, qid text[], policy jsonb) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_class_count_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_class_profile_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_complete_filter(rel regclass, qid text[]) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_combine(internal, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_deserialize(bytea, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_invtransfn(internal, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_k_invtransfn(internal, integer, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_k_transfn(internal, integer, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_key_invtransfn(internal, uuid) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_key_k_invtransfn(internal, integer, uuid) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_key_k_transfn(internal, integer, uuid) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_key_transfn(internal, uuid) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_param_value_transfn(internal, bigint, anyelement) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_serialize(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_target_value_transfn(internal, double precision, anyelement) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_transfn(internal, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_value_param_transfn(internal, anyelement, bigint) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_freq_value_transfn(internal, anyelement) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_generalization_query(rel regclass, qid text[], whatif jsonb, drop_incomplete boolean, all_columns boolean, funcname text) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_k_anonymity_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kl_uniform_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kl_uniform_weighted_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kmap_probe_combine(internal, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kmap_probe_deserialize(bytea, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kmap_probe_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kmap_probe_serialize(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_kmap_probe_transfn(internal, bytea, double precision, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_optimal_cuts_final(internal, anyelement, integer) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_optimal_cuts_final(internal, anyelement, integer, text) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_quantile_cuts_approx_final(internal, anyelement, integer) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_quantile_cuts_approx_final(internal, anyelement, integer, double precision, double precision) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_quantile_cuts_final(internal, anyelement, integer) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_quantile_means_final(internal, anyelement, anyarray) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_quantile_medians_final(internal, anyelement, anyarray) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_representatives_mismatch(ncuts integer, nrepresentatives integer) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_require_columns(rel regclass, columns text[]) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_rows_below_k_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sample_combine(internal, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sample_deserialize(bytea, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sample_serialize(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sample_transfn(internal, anyelement, integer) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sample_transfn(internal, anyelement, integer, double precision, double precision) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_singleton_count_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_classes_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_combine(internal, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_default_transfn(internal, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_deserialize(bytea, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_key_default_transfn(internal, uuid) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_key_transfn(internal, integer, uuid) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_profile_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_serialize(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_singletons_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_sketch_transfn(internal, integer, VARIADIC "any") SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_utility_final(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_utility_transfn(internal, double precision, double precision) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_value_count_combine(internal, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_value_count_cost_transfn(internal, anyelement, integer, text) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_value_count_cuts_transfn(internal, anyelement, anyarray) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_value_count_deserialize(bytea, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_value_count_serialize(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_value_count_transfn(internal, anyelement, integer) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_weight_combine(internal, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_weight_deserialize(bytea, internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_weight_param_transfn(internal, bigint, anyelement, double precision) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_weight_serialize(internal) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_weight_target_transfn(internal, double precision, anyelement, double precision) SET SCHEMA qidrisk_internal;
ALTER FUNCTION @extschema@.qidrisk_weight_value_param_transfn(internal, anyelement, double precision, bigint) SET SCHEMA qidrisk_internal;

-- What qidrisk's own SQL calls of the documented functions, it calls here:
-- the same C functions and aggregates under names the installing role cannot
-- shadow with a better-matching overload
CREATE FUNCTION qidrisk_internal.anonymity_partitions(population double precision, k double precision, beta double precision DEFAULT 0.1)
RETURNS double precision
LANGUAGE c
IMMUTABLE PARALLEL SAFE STRICT
AS 'MODULE_PATHNAME', 'qidrisk_anonymity_partitions';
CREATE FUNCTION qidrisk_internal.bucket_budget(partitions double precision, distinct_counts double precision[], weights double precision[] DEFAULT NULL::double precision[])
RETURNS double precision[]
LANGUAGE c
IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'qidrisk_bucket_budget';
CREATE FUNCTION qidrisk_internal.individual_risk(sample_frequency bigint, population_frequency double precision, method text DEFAULT 'approx'::text)
RETURNS double precision
LANGUAGE c
IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'qidrisk_individual_risk';
CREATE FUNCTION qidrisk_internal.kmap_count(release regclass, population regclass, qid text[], population_weight text DEFAULT NULL::text, population_qid text[] DEFAULT NULL::text[])
RETURNS TABLE(class jsonb, release_rows bigint, population_rows double precision)
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qidrisk_kmap_count';
CREATE FUNCTION qidrisk_internal.qar_risk(rel regclass, columns text[], p integer DEFAULT 3, alpha double precision DEFAULT 0.01, pi_u double precision DEFAULT 0.05, OUT risk double precision, OUT u double precision, OUT n_p bigint, OUT n_u integer, OUT xi double precision, OUT beta double precision, OUT fit_method text, OUT rows bigint)
RETURNS record
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qar_risk';
CREATE FUNCTION qidrisk_internal.qid_key(VARIADIC "any")
RETURNS uuid
LANGUAGE c
IMMUTABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'qid_key';
CREATE FUNCTION qidrisk_internal.qid_lattice(rel regclass, qid text[], hierarchies jsonb, k integer, max_suppressed double precision DEFAULT 0, sensitive text DEFAULT NULL::text, l integer DEFAULT 1, l_model text DEFAULT 'distinct'::text, c double precision DEFAULT NULL::double precision, t double precision DEFAULT NULL::double precision, t_distance text DEFAULT 'equal'::text, metric text DEFAULT 'discernibility'::text, evaluate text DEFAULT 'anonymous'::text)
RETURNS TABLE(levels integer[], anonymous boolean, minimal boolean, evaluated boolean, suppressed_rows bigint, classes bigint, height integer, precision_loss double precision, discernibility double precision, entropy_loss double precision, suppressed_share double precision, loss double precision, best boolean, rows bigint)
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qidrisk_qid_lattice';
CREATE FUNCTION qidrisk_internal.quantile_bucket(value anyelement, cuts anyarray)
RETURNS integer
LANGUAGE c
IMMUTABLE PARALLEL SAFE STRICT
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket';
CREATE FUNCTION qidrisk_internal.quantile_bucket_label(value anyelement, cuts anyarray)
RETURNS text
LANGUAGE c
STABLE PARALLEL SAFE STRICT
AS 'MODULE_PATHNAME', 'qidrisk_quantile_bucket_label';

CREATE AGGREGATE qidrisk_internal.k_anonymity(VARIADIC "any") (
	SFUNC = qidrisk_internal.qidrisk_freq_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_k_anonymity_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.class_profile(VARIADIC "any") (
	SFUNC = qidrisk_internal.qidrisk_freq_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_class_profile_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.birthday_uniqueness_exact(k bigint, value anyelement) (
	SFUNC = qidrisk_internal.qidrisk_freq_param_value_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_exact_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.birthday_uniqueness_exact(k bigint, value anyelement, weight double precision) (
	SFUNC = qidrisk_internal.qidrisk_weight_param_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_birthday_exact_weighted_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_weight_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_weight_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_weight_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.quantile_cuts(value anyelement, k integer) (
	SFUNC = qidrisk_internal.qidrisk_value_count_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_quantile_cuts_final,
	FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_internal.qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_value_count_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.quantile_means(value anyelement, cuts anyarray) (
	SFUNC = qidrisk_internal.qidrisk_value_count_cuts_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_quantile_means_final,
	FINALFUNC_EXTRA,
	COMBINEFUNC = qidrisk_internal.qidrisk_value_count_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_value_count_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_value_count_deserialize,
	PARALLEL = SAFE
);

-- The PL/pgSQL and SQL functions qidrisk's own SQL calls: their bodies live in
-- qidrisk_internal (rows_below, ten lines, also keeps its own; the others'
-- documented names call these)
CREATE FUNCTION qidrisk_internal.rows_below(profile qid_profile, k integer)
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
CREATE FUNCTION qidrisk_internal.weighted_risk(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
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
	PERFORM qidrisk_internal.individual_risk(1, 1, method);
	RETURN QUERY
	SELECT k.class, k.release_rows, k.population_rows,
		   qidrisk_internal.individual_risk(k.release_rows, k.population_rows, method)
	FROM qidrisk_internal.kmap_count(rel, rel, qid, weight) AS k;
END
$$;
CREATE FUNCTION qidrisk_internal.kmap_value(release regclass, population regclass, qid text[],
						   population_weight text DEFAULT NULL,
						   population_qid text[] DEFAULT NULL)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT min(k.population_rows)
	FROM qidrisk_internal.kmap_count(release, population, qid, population_weight, population_qid) AS k
$$;

-- ==== Table reading: locked, resolved and privilege-checked in one place ====

-- Lock rel, resolve its columns (NULL: every column) and check SELECT on them:
-- the first step of every table-level function written in SQL or PL/pgSQL
CREATE OR REPLACE FUNCTION qidrisk_internal.qidrisk_require_columns(rel regclass, columns text[])
RETURNS void
AS 'MODULE_PATHNAME', 'qidrisk_require_columns'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_require_columns(regclass, text[]) IS
'internal: lock a relation (AccessShareLock), raise 42P01 if it is gone, 42703 naming the first listed column it lacks (NULL: every column), 42501 naming the first the caller may not read';

-- The rows qid_search and qid_generalize drop as incomplete: a NULL, or an
-- empty string of a string type, in any QID column; the WHERE clause keeping the others
CREATE OR REPLACE FUNCTION qidrisk_internal.qidrisk_complete_filter(rel regclass, qid text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, qid);
	RETURN (SELECT coalesce(string_agg(CASE WHEN t.typcategory = 'S'
									   THEN format('(%1$I IS NOT NULL AND %1$I::pg_catalog.text OPERATOR(pg_catalog.<>) %2$L::pg_catalog.text)', u.c, '')
									   ELSE format('%I IS NOT NULL', u.c) END, ' AND ' ORDER BY u.o), 'true')
			FROM unnest(qid) WITH ORDINALITY u(c, o)
			JOIN pg_attribute a ON a.attrelid = rel AND a.attname = u.c AND a.attnum > 0 AND NOT a.attisdropped
			JOIN pg_type t ON t.oid = a.atttypid);
END
$$;

-- The query behind a generalization what-if: the QID columns (or every column)
-- of rel with the generalized ones replaced, and whether the row was modified
CREATE OR REPLACE FUNCTION qidrisk_internal.qidrisk_generalization_query(rel regclass, qid text[], whatif jsonb,
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
	singles jsonb;
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
	-- lock rel, then check its QID columns (or every column) and the caller's access
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, qid);
	IF all_columns THEN
		PERFORM qidrisk_internal.qidrisk_require_columns(rel, NULL);
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
		filter := qidrisk_internal.qidrisk_complete_filter(rel, qid);
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
			PERFORM qidrisk_internal.qidrisk_require_columns(map_rel, ARRAY[from_col, to_col]);
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
			EXECUTE format('SELECT qidrisk_internal.quantile_cuts(%I, %s)::text FROM %s WHERE %s',
						   col, k, rel, filter) INTO cuts;
			IF kinds[1] = 'range' THEN
				-- a range holding one value keeps that value (as text): it changes
				-- nothing, so it modifies no row; values equal under the type's
				-- equality (1.0, 1.00) all take the first text, as one class
				EXECUTE format('SELECT pg_catalog.jsonb_object_agg(s.b, s.v) FROM (SELECT qidrisk_internal.quantile_bucket(%1$I, %2$L::%3$s[]) AS b, pg_catalog.min(%1$I::pg_catalog.text COLLATE "C") AS v FROM %4$s WHERE (%5$s) AND %1$I IS NOT NULL GROUP BY 1 HAVING pg_catalog.count(DISTINCT %1$I) OPERATOR(pg_catalog.=) 1) s',
							   col, cuts, coltype, rel, filter) INTO singles;
				g := format('COALESCE(%L::pg_catalog.jsonb OPERATOR(pg_catalog.->>) qidrisk_internal.quantile_bucket(b.%I, %L::%s[])::pg_catalog.text, qidrisk_internal.quantile_bucket_label(b.%I, %L::%s[]))',
							coalesce(singles, '{}'), col, cuts, coltype, col, cuts, coltype);
				orig := format('b.%I::text', col);
			ELSE
				EXECUTE format('SELECT qidrisk_internal.quantile_means(%I, %L::%s[])::text FROM %s WHERE %s',
							   col, cuts, coltype, rel, filter) INTO means;
				g := format('(%L::float8[])[qidrisk_internal.quantile_bucket(b.%I, %L::%s[])]', means, col, cuts, coltype);
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
	-- modified: a row with a changed value; changed: its values that changed
	RETURN format('SELECT %s, (%s) AS qidrisk_modified, (%s) AS qidrisk_changed FROM (%s) b%s',
				  array_to_string(exprs, ', '), array_to_string(mods, ' OR '),
				  (SELECT string_agg(format('%s::pg_catalog.int4', m), ' OPERATOR(pg_catalog.+) ') FROM unnest(mods) m),
				  base, joins);
END
$$;
-- ==== numbers: keyed sampling of the approximate aggregates ====

-- The approximate aggregates sample classes by a keyed permutation of the
-- fingerprint (the key secret and new per statement, or fixed by the
-- superuser setting qidrisk.sample_seed); this exposes the permutation so
-- that tests can recompute a sample in plain SQL.
CREATE FUNCTION qidrisk_internal.qidrisk_sample_permute(key uuid)
RETURNS uuid
AS 'MODULE_PATHNAME', 'qidrisk_sample_permute'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_sample_permute(uuid) IS
'internal: a qid_key as the approximate aggregates of the current statement sample it (their keyed permutation)';
-- ==== generalization lattice: hierarchies, qid_lattice, qid_anonymize_into ====

CREATE FUNCTION qidrisk_internal.hierarchy_levels(hierarchy regclass)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols text[];
BEGIN
	IF hierarchy IS NULL THEN
		RAISE EXCEPTION 'hierarchy_levels needs a hierarchy table'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- lock the table before reading its columns
	EXECUTE format('SELECT FROM %s LIMIT 0', hierarchy);
	SELECT array_agg(format('CAST(%I AS pg_catalog.text)', a.attname) ORDER BY a.attnum)
	INTO cols
	FROM pg_attribute a
	WHERE a.attrelid = hierarchy AND a.attnum > 0 AND NOT a.attisdropped;
	IF cols IS NULL THEN
		RAISE EXCEPTION 'hierarchy % has no columns', hierarchy
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN QUERY EXECUTE format('SELECT %s, CAST(ARRAY[%s] AS pg_catalog.text[]) FROM %s',
								cols[1], array_to_string(cols[2:], ', '), hierarchy);
END
$$;
COMMENT ON FUNCTION qidrisk_internal.hierarchy_levels(regclass) IS
'internal: the body of hierarchy_levels';

-- In C (src/hierarchy.c): the table is read once into a keyed dictionary of
-- its nodes (as text), each node climbs to its top once, remembering depths,
-- and each row lists a node's ancestors; recursive SQL took quadratic time in
-- the nodes and cubic in the depth (8,000 leaves under 100 parents 3.8 s, now
-- 3 ms; a chain of depth 3,000 over 5 minutes, now 0.15 s).  A repeated row
-- is one edge (the SQL repeated levels for it).  Errors:
-- NULL arguments 22004; a missing table 42P01; a missing column 42703; a
-- child with two parents or a cycle 22023, naming the hierarchy and a node;
-- the child and parent columns of two non-default collations 42P22; the
-- nodes past qidrisk.max_state_memory 54000.
CREATE FUNCTION qidrisk_internal.hierarchy_levels(hierarchy regclass, child_column text, parent_column text)
RETURNS TABLE (value text, levels text[])
AS 'MODULE_PATHNAME', 'qidrisk_hierarchy_levels'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qidrisk_internal.hierarchy_levels(regclass, text, text) IS
'internal: the body of hierarchy_levels';

CREATE FUNCTION qidrisk_internal.interval_hierarchy(rel regclass, column_name text, spec jsonb)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	typ text;
	widths numeric[];
	nlevels integer;
	cut_sets text[] := '{}';
	exprs text[] := '{}';
	j integer;
	att record;
	bad text;
BEGIN
	IF rel IS NULL OR column_name IS NULL OR spec IS NULL THEN
		RAISE EXCEPTION 'interval_hierarchy needs a table, a column and a specification'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	EXECUTE format('SELECT FROM %s LIMIT 0', rel);
	SELECT a.atttypid, format_type(a.atttypid, NULL) AS name INTO att
	FROM pg_attribute a
	WHERE a.attrelid = rel AND a.attname = column_name AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" does not exist in %', column_name, rel
			USING ERRCODE = 'undefined_column';
	END IF;
	typ := att.name;
	IF jsonb_typeof(spec) <> 'object' OR (spec ? 'widths') = (spec ? 'cuts') THEN
		RAISE EXCEPTION 'interval_hierarchy needs {"widths": [...]} or {"cuts": [[...], ...]}, not %', spec
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT x INTO bad FROM jsonb_object_keys(spec) AS x WHERE x NOT IN ('widths', 'cuts') LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'interval_hierarchy: unknown key "%"', bad
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'An interval hierarchy is {"widths": [...]} or {"cuts": [[...], ...]}.';
	END IF;
	IF spec ? 'widths' THEN
		IF jsonb_typeof(spec->'widths') <> 'array'
		   OR EXISTS (SELECT FROM jsonb_array_elements(spec->'widths') e WHERE jsonb_typeof(e) <> 'number') THEN
			RAISE EXCEPTION 'interval_hierarchy: widths must be an array of numbers'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		SELECT array_agg(e::numeric ORDER BY o) INTO widths
		FROM jsonb_array_elements_text(spec->'widths') WITH ORDINALITY AS x(e, o);
		IF widths IS NULL THEN
			RAISE EXCEPTION 'interval_hierarchy needs at least one width'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		IF att.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'numeric'::regtype,
								'float4'::regtype, 'float8'::regtype) THEN
			RAISE EXCEPTION 'interval_hierarchy: widths need a numeric column, not %', typ
				USING ERRCODE = 'datatype_mismatch',
					  HINT = 'Use {"cuts": [[...], ...]} for other ordered types.';
		END IF;
		FOR j IN 1 .. cardinality(widths) LOOP
			IF widths[j] <= 0 THEN
				RAISE EXCEPTION 'interval_hierarchy: widths must be positive, not %', widths[j]
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			IF j > 1 AND widths[j] % widths[j - 1] <> 0 THEN
				RAISE EXCEPTION 'interval_hierarchy: width % is not a multiple of width %', widths[j], widths[j - 1]
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'Each level must merge whole intervals of the level below it.';
			END IF;
			exprs := array_append(exprs, format($e$CASE WHEN v IS NULL THEN 'NULL' ELSE
				'[' || (floor(v::numeric / %1$s) * %1$s)::text || ',' || (floor(v::numeric / %1$s) * %1$s + %1$s)::text || ')' END$e$,
				widths[j]));
		END LOOP;
	ELSE
		IF jsonb_typeof(spec->'cuts') <> 'array' OR jsonb_array_length(spec->'cuts') = 0
		   OR EXISTS (SELECT FROM jsonb_array_elements(spec->'cuts') e WHERE jsonb_typeof(e) <> 'array') THEN
			RAISE EXCEPTION 'interval_hierarchy: cuts must be a non-empty array of arrays, one per level'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		nlevels := jsonb_array_length(spec->'cuts');
		-- level j cuts at every cut of levels j..n, so each level merges intervals of the one below
		FOR j IN 1 .. nlevels LOOP
			exprs := array_append(exprs, format($e$CASE WHEN v IS NULL THEN 'NULL' ELSE
				qidrisk_internal.quantile_bucket_label(v, ARRAY(
					SELECT DISTINCT CAST(c AS %1$s) FROM jsonb_array_elements($1->'cuts') WITH ORDINALITY AS l(cs, n),
						jsonb_array_elements_text(l.cs) AS c
					WHERE l.n >= %2$s ORDER BY 1)) END$e$, typ, j));
		END LOOP;
	END IF;
	exprs := array_append(exprs, '''*''');
	-- NULL always has a row, so an empty table still has the hierarchy's levels
	RETURN QUERY EXECUTE format('SELECT CAST(v AS pg_catalog.text), ARRAY[%s] FROM (SELECT %I AS v FROM %s UNION SELECT NULL) d',
								array_to_string(exprs, ', '), column_name, rel)
	USING spec;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.interval_hierarchy(regclass, text, jsonb) IS
'internal: the body of interval_hierarchy';

CREATE FUNCTION qid_lattice(rel regclass, qid text[], hierarchies jsonb, k integer,
							max_suppressed double precision DEFAULT 0,
							sensitive text DEFAULT NULL, l integer DEFAULT 1,
							l_model text DEFAULT 'distinct', c double precision DEFAULT NULL,
							t double precision DEFAULT NULL, t_distance text DEFAULT 'equal',
							metric text DEFAULT 'discernibility', evaluate text DEFAULT 'anonymous')
RETURNS TABLE (levels integer[], anonymous boolean, minimal boolean, evaluated boolean,
			   suppressed_rows bigint, classes bigint, height integer, precision_loss double precision,
			   discernibility double precision, entropy_loss double precision,
			   suppressed_share double precision, loss double precision, best boolean, rows bigint)
AS 'MODULE_PATHNAME', 'qidrisk_qid_lattice'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
								double precision, double precision, text, text, text) IS
'every node of the full-domain generalization lattice: anonymous (k, suppression, l-diversity, t-closeness), minimal, utility, best';

CREATE FUNCTION qidrisk_internal.qidrisk_qualified_table(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'qidrisk_qualified_table'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_qualified_table(text) IS
'internal: an existing table''s schema-qualified, quoted name, resolved with the caller''s search_path';

CREATE FUNCTION qidrisk_internal.qidrisk_qualified_new_table(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'qidrisk_qualified_new_table'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_qualified_new_table(text) IS
'internal: the schema-qualified, quoted name CREATE TABLE would give a new table, with the caller''s search_path';

-- The hierarchy rows (value, levels[]) of one column, from a qualified specification
CREATE FUNCTION qidrisk_internal.qidrisk_hierarchy_rows(rel regclass, column_name text, spec jsonb)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF jsonb_typeof(spec) = 'string' THEN
		RETURN QUERY SELECT * FROM qidrisk_internal.hierarchy_levels((spec #>> '{}')::regclass);
	ELSIF spec ? 'table' AND (spec ? 'child' OR spec ? 'parent') THEN
		RETURN QUERY SELECT * FROM qidrisk_internal.hierarchy_levels((spec ->> 'table')::regclass,
																 coalesce(spec ->> 'child', 'child'),
																 coalesce(spec ->> 'parent', 'parent'));
	ELSIF spec ? 'table' THEN
		RETURN QUERY SELECT * FROM qidrisk_internal.hierarchy_levels((spec ->> 'table')::regclass);
	ELSE
		RETURN QUERY SELECT * FROM qidrisk_internal.interval_hierarchy(rel, column_name, spec);
	END IF;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_hierarchy_rows(regclass, text, jsonb) IS
'internal: the rows of one column''s hierarchy from a schema-qualified specification';

CREATE FUNCTION qidrisk_internal.qidrisk_anonymize(rel regclass, qid text[], hierarchies jsonb, release text,
								  k integer, max_suppressed double precision, sensitive text,
								  l integer, l_model text, c double precision, t double precision,
								  t_distance text, metric text, suppression text, local_recoding boolean)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, final_k bigint, final_l bigint, final_t double precision,
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
	FROM qidrisk_internal.qid_lattice(rel, qid, hierarchies, k, max_suppressed, sensitive, l, l_model, c,
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
		CASE WHEN sensitive IS NULL THEN 'NULL::integer' ELSE format('t.%I', sensitive) END,
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
	IF sensitive IS NOT NULL THEN
		-- t is measured against the source's distribution, suppressed rows included
		EXECUTE format('WITH src AS (SELECT qidrisk_internal.qid_key(%s) AS qidrisk_key, %I AS qidrisk_s FROM %s %s
									 UNION ALL SELECT NULL, qidrisk_s FROM qidrisk_anonymize_work WHERE NOT qidrisk_keep), %s
						SELECT min(qidrisk_distinct), max(CASE WHEN %L THEN qidrisk_tord ELSE qidrisk_teq END)
						FROM cls JOIN ord USING (key)',
					   qcols, sensitive, release,
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

-- The body of qid_anonymize_into (the documented name calls it, see the end of
-- this script).  Resolves the caller's table names with the caller's
-- search_path, so it cannot pin its own (like qid_assert); it calls only
-- schema-qualified functions and uses no operator, so that path cannot
-- redirect anything
CREATE FUNCTION qidrisk_internal.qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove', local_recoding boolean DEFAULT false)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, final_k bigint, final_l bigint, final_t double precision,
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
		qidrisk_internal.qidrisk_qualified_new_table(release), k, max_suppressed, sensitive, l, l_model, c,
		t, t_distance, metric, suppression, local_recoding)
$$;
COMMENT ON FUNCTION qidrisk_internal.qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision,
								  text, integer, text, double precision, double precision, text, text, text, boolean) IS
'internal: the body of qid_anonymize_into';

-- ==== check history: owned by the superuser, written only by qid_check ====

-- 0.1.0 let the installing role own qidrisk_check_history, so it could attach
-- triggers, defaults, rules or policies that ran with the rights of whoever
-- recorded a check, and granted INSERT to PUBLIC, so anyone could forge a
-- run.  The table is rebuilt, owned by the superuser that runs this script:
-- the old one may carry anything its owner attached, so only its rows are
-- taken, and only from the seven original columns with their original types,
-- read by a superuser (no row-level security applies, triggers and defaults
-- do not fire on a read, and a rule could only have turned it into a view).
DO $$
DECLARE
	old oid;
	bad text;
	copied bigint;
	skipped bigint;
	path text := pg_catalog.current_setting('search_path');
BEGIN
	PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
	-- found by membership, not by name: its owner could have renamed it
	SELECT c.oid INTO STRICT old
	FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
	AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'qidrisk')
	AND d.deptype = 'e' AND c.relkind <> 'c';
	IF (SELECT c.relkind FROM pg_class c WHERE c.oid = old) <> 'r' THEN
		RAISE EXCEPTION 'qidrisk_check_history is no longer a plain table (relkind %)',
			(SELECT c.relkind FROM pg_class c WHERE c.oid = old)
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'A superuser must drop or restore it before the update.';
	END IF;
	SELECT string_agg(format('%s %s', w.col, coalesce(pg_catalog.format_type(a.atttypid, NULL), 'missing')), ', ')
	INTO bad
	FROM (VALUES ('checked_at', 'timestamp with time zone'::regtype::oid), ('checked_by', 'name'::regtype::oid),
				 ('relation', 'text'::regtype::oid), ('qid', 'text[]'::regtype::oid),
				 ('policy', 'jsonb'::regtype::oid), ('results', 'jsonb'::regtype::oid),
				 ('passed', 'boolean'::regtype::oid)) AS w(col, typ)
	LEFT JOIN pg_attribute a ON a.attrelid = old AND a.attname = w.col::name AND a.attnum > 0 AND NOT a.attisdropped
	WHERE a.atttypid IS DISTINCT FROM w.typ;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'qidrisk_check_history has been altered: %', bad
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Its rows are copied only from columns of their original types.',
				  HINT = 'A superuser must restore the columns (or empty the table) before the update.';
	END IF;
	EXECUTE format('ALTER EXTENSION qidrisk DROP TABLE %s', old::regclass);
	EXECUTE format('ALTER TABLE %s RENAME TO qidrisk_check_history_0_1_0', old::regclass);
	CREATE TABLE qidrisk_internal.check_history (
		checked_at timestamptz NOT NULL,
		checked_by name NOT NULL,
		relation text NOT NULL,
		qid text[] NOT NULL,
		policy jsonb NOT NULL,
		results jsonb NOT NULL,
		passed boolean NOT NULL,
		restored_by name
	);
	-- rows of a table a role other than a superuser owned could have been
	-- written by that role: they name it, as rows a restore inserts do
	EXECUTE format('INSERT INTO qidrisk_internal.check_history
						(checked_at, checked_by, relation, qid, policy, results, passed, restored_by)
					SELECT o.checked_at, o.checked_by, o.relation, o.qid, o.policy, o.results, o.passed,
						   (SELECT r.rolname FROM pg_catalog.pg_roles r
							WHERE r.oid OPERATOR(pg_catalog.=) %s AND NOT r.rolsuper)
					FROM ONLY %s AS o
					WHERE o.checked_at IS NOT NULL AND o.checked_by IS NOT NULL AND o.relation IS NOT NULL
					AND o.qid IS NOT NULL AND o.policy IS NOT NULL AND o.results IS NOT NULL
					AND o.passed IS NOT NULL',
				   (SELECT c.relowner FROM pg_class c WHERE c.oid = old), old::regclass);
	GET DIAGNOSTICS copied = ROW_COUNT;
	EXECUTE format('SELECT count(*) FROM ONLY %s', old::regclass) INTO skipped;
	IF skipped > copied THEN
		RAISE WARNING 'qidrisk_check_history: % rows with NULLs were not kept', skipped - copied;
	END IF;
	-- without CASCADE: a view over the old table stops the update rather than vanish
	EXECUTE format('DROP TABLE %s', old::regclass);
	PERFORM pg_catalog.set_config('search_path', path, true);
END
$$;
COMMENT ON TABLE qidrisk_internal.check_history IS
'runs of qid_check / qid_assert with record_history => true: when, who, which table and QID, policy, per-rule results; restored_by is NULL for a row qid_check recorded and names the role that inserted any other row (a restore)';
SELECT pg_catalog.pg_extension_config_dump('qidrisk_internal.check_history', '');
-- Who reads and writes: the view qid_check_history shows each role its own
-- rows; the extension's owner reads the table (pg_dump) and may insert rows
-- (pg_restore), which then name it in restored_by; no role may update or
-- delete.  No row-level security: pg_dump refuses a table whose policy
-- applies to the dumping role.
REVOKE ALL ON qidrisk_internal.check_history FROM PUBLIC;
DO $$
BEGIN
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT ON qidrisk_internal.check_history TO %s',
							  (SELECT e.extowner::pg_catalog.regrole FROM pg_catalog.pg_extension e
							   WHERE e.extname OPERATOR(pg_catalog.=) 'qidrisk'::pg_catalog.name));
END
$$;
CREATE FUNCTION qidrisk_internal.qidrisk_check_history_provenance()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qidrisk_check_history_provenance'
LANGUAGE C;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_check_history_provenance() IS
'internal: restored_by of a new history row: NULL when qid_check records it, else the role inserting it (unless the row names one)';
CREATE TRIGGER provenance BEFORE INSERT OR UPDATE ON qidrisk_internal.check_history
	FOR EACH ROW EXECUTE FUNCTION qidrisk_internal.qidrisk_check_history_provenance();

-- The evaluation of qid_check (0.1.0's body without the INSERT), run through
-- SPI with the caller's rights by the C function qid_check
CREATE FUNCTION qidrisk_internal.qidrisk_check_evaluate(rel regclass, qid text[], policy jsonb)
RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision,
			   passed boolean, note text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols text;
	profile @extschema@.qid_profile;
	r record;
	qar_columns text[];
	why text;
BEGIN
	PERFORM qidrisk_internal.qidrisk_check_validate(rel, qid, policy);
	-- errors in max_qar_risk's columns or p are the policy's, found before any scan;
	-- only what the data decide (an undefined risk) fails the rule alone
	IF policy ? 'max_qar_risk' THEN
		qar_columns := coalesce(qidrisk_internal.qidrisk_check_names('max_qar_risk', policy -> 'max_qar_risk',
																  'columns'::text), qid);
		PERFORM qidrisk_internal.qidrisk_require_columns(rel, qar_columns);
		SELECT min(c) INTO why FROM unnest(qar_columns) AS c GROUP BY c HAVING count(*) > 1;
		IF why IS NOT NULL THEN
			RAISE EXCEPTION 'column "%" appears twice in policy rule max_qar_risk', why
				USING ERRCODE = 'duplicate_column';
		END IF;
		IF coalesce((policy #>> '{max_qar_risk,p}')::integer, 3) > cardinality(qar_columns) THEN
			RAISE EXCEPTION 'policy rule max_qar_risk.p must not exceed its % columns, not %',
				cardinality(qar_columns), coalesce(policy #>> '{max_qar_risk,p}', '3 (the default)')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Set "p" in the rule, at most the number of columns it measures.';
		END IF;
	END IF;
	PERFORM qidrisk_internal.qidrisk_check_diversity_validate(rel, policy);
	SELECT string_agg(format('%I', c), ', ' ORDER BY o) INTO cols
	FROM unnest(qid) WITH ORDINALITY AS u(c, o);
	-- one scan serves every rule read from the class profile
	IF policy ?| ARRAY['min_k', 'max_singleton_share', 'max_rows_below_k'] THEN
		EXECUTE format('SELECT (p.p).* FROM (SELECT qidrisk_internal.class_profile(%s) AS p FROM %s) AS p', cols, rel)
		INTO profile;
	END IF;
	FOR r IN SELECT q.rule FROM qidrisk_internal.qid_check_rules() AS q WHERE policy ? q.rule LOOP
		rule := r.rule;
		setting := policy -> r.rule;
		note := NULL;
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
				measured := qidrisk_internal.rows_below(profile, (setting ->> 'k')::integer);
				threshold := (setting ->> 'max')::double precision;
				passed := measured <= threshold;
			WHEN 'max_birthday_uniqueness' THEN
				-- the QID's class frequencies are the distribution people are drawn from
				EXECUTE format('SELECT qidrisk_internal.birthday_uniqueness_exact($1, c.id, c.n)
								FROM (SELECT row_number() OVER () AS id, count(*)::float8 AS n
									  FROM %s GROUP BY %s) AS c', rel, cols)
				INTO measured USING (setting ->> 'group_size')::bigint;
				threshold := (setting ->> 'max')::double precision;
				passed := measured IS NULL OR measured <= threshold;
			WHEN 'min_kmap' THEN
				-- an empty release has no class to find in the population
				measured := qidrisk_internal.kmap_value(rel, qidrisk_internal.qidrisk_check_population(rel, setting), qid,
												   setting ->> 'weight',
												   qidrisk_internal.qidrisk_check_names(r.rule, setting, 'population_qid'::text));
				threshold := (setting ->> 'k')::double precision;
				passed := measured IS NULL OR measured >= threshold;
			WHEN 'max_qar_risk' THEN
				threshold := (setting ->> 'max')::double precision;
				BEGIN
					SELECT q.risk INTO measured
					FROM qidrisk_internal.qar_risk(rel,
											  coalesce(qidrisk_internal.qidrisk_check_names(r.rule, setting, 'columns'::text), qid),
											  coalesce((setting ->> 'p')::integer, 3),
											  coalesce((setting ->> 'alpha')::double precision, 0.01::double precision),
											  coalesce((setting ->> 'pi_u')::double precision, 0.05::double precision)) AS q;
					passed := measured <= threshold;
				EXCEPTION WHEN invalid_parameter_value THEN
					-- the settings are valid, so the data leave the risk undefined: this rule
					-- fails, the others are still measured
					GET STACKED DIAGNOSTICS note = MESSAGE_TEXT, why = PG_EXCEPTION_DETAIL;
					note := note || coalesce(' (' || rtrim(why, '.') || ')', '');
					measured := NULL;
					passed := false;
				END;
			WHEN 'min_l', 'max_t' THEN
				SELECT d.measured, d.threshold, d.passed INTO measured, threshold, passed
				FROM qidrisk_internal.qidrisk_check_diversity(rel, qid, r.rule, setting) AS d;
		END CASE;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_check_evaluate(regclass, text[], jsonb) IS
'internal: the rules of a qid_check policy evaluated with the caller''s rights, one row per rule; records nothing';

-- The result columns stay those of 0.1.0 (users' views depend on them): a rule
-- the data leave unmeasurable shows measured NULL and passed false, and its
-- reason comes as a WARNING, in the history row and in qid_assert's detail
CREATE OR REPLACE FUNCTION qid_check(rel regclass, qid text[], policy jsonb, record_history boolean DEFAULT false)
RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision,
			   passed boolean)
AS 'MODULE_PATHNAME', 'qidrisk_qid_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qid_check(regclass, text[], jsonb, boolean) IS
'check a table or view against a publication policy: one row per rule (measured, threshold, passed); record_history => true also appends the run to qidrisk_check_history';

-- qid_check with the note of each rule as a column, for qid_assert
CREATE FUNCTION qidrisk_internal.qidrisk_check_run(rel regclass, qid text[], policy jsonb, record_history boolean)
RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision,
			   passed boolean, note text)
AS 'MODULE_PATHNAME', 'qidrisk_qid_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_check_run(regclass, text[], jsonb, boolean) IS
'internal: qid_check with a note column saying why a rule could not be measured';

-- ==== qid_assert: a hint where it cannot commit, no internal context, every setting in the detail ====

-- The QR001 message and detail of a check, no row when every rule passes
CREATE FUNCTION qidrisk_internal.qidrisk_check_report(rel regclass, qid text[], policy jsonb, record_history boolean)
RETURNS TABLE (message text, detail text)
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT format('qidrisk policy check failed for %s: %s', rel, string_agg(c.rule, ', ' ORDER BY c.o)),
		   string_agg(CASE WHEN c.note IS NOT NULL THEN format('%s: %s.', c.rule, c.note)
						   ELSE format('%s%s: measured %s, threshold %s.', c.rule,
									   -- the settings besides the threshold, such as the k of max_rows_below_k
									   (SELECT ' (' || string_agg(format('%s = %s', e.key, e.value), ', ' ORDER BY e.key) || ')'
										FROM jsonb_each(CASE WHEN jsonb_typeof(c.setting) <> 'object' THEN '{}'
															 WHEN c.rule = 'min_kmap' THEN c.setting - 'k'
															 WHEN c.rule = 'min_l' THEN c.setting - 'l'
															 ELSE c.setting - 'max' END) AS e),
									   coalesce(c.measured::text, 'nothing'), c.threshold) END,
					  ' ' ORDER BY c.o)
	FROM qidrisk_internal.qidrisk_check_run(rel, qid, policy, record_history)
		 WITH ORDINALITY AS c(rule, setting, measured, threshold, passed, note, o)
	WHERE NOT c.passed
	HAVING count(*) > 0
$$;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_check_report(regclass, text[], jsonb, boolean) IS
'internal: the QR001 message and detail of a qid_check run, no row when every rule passes';

DROP PROCEDURE qid_assert(regclass, text[], jsonb, boolean);

-- In C: it sees whether its CALL may commit, and raises with no context of its own
CREATE PROCEDURE qid_assert(rel regclass, qid text[], policy jsonb, record_history boolean DEFAULT false)
AS 'MODULE_PATHNAME', 'qidrisk_qid_assert'
LANGUAGE C;
COMMENT ON PROCEDURE qid_assert(regclass, text[], jsonb, boolean) IS
'raise SQLSTATE QR001 naming the failed rules when a table breaks its publication policy; record_history => true records the run and commits it first (needs a CALL outside a transaction block)';

-- ==== hierarchy_generalize: linear in the distinct values, clear errors ====

-- 0.1.0 matched each value to its top level with IS NOT DISTINCT FROM, which
-- no hash or merge join can do (quadratic: 40,000 values took 102 s), and
-- looked for cycles by carrying a path per value.  Now it is C
-- (src/hierarchy.c): the column's values and the hierarchy's nodes, as text,
-- become one dictionary; each value climbs to its top once (a node met again
-- on the climb is a cycle, named in the error), and the levels are counted
-- one step at a time until one meets the limits.  1,000,000 distinct values
-- take 2.1 s where the recursive SQL of the first 0.2.0 drafts took 26 s (it
-- materialized every value's chain, and hashed and sorted them in batches at
-- default work_mem).  The results are the same: a NULL value generalizes to
-- NULL at every level, rows come ordered by generalization, then value.  A
-- table or hierarchy that does not exist, or lacks a named column, is
-- reported as such before any query; both are read through the relation
-- reader (locked, privileges per column, as the caller).
CREATE OR REPLACE FUNCTION hierarchy_generalize(rel regclass, column_name text, hierarchy regclass,
									 max_values bigint DEFAULT NULL, min_rows bigint DEFAULT NULL,
									 child_column text DEFAULT 'child',
									 parent_column text DEFAULT 'parent')
RETURNS TABLE (value text, generalized text, level integer, rows bigint)
AS 'MODULE_PATHNAME', 'qidrisk_hierarchy_generalize'
LANGUAGE C STABLE;

-- ==== weighted_risk_summary: sums in a fixed order ====

-- weighted_risk returns its classes in hash-table order, which a per-query
-- placement key makes differ from call to call; floating-point sums taken in
-- that order differed in their last digit, so they are taken in class order
-- (the body; the documented name calls it, see the end of this script).
CREATE FUNCTION qidrisk_internal.weighted_risk_summary(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
RETURNS TABLE (sample_rows bigint, classes bigint, sample_uniques bigint,
			   estimated_population double precision, expected_reidentifications double precision,
			   reidentification_rate double precision, max_individual_risk double precision)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(sum(w.sample_rows), 0)::bigint,
		   count(*),
		   count(*) FILTER (WHERE w.sample_rows = 1),
		   coalesce(sum(w.estimated_population ORDER BY w.class), 0),
		   coalesce(sum(w.sample_rows * w.individual_risk ORDER BY w.class), 0),
		   sum(w.sample_rows * w.individual_risk ORDER BY w.class) / sum(w.sample_rows),
		   max(w.individual_risk)
	FROM qidrisk_internal.weighted_risk(rel, qid, weight, method) AS w
$$;

-- ==== qid_generalize: a target k, a cost, the k reached ====

-- 0.1.0 ranked the what-ifs by fewest singletons, so a what-if that changed
-- every row could be "best"; now the best meets the caller's target (k, with
-- at most max_suppressed of the rows below it) at the least cost.  The OUT
-- columns change, so the function is dropped and created again, its body here
-- (the documented name calls it, see the end of this script).
DROP FUNCTION qid_generalize(regclass, text[], jsonb, boolean);
CREATE FUNCTION qidrisk_internal.qid_generalize(rel regclass, qid text[], generalizations jsonb,
							   drop_incomplete boolean DEFAULT false, k integer DEFAULT 2,
							   max_suppressed double precision DEFAULT 0,
							   cost text DEFAULT 'rows_modified')
RETURNS TABLE (name text, local boolean, singletons bigint, singleton_share double precision,
			   rows_modified bigint, rows_removed bigint, classes bigint, rows bigint,
			   is_best boolean, k_anonymity bigint, rows_below_k bigint, values_changed bigint,
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
	IF rel IS NULL OR qid IS NULL OR generalizations IS NULL OR drop_incomplete IS NULL
	   OR k IS NULL OR max_suppressed IS NULL OR cost IS NULL THEN
		RAISE EXCEPTION 'qid_generalize needs a table, QID columns, generalizations, k, max_suppressed and a cost'
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
	items := CASE jsonb_typeof(generalizations) WHEN 'array' THEN generalizations
				  ELSE jsonb_build_array(generalizations) END;
	IF jsonb_array_length(items) = 0 THEN
		RAISE EXCEPTION 'qid_generalize needs at least one generalization'
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

-- ==== l-diversity and t-closeness aggregates over a QID ====

-- They count (class, sensitive value) pairs in the frequency state of the
-- k_anonymity family, so partial states combine, serialize and spill alike.
CREATE FUNCTION qidrisk_internal.qidrisk_diversity_transfn(internal, anyelement, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION qidrisk_internal.qidrisk_l_diversity_final(internal)
RETURNS bigint
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_internal.qidrisk_entropy_l_diversity_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION qidrisk_internal.qidrisk_t_closeness_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE l_diversity(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_l_diversity_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE entropy_l_diversity(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_entropy_l_diversity_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);

CREATE AGGREGATE t_closeness(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_t_closeness_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);

-- t_closeness_ordered keys a pair by an order-preserving encoding of the
-- sensitive value (numeric, date or timestamp) instead of its hash.
CREATE FUNCTION qidrisk_internal.qidrisk_ordered_diversity_transfn(internal, anyelement, VARIADIC "any")
RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION qidrisk_internal.qidrisk_t_closeness_ordered_final(internal)
RETURNS double precision
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE t_closeness_ordered(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_ordered_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_t_closeness_ordered_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);

COMMENT ON AGGREGATE l_diversity(anyelement, VARIADIC "any") IS
'distinct l-diversity: the fewest distinct sensitive values in a class of the QID (NULL is a value; NULL for no rows)';
COMMENT ON AGGREGATE entropy_l_diversity(anyelement, VARIADIC "any") IS
'entropy l-diversity: exp of the least entropy (natural log) of the sensitive values in a class of the QID';
COMMENT ON AGGREGATE t_closeness(anyelement, VARIADIC "any") IS
't-closeness with equal distance: the largest half L1 distance between a class''s sensitive distribution and the table''s';
COMMENT ON AGGREGATE t_closeness_ordered(anyelement, VARIADIC "any") IS
't-closeness with ordered distance: the largest Earth Mover''s Distance over the ranks of a numeric, date or timestamp sensitive value (NULL ranks last) between a class''s distribution and the table''s';

-- what qid_check's own SQL calls (see the trust boundary above)
CREATE AGGREGATE qidrisk_internal.l_diversity(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_l_diversity_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.entropy_l_diversity(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_entropy_l_diversity_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.t_closeness(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_t_closeness_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);
CREATE AGGREGATE qidrisk_internal.t_closeness_ordered(sensitive anyelement, VARIADIC qid "any") (
	SFUNC = qidrisk_internal.qidrisk_ordered_diversity_transfn,
	STYPE = internal,
	FINALFUNC = qidrisk_internal.qidrisk_t_closeness_ordered_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_freq_combine,
	SERIALFUNC = qidrisk_internal.qidrisk_freq_serialize,
	DESERIALFUNC = qidrisk_internal.qidrisk_freq_deserialize,
	PARALLEL = SAFE
);

-- ==== qid_check: min_l and max_t ====

CREATE FUNCTION qidrisk_internal.qid_check_rules()
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
		 'QaR dataset risk T(p, alpha) over the p-column subsets of the columns (see qar_risk) must be at most max'),
		(7, 'min_l', '{"sensitive": column name, "l": whole number >= 1, "model": "distinct" or "entropy" (optional, default distinct)}',
		 'l-diversity of the sensitive column (fewest distinct values of a class, see l_diversity; or exp of the least class entropy, see entropy_l_diversity) must be at least l'),
		(8, 'max_t', '{"sensitive": column name, "max": number in [0, 1], "distance": "equal" or "ordered" (optional, default equal)}',
		 't-closeness of the sensitive column (largest EMD between a class and the table, equal distance, see t_closeness, or ordered distance over the ranks of a numeric, date or timestamp column, see t_closeness_ordered) must be at most max')
	) AS r(o, rule, setting, description)
	ORDER BY r.o
$$;

-- Reject a bad min_l or max_t setting before any scan (qidrisk_check_validate
-- has already checked that it is an object)
CREATE FUNCTION qidrisk_internal.qidrisk_check_diversity_validate(rel regclass, policy jsonb)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rule text;
	s jsonb;
BEGIN
	FOREACH rule IN ARRAY ARRAY['min_l', 'max_t'] LOOP
		CONTINUE WHEN NOT policy ? rule;
		s := policy -> rule;
		IF EXISTS (SELECT 1 FROM jsonb_object_keys(s) AS k
				   WHERE k <> ALL (CASE rule WHEN 'min_l' THEN ARRAY['sensitive', 'l', 'model']
										ELSE ARRAY['sensitive', 'max', 'distance'] END)) THEN
			RAISE EXCEPTION 'policy rule % has an unknown setting in %', rule, s
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'SELECT * FROM qid_check_rules() lists every rule and its setting.';
		END IF;
		IF jsonb_typeof(s -> 'sensitive') IS DISTINCT FROM 'string' THEN
			RAISE EXCEPTION 'policy rule %.sensitive must be a column name, not %', rule,
				coalesce((s -> 'sensitive')::text, 'missing')
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		PERFORM qidrisk_internal.qidrisk_require_columns(rel, ARRAY[s ->> 'sensitive']);
		IF rule = 'min_l' THEN
			PERFORM qidrisk_internal.qidrisk_check_number(rule, s, 'l', 1, 'Infinity', true);
			IF s ? 'model' AND (s -> 'model') NOT IN ('"distinct"', '"entropy"') THEN
				RAISE EXCEPTION 'policy rule min_l.model must be "distinct" or "entropy", not %', s -> 'model'
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
		ELSE
			PERFORM qidrisk_internal.qidrisk_check_number(rule, s, 'max', 0, 1, false);
			IF s ? 'distance' AND (s -> 'distance') NOT IN ('"equal"', '"ordered"') THEN
				RAISE EXCEPTION 'policy rule max_t.distance must be "equal" or "ordered", not %', s -> 'distance'
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_check_diversity_validate(regclass, jsonb) IS
'internal: validate the min_l and max_t settings of a qid_check policy';

-- Measure a min_l or max_t rule: one scan with l_diversity, entropy_l_diversity,
-- t_closeness or t_closeness_ordered; a table with no rows passes
CREATE FUNCTION qidrisk_internal.qidrisk_check_diversity(rel regclass, qid text[], rule text, setting jsonb,
										OUT measured double precision, OUT threshold double precision,
										OUT passed boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	agg text := CASE WHEN rule = 'max_t' AND setting ->> 'distance' = 'ordered' THEN 't_closeness_ordered'
					 WHEN rule = 'max_t' THEN 't_closeness'
					 WHEN setting ->> 'model' = 'entropy' THEN 'entropy_l_diversity'
					 ELSE 'l_diversity' END;
BEGIN
	EXECUTE format('SELECT qidrisk_internal.%s(%I, %s)::pg_catalog.float8 FROM %s', agg, setting ->> 'sensitive',
				   (SELECT string_agg(format('%I', c), ', ' ORDER BY o) FROM unnest(qid) WITH ORDINALITY AS u(c, o)),
				   rel)
	INTO measured;
	IF rule = 'max_t' THEN
		threshold := (setting ->> 'max')::double precision;
		passed := measured IS NULL OR measured <= threshold;
	ELSE
		threshold := (setting ->> 'l')::double precision;
		-- entropy l: the tolerance qid_lattice allows (exp(H) is rounded)
		passed := measured IS NULL OR measured >= threshold * (1 - 1e-9);
	END IF;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_check_diversity(regclass, text[], text, jsonb) IS
'internal: measure the min_l or max_t rule of qid_check';

-- ==== k-map over distributed tables: the release's key filter ====

-- kmap_count reads a population that Citus distributes over shards grouped by
-- qid_key on the shards; this filter (the release's fingerprints as a small
-- bitmap, sent once with each shard query) lets the shards skip the rows that
-- cannot match a release class.
CREATE FUNCTION qidrisk_internal.qidrisk_kmap_key_filter(filter bytea, key uuid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qidrisk_kmap_key_filter'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_kmap_key_filter(bytea, uuid) IS
'internal to kmap_count: whether key may be one of the release fingerprints the filter holds (false: certainly not)';

-- ==== class_size_profile: a profile from class sizes, split over Citus shards ====

-- The frequency aggregates keep an internal state, which Citus does not split
-- over shards (it gathers the rows instead) and which a distributed table
-- keyed by qid_key does not need: there each class lies on one shard, so the
-- shards can count classes themselves.  class_size_profile takes those class
-- sizes and keeps a bigint[] of (size, classes) pairs, sizes ascending, which
-- Citus ships from each shard and combines on the coordinator, and which
-- parallel query passes between processes as it is.
CREATE FUNCTION qidrisk_internal.qidrisk_class_size_profile_transfn(state bigint[], class_size bigint)
RETURNS bigint[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_class_size_profile_transfn(bigint[], bigint) IS
'internal to class_size_profile: counts one class of the given size into the (size, classes) pairs';

CREATE FUNCTION qidrisk_internal.qidrisk_class_size_profile_combine(state bigint[], other bigint[])
RETURNS bigint[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_class_size_profile_combine(bigint[], bigint[]) IS
'internal to class_size_profile: merges two states'' (size, classes) pairs';

CREATE FUNCTION qidrisk_internal.qidrisk_class_size_profile_final(state bigint[])
RETURNS qid_profile
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_class_size_profile_final(bigint[]) IS
'internal to class_size_profile: the qid_profile of the counted classes';

CREATE AGGREGATE class_size_profile(class_size bigint) (
	SFUNC = qidrisk_internal.qidrisk_class_size_profile_transfn,
	STYPE = bigint[],
	INITCOND = '{}',
	FINALFUNC = qidrisk_internal.qidrisk_class_size_profile_final,
	COMBINEFUNC = qidrisk_internal.qidrisk_class_size_profile_combine,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE class_size_profile(bigint) IS
'the class_profile of classes given by their sizes (one row per class, such as count(*) of a GROUP BY); NULL sizes are ignored';

-- ==== column_distinct_counts: a clear error for estimates of a Citus table ====

CREATE FUNCTION qidrisk_internal.column_distinct_counts(rel regclass, columns text[], estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	counts double precision[];
	citus_table boolean := false;
BEGIN
	IF rel IS NULL OR columns IS NULL OR cardinality(columns) = 0 THEN
		RAISE EXCEPTION 'column_distinct_counts needs a table and at least one column'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, columns);
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
COMMENT ON FUNCTION column_distinct_counts(regclass, text[], boolean) IS
'distinct values of each column (NULL counted as a value), exact or estimated from pg_stats';

-- ==== state_events: which paths this process's frequency states took, for tests ====

-- Counts since the process started; a test compares them before and after one
-- query to show that it partitioned, lent, received or decoded a state (spills
-- and parallel workers show in EXPLAIN (ANALYZE, BUFFERS)).  The leader's own
-- counts only: it must not run in a worker.
CREATE FUNCTION qidrisk_internal.state_events(OUT partitioned bigint, OUT lent bigint,
											  OUT files_received bigint, OUT partitions_decoded bigint,
											  OUT partitions_to_runs bigint)
AS 'MODULE_PATHNAME', 'qidrisk_state_events'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qidrisk_internal.state_events() IS
'for tests: how many frequency states this process moved into partitions, how many partial states it lent and took back, read from workers'' hand-over files, and how many received partitions it decoded into arrays or wrote straight to runs, since it started';

-- ==== The documented names of functions whose bodies moved to qidrisk_internal ====
-- (those whose calls can be mistaken are C, at the end of this script)

-- Owned by the superuser running this script, so it reads the table; the
-- WHERE clause, behind a security barrier, is what a role may see of it
CREATE VIEW qid_check_history WITH (security_barrier = true) AS
	SELECT h.checked_at, h.checked_by, h.relation, h.qid, h.policy, h.results, h.passed, h.restored_by
	FROM qidrisk_internal.check_history AS h
	WHERE h.checked_by OPERATOR(pg_catalog.=) CURRENT_USER
		  OR pg_catalog.pg_has_role('pg_read_all_data'::pg_catalog.name, 'MEMBER'::pg_catalog.text)
		  OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
					 WHERE r.rolname OPERATOR(pg_catalog.=) h.checked_by
					 AND pg_catalog.pg_has_role(r.oid, 'MEMBER'::pg_catalog.text))
		  OR pg_catalog.pg_has_role((SELECT e.extowner FROM pg_catalog.pg_extension e
									 WHERE e.extname OPERATOR(pg_catalog.=) 'qidrisk'::pg_catalog.name),
									'MEMBER'::pg_catalog.text);
COMMENT ON VIEW qid_check_history IS
'runs of qid_check / qid_assert with record_history => true that the caller may see: its own runs and those of roles it is a member of; members of pg_read_all_data and of the extension''s owner see all; restored_by names the role that inserted a row qid_check did not record (a restore)';
GRANT SELECT ON qid_check_history TO PUBLIC;

CREATE OR REPLACE FUNCTION qid_check_rules()
RETURNS TABLE (rule text, setting text, description text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT * FROM qidrisk_internal.qid_check_rules();
END;

-- 0.1.0 functions whose bodies called what moved: the same bodies, calling
-- qidrisk_internal, now in qidrisk_internal (the documented names call them,
-- see the end of this script)
CREATE FUNCTION qidrisk_internal.distinct_product(rel regclass, columns text[], estimated boolean DEFAULT false)
RETURNS double precision
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT exp(sum(ln(greatest(d.distinct_values, 1))))
	FROM qidrisk_internal.column_distinct_counts(rel, columns, estimated) AS d
$$;

CREATE FUNCTION qidrisk_internal.column_budgets(rel regclass, columns text[], population double precision,
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
			  FROM qidrisk_internal.column_distinct_counts(rel, columns, estimated) AS x) AS c
	), b AS (
		SELECT d.names, d.counts,
			   qidrisk_internal.bucket_budget(qidrisk_internal.anonymity_partitions(population, k, beta),
										 d.counts, weights) AS budgets
		FROM d
	)
	SELECT b.names[i], b.counts[i], b.budgets[i], b.budgets[i] < b.counts[i]
	FROM b, generate_subscripts(b.names, 1) AS i
	ORDER BY i
$$;

CREATE FUNCTION qidrisk_internal.quantile_bucket_value(value anyelement, cuts anyarray, representatives anycompatiblearray)
RETURNS anycompatible
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT representatives[CASE WHEN coalesce(cardinality(cuts), 0) = coalesce(cardinality(representatives), 0)
								  THEN qidrisk_internal.quantile_bucket(value, cuts)
								  ELSE qidrisk_internal.qidrisk_representatives_mismatch(cardinality(cuts),
																					cardinality(representatives)) END] $$;

CREATE FUNCTION qidrisk_internal.kmap_rows_below(release regclass, population regclass, qid text[],
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
			FROM qidrisk_internal.kmap_count(release, population, qid, population_weight,
										population_qid) AS c);
END
$$;

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
		WHERE policy ? r.rule AND r.setting LIKE '{%'
	LOOP
		IF jsonb_typeof(s) <> 'object' THEN
			RAISE EXCEPTION 'policy rule % must be an object %, not %', bad,
				(SELECT r.setting FROM qidrisk_internal.qid_check_rules() AS r WHERE r.rule = bad), s
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

CREATE FUNCTION qidrisk_internal.qid_generalize_into(rel regclass, qid text[], generalization jsonb,
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
	query := qidrisk_internal.qidrisk_generalization_query(rel, qid, generalization, drop_incomplete, true,
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

-- ==== Documented names of SQL and PL/pgSQL bodies: a user's mistake shows the user's call ====

-- An error raised inside a SQL or PL/pgSQL function carries a context line
-- per frame, so a typo in a call of qid_generalize showed the internal
-- functions and statements it went through (and pg_cron stored them).  The
-- documented name of each such function is now C (src/boundary.c): it calls
-- the body of the same name and arguments in qidrisk_internal, and an error
-- of the caller's input (SQLSTATE classes 22, 42, 3F; 0A000, 55000) comes out
-- with the caller's own context lines only.  Other errors keep theirs.
CREATE OR REPLACE FUNCTION rows_below(profile qid_profile, k integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quantile_bucket_value(value anyelement, cuts anyarray, representatives anycompatiblearray)
RETURNS anycompatible
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION column_distinct_counts(rel regclass, columns text[], estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;

CREATE OR REPLACE FUNCTION distinct_product(rel regclass, columns text[], estimated boolean DEFAULT false)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;

CREATE OR REPLACE FUNCTION column_budgets(rel regclass, columns text[], population double precision,
										  k double precision, beta double precision DEFAULT 0.1,
										  weights double precision[] DEFAULT NULL,
										  estimated boolean DEFAULT false)
RETURNS TABLE (column_name text, distinct_values double precision, budget double precision,
			   generalize boolean)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;

CREATE OR REPLACE FUNCTION kmap_value(release regclass, population regclass, qid text[],
									  population_weight text DEFAULT NULL,
									  population_qid text[] DEFAULT NULL)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE OR REPLACE FUNCTION kmap_rows_below(release regclass, population regclass, qid text[],
										   k double precision,
										   population_weight text DEFAULT NULL,
										   population_qid text[] DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE OR REPLACE FUNCTION weighted_risk(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
RETURNS TABLE (class jsonb, sample_rows bigint, estimated_population double precision,
			   individual_risk double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE OR REPLACE FUNCTION weighted_risk_summary(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
RETURNS TABLE (sample_rows bigint, classes bigint, sample_uniques bigint,
			   estimated_population double precision, expected_reidentifications double precision,
			   reidentification_rate double precision, max_individual_risk double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION hierarchy_levels(hierarchy regclass)
RETURNS TABLE (value text, levels text[])
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION hierarchy_levels(regclass) IS
'the rows of a hierarchy table in ARX''s layout (value, level 1, ..., level n) as value and levels[]';

CREATE FUNCTION hierarchy_levels(hierarchy regclass, child_column text, parent_column text)
RETURNS TABLE (value text, levels text[])
AS 'MODULE_PATHNAME', 'qidrisk_hierarchy_levels'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION hierarchy_levels(regclass, text, text) IS
'a child -> parent hierarchy table as value and levels[] (each node''s ancestors; a top stays itself)';

CREATE FUNCTION interval_hierarchy(rel regclass, column_name text, spec jsonb)
RETURNS TABLE (value text, levels text[])
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION interval_hierarchy(regclass, text, jsonb) IS
'a nested interval hierarchy of a column''s values: {"widths": [w1, w2, ...]} (each a multiple of the last) or {"cuts": [[...], ...]} (level j cuts at the cuts of levels j..n), then *';

CREATE FUNCTION qid_generalize(rel regclass, qid text[], generalizations jsonb,
							   drop_incomplete boolean DEFAULT false, k integer DEFAULT 2,
							   max_suppressed double precision DEFAULT 0,
							   cost text DEFAULT 'rows_modified')
RETURNS TABLE (name text, local boolean, singletons bigint, singleton_share double precision,
			   rows_modified bigint, rows_removed bigint, classes bigint, rows bigint,
			   is_best boolean, k_anonymity bigint, rows_below_k bigint, values_changed bigint,
			   meets_target boolean)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE;
COMMENT ON FUNCTION qid_generalize(regclass, text[], jsonb, boolean, integer, double precision, text) IS
'what-if generalizations of a QID (mapping table, constant, ranges of at least k rows, their means; global or local to the singletons): singletons, k reached, rows below the target k, rows modified and values changed of each; best = meets the target k (at most max_suppressed of the rows below it) at the least cost; modifies nothing';

CREATE OR REPLACE FUNCTION qid_generalize_into(rel regclass, qid text[], generalization jsonb,
											   target_table text, drop_incomplete boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C VOLATILE;

-- the body resolves the caller's table names with the caller's search_path,
-- which this C function leaves as it is
CREATE FUNCTION qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove', local_recoding boolean DEFAULT false)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, final_k bigint, final_l bigint, final_t double precision,
			   rows_recoded bigint, recoding text)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision, text, integer,
								  text, double precision, double precision, text, text, text, boolean) IS
'writes a new table: the source generalized to the best anonymous node of qid_lattice, failing rows suppressed or locally recoded, re-checked';
