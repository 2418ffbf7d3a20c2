-- qidrisk 1.0.0 -> 1.1.0: population uniqueness and El Emam's re-identification risk

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "CREATE EXTENSION qidrisk" or "ALTER EXTENSION qidrisk UPDATE" to load this file. \quit

-- ==== Risk without a population table: population uniqueness ====

-- population_uniqueness estimates how many population records are unique on
-- the QID from a sample's frequency of frequencies and its sampling fraction
-- (Pitman, Zayatz, the slide negative binomial, Dankar et al.'s rule;
-- popunique.c).  The table form builds the profile with class_profile; the
-- profile form takes one from class_profile or class_size_profile, which a
-- Citus table's shards can count.
CREATE FUNCTION qidrisk_internal.qidrisk_population_uniqueness(profile qid_profile,
		sampling_fraction double precision, model text)
RETURNS TABLE (model text, population_uniques double precision, population_share double precision,
			   available boolean, note text)
AS 'MODULE_PATHNAME', 'qidrisk_population_uniqueness'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_population_uniqueness(qid_profile, double precision, text) IS
'internal to population_uniqueness: the estimates of a profile; checks sampling_fraction and model before the profile';

CREATE FUNCTION qidrisk_internal.population_uniqueness(rel regclass, qid text[],
		fraction double precision, model_name text)
RETURNS TABLE (model text, population_uniques double precision, population_share double precision,
			   available boolean, note text)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols text;
	twice text;
	profile @extschema@.qid_profile;
BEGIN
	IF rel IS NULL OR qid IS NULL THEN
		RAISE EXCEPTION 'population_uniqueness: % must not be NULL', CASE WHEN rel IS NULL THEN 'rel' ELSE 'qid' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF cardinality(qid) = 0 OR array_position(qid, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'population_uniqueness needs at least one QID column and no NULL column name'
			USING ERRCODE = CASE WHEN cardinality(qid) = 0 THEN 'invalid_parameter_value' ELSE 'null_value_not_allowed' END;
	END IF;
	SELECT min(c) INTO twice FROM unnest(qid) AS c GROUP BY c HAVING count(*) > 1;
	IF twice IS NOT NULL THEN
		RAISE EXCEPTION 'population_uniqueness: column "%" appears twice in qid', twice
			USING ERRCODE = 'duplicate_column';
	END IF;
	-- the sampling fraction and the model are checked before the scan
	PERFORM 1 FROM qidrisk_internal.qidrisk_population_uniqueness(
		ROW(0, 0, 0, NULL, NULL, NULL, '{}', '{}')::@extschema@.qid_profile, fraction, model_name);
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, qid);
	SELECT string_agg(format('%I', c), ', ' ORDER BY o) INTO cols
	FROM unnest(qid) WITH ORDINALITY AS u(c, o);
	EXECUTE format('SELECT (p.p).* FROM (SELECT qidrisk_internal.class_profile(%s) AS p FROM %s) AS p', cols, rel)
	INTO profile;
	RETURN QUERY SELECT e.* FROM qidrisk_internal.qidrisk_population_uniqueness(profile, fraction, model_name) AS e;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.population_uniqueness(regclass, text[], double precision, text) IS
'internal to population_uniqueness: the class profile of rel''s QID, then its estimates';

CREATE FUNCTION population_uniqueness(rel regclass, qid text[], sampling_fraction double precision,
									  model text DEFAULT 'all')
RETURNS TABLE (model text, population_uniques double precision, population_share double precision,
			   available boolean, note text)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION population_uniqueness(regclass, text[], double precision, text) IS
'population uniques estimated from a sample table and its sampling fraction: pitman, zayatz, snb, dankar or all';

CREATE FUNCTION population_uniqueness(profile qid_profile, sampling_fraction double precision,
									  model text DEFAULT 'all')
RETURNS TABLE (model text, population_uniques double precision, population_share double precision,
			   available boolean, note text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT * FROM qidrisk_internal.qidrisk_population_uniqueness(profile, sampling_fraction, model);
END;
COMMENT ON FUNCTION population_uniqueness(qid_profile, double precision, text) IS
'population uniques estimated from a sample''s class profile and its sampling fraction: pitman, zayatz, snb, dankar or all';

-- ==== Risk without a population table: prosecutor, journalist, marketer ====

-- El Emam's prosecutor, journalist and marketer risk of a sample, from its
-- classes and (journalist, marketer) their sizes in a population table,
-- counted by kmap_count; without a population the sample is its own
CREATE FUNCTION qidrisk_internal.reidentification_risk(rel regclass, qid text[],
		risk_threshold double precision, pop regclass, pop_weight text, pop_qid text[])
RETURNS TABLE (rows bigint, classes bigint,
			   prosecutor_highest double precision, prosecutor_average double precision,
			   prosecutor_lowest double precision, prosecutor_rows_above bigint,
			   prosecutor_share_above double precision,
			   journalist_highest double precision, journalist_average double precision,
			   journalist_lowest double precision, journalist_rows_above bigint,
			   journalist_share_above double precision, marketer double precision)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF rel IS NULL OR qid IS NULL OR risk_threshold IS NULL THEN
		RAISE EXCEPTION 'reidentification_risk: % must not be NULL',
			CASE WHEN rel IS NULL THEN 'rel' WHEN qid IS NULL THEN 'qid' ELSE 'threshold' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF risk_threshold = 'NaN'::float8 OR NOT (risk_threshold > 0 AND risk_threshold <= 1) THEN
		RAISE EXCEPTION 'reidentification_risk: threshold must be in (0, 1], not %', risk_threshold
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The threshold is a probability of re-identification: a record whose risk exceeds it is at risk.';
	END IF;
	IF pop IS NULL AND (pop_weight IS NOT NULL OR pop_qid IS NOT NULL) THEN
		RAISE EXCEPTION 'reidentification_risk: population_weight_column and population_qid need a population'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- a class matching fewer population rows than it has sample rows counts
	-- its sample rows (the population is then not a superset of the sample)
	RETURN QUERY
	WITH c AS (
		SELECT k.class, k.release_rows AS f,
			   greatest(k.population_rows, k.release_rows::float8) AS big_f
		FROM qidrisk_internal.kmap_count(rel, coalesce(pop, rel), qid, pop_weight, pop_qid) AS k
	)
	SELECT coalesce(sum(c.f), 0)::bigint, count(*),
		   1 / min(c.f)::float8, count(*) / sum(c.f)::float8, 1 / max(c.f)::float8,
		   coalesce(sum(c.f) FILTER (WHERE 1 / c.f::float8 > risk_threshold), 0)::bigint,
		   coalesce(sum(c.f) FILTER (WHERE 1 / c.f::float8 > risk_threshold), 0) / sum(c.f)::float8,
		   1 / min(c.big_f),
		   greatest(count(*) / sum(c.big_f ORDER BY c.class),
					sum(c.f / c.big_f ORDER BY c.class) / sum(c.f)::float8),
		   1 / max(c.big_f),
		   coalesce(sum(c.f) FILTER (WHERE 1 / c.big_f > risk_threshold), 0)::bigint,
		   coalesce(sum(c.f) FILTER (WHERE 1 / c.big_f > risk_threshold), 0) / sum(c.f)::float8,
		   sum(c.f / c.big_f ORDER BY c.class) / sum(c.f)::float8
	FROM c;
END
$$;
COMMENT ON FUNCTION qidrisk_internal.reidentification_risk(regclass, text[], double precision, regclass, text, text[]) IS
'internal to reidentification_risk: the measures from kmap_count''s classes';

CREATE FUNCTION reidentification_risk(rel regclass, qid text[], threshold double precision DEFAULT 0.2,
									  population regclass DEFAULT NULL, population_weight_column text DEFAULT NULL,
									  population_qid text[] DEFAULT NULL)
RETURNS TABLE (rows bigint, classes bigint,
			   prosecutor_highest double precision, prosecutor_average double precision,
			   prosecutor_lowest double precision, prosecutor_rows_above bigint,
			   prosecutor_share_above double precision,
			   journalist_highest double precision, journalist_average double precision,
			   journalist_lowest double precision, journalist_rows_above bigint,
			   journalist_share_above double precision, marketer double precision)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION reidentification_risk(regclass, text[], double precision, regclass, text, text[]) IS
'El Emam''s prosecutor, journalist and marketer re-identification risk of a sample, against a population table or the sample itself';
