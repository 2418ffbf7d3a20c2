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

-- ==== The lattice: a heuristic search where the exact one is refused ====

-- qid_lattice and qid_anonymize_into take search: 'exact' (the default, as
-- in 1.0.0) or 'heuristic', a search bounded by qidrisk.lattice_heuristic_nodes
-- evaluated nodes (lattice.c) for lattices past the exact search's 10,000,000
-- nodes; and metric 'loss' (ARX's default: Iyengar's loss, generalization
-- and suppression weighed by gs_factor, a weighted geometric mean over the
-- columns by weights); and privacy, more privacy models (k-map estimated
-- from a sampling fraction, beta-likeness); every 1.0.0 argument is kept,
-- the new ones come last
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
							metric text DEFAULT 'discernibility', evaluate text DEFAULT 'anonymous',
							search text DEFAULT 'exact', gs_factor double precision DEFAULT 0.5,
							weights jsonb DEFAULT NULL, privacy jsonb DEFAULT NULL)
RETURNS TABLE (levels integer[], anonymous boolean, minimal boolean, evaluated boolean,
			   rows_suppressed bigint, classes bigint, height integer, precision_loss double precision,
			   discernibility double precision, entropy_loss double precision,
			   suppressed_share double precision, loss double precision, best boolean, rows bigint)
AS 'MODULE_PATHNAME', 'qidrisk_qid_lattice'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
								double precision, double precision, text, text, text, text, double precision,
								jsonb, jsonb) IS
'every node of the full-domain generalization lattice (or, with search => heuristic, every node a bounded search evaluated): anonymous (k, suppression, l-diversity, t-closeness), minimal, utility, best';
CREATE FUNCTION qidrisk_internal.qid_lattice(rel regclass, qid text[], hierarchies jsonb, k integer,
											 max_suppressed double precision DEFAULT 0,
											 sensitive_column text DEFAULT NULL::text, l integer DEFAULT 1,
											 l_model text DEFAULT 'distinct'::text,
											 c double precision DEFAULT NULL::double precision,
											 t double precision DEFAULT NULL::double precision,
											 t_distance text DEFAULT 'equal'::text,
											 metric text DEFAULT 'discernibility'::text,
											 evaluate text DEFAULT 'anonymous'::text,
											 search text DEFAULT 'exact'::text,
											 gs_factor double precision DEFAULT 0.5,
											 weights jsonb DEFAULT NULL::jsonb,
											 privacy jsonb DEFAULT NULL::jsonb)
RETURNS TABLE(levels integer[], anonymous boolean, minimal boolean, evaluated boolean, rows_suppressed bigint,
			  classes bigint, height integer, precision_loss double precision, discernibility double precision,
			  entropy_loss double precision, suppressed_share double precision, loss double precision,
			  best boolean, rows bigint)
LANGUAGE c
STABLE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'qidrisk_qid_lattice';

-- the least class size of qid_lattice's privacy models (k-map estimated), for qidrisk_anonymize
CREATE FUNCTION qidrisk_internal.qidrisk_privacy_class_size(privacy jsonb, k integer, rows bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qidrisk_privacy_class_size'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_privacy_class_size(jsonb, integer, bigint) IS
'internal to qid_anonymize_into: the least class size k and the privacy models of qid_lattice need over that many rows';

-- how many of the smallest classes population uniqueness suppresses, for qidrisk_anonymize
CREATE FUNCTION qidrisk_internal.qidrisk_privacy_uniques_prefix(privacy jsonb, sizes bigint[], rows bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qidrisk_privacy_uniques_prefix'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_privacy_uniques_prefix(jsonb, bigint[], bigint) IS
'internal to qid_anonymize_into: how many of the smallest classes (sizes ascending) the population_uniqueness model of qid_lattice suppresses in a table of that many rows';

-- privacy's population tables (k_map, delta_presence) resolved with the caller's search_path
CREATE FUNCTION qidrisk_internal.qidrisk_qualified_privacy(privacy jsonb)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'qidrisk_qualified_privacy'
LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION qidrisk_internal.qidrisk_qualified_privacy(jsonb) IS
'internal to qid_anonymize_into: privacy with the population tables of k_map and delta_presence schema-qualified';

-- qidrisk_anonymize as in 1.0.0, passing search, gs_factor, weights and privacy on to qid_lattice
CREATE FUNCTION qidrisk_internal.qidrisk_anonymize(rel regclass, qid text[], hierarchies jsonb, release text,
								  k integer, max_suppressed double precision, sensitive_column text,
								  l integer, l_model text, c double precision, t double precision,
								  t_distance text, metric text, suppression text, local_recoding boolean,
								  search text, gs_factor double precision, weights jsonb, privacy jsonb)
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
	n_rows bigint;
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
	pu_prefix bigint;
	fr double precision;
	fb boolean;
	-- a population table (k_map against it, delta_presence)
	pop_model text := CASE WHEN privacy ? 'delta_presence' THEN 'delta_presence'
						   WHEN privacy #> '{k_map,population}' IS NOT NULL THEN 'k_map' END;
	pop_gens text[] := '{}';
	pop_joins text := '';
	pop_col text;
	pop_fails text;
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
	-- as ARX, no local recoding under population uniqueness: its estimate judges the whole release
	IF local_recoding AND privacy ? 'population_uniqueness' THEN
		RAISE EXCEPTION 'qid_anonymize_into: local_recoding does not support population_uniqueness'
			USING ERRCODE = 'feature_not_supported',
				  HINT = 'Use local_recoding => false: suppression removes the classes the model needs gone.';
	END IF;
	-- the population's classes are not recoded locally (as in ARX)
	IF local_recoding AND pop_model IS NOT NULL THEN
		RAISE EXCEPTION 'qid_anonymize_into: local_recoding does not support %', pop_model
			USING ERRCODE = 'feature_not_supported',
				  HINT = 'Use local_recoding => false: suppression removes the classes the model needs gone.';
	END IF;
	-- the caller's empty object arrives as NULL
	hierarchies := coalesce(hierarchies, '{}');
	SELECT q.levels, q.loss INTO lv, best_loss
	FROM qidrisk_internal.qid_lattice(rel, qid, hierarchies, k, max_suppressed, sensitive_column, l, l_model, c,
								 t, t_distance, metric, 'best', search, gs_factor, weights, privacy) q
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
	-- k-map estimated from a sampling fraction needs larger classes (qid_lattice checked privacy)
	IF privacy ? 'k_map' THEN
		EXECUTE format('SELECT count(*) FROM %s', rel) INTO n_rows;
		k := qidrisk_internal.qidrisk_privacy_class_size(privacy, k, n_rows);
	END IF;
	keep := format('qidrisk_size >= %s', k);
	IF privacy ? 'beta_likeness' THEN
		keep := keep || ' AND qidrisk_beta';
	END IF;
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
				   (sum(abs(ns::float8 / size - q) - q) + 1) / 2 AS qidrisk_teq,
				   bool_and(ns::float8 / size <= q OR (ns::float8 / size - q) / q <= %3$s) AS qidrisk_beta
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
		ELSE 'SELECT key, 0::float8 AS qidrisk_tord FROM cls' END,
		-- beta-likeness: an increase of a value's share bounded by beta (enhanced: and -ln q) times q
		CASE WHEN privacy ? 'beta_likeness' THEN
			CASE WHEN privacy #>> '{beta_likeness,variant}' = 'enhanced'
				 THEN format('least(%s, -ln(q))', (privacy #>> '{beta_likeness,beta}')::float8)
				 ELSE ((privacy #>> '{beta_likeness,beta}')::float8)::text END
		ELSE 'NULL' END);
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
	-- a population table: its rows generalized as src's, counted per class; the
	-- classes of src with too few of them (k_map) or a share of them outside
	-- [min, max] (delta_presence) are suppressed, as qid_lattice does
	IF pop_model IS NOT NULL THEN
		FOR i IN 1 .. m LOOP
			pop_col := coalesce(privacy #>> ARRAY[pop_model, 'population_qid', (i - 1)::text], qid[i]);
			IF lv[i] = 0 THEN
				pop_gens := pop_gens || format('p.%I', pop_col);
			ELSE
				pop_joins := pop_joins || format(
					' LEFT JOIN hr%1$s ph%1$s ON ph%1$s.value = CAST(p.%2$I AS text)
					  LEFT JOIN (SELECT g FROM hr%1$s WHERE value IS NULL) pn%1$s ON p.%2$I IS NULL',
					i, pop_col);
				pop_gens := pop_gens || format('coalesce(ph%1$s.g, pn%1$s.g)', i);
			END IF;
		END LOOP;
		pop_fails := concat_ws(' OR ',
			CASE WHEN privacy #> '{k_map,population}' IS NOT NULL
				 THEN format('coalesce(pc.prows, 0) < %s', (privacy #>> '{k_map,k}')::bigint) END,
			CASE WHEN privacy ? 'delta_presence'
				 THEN format('NOT (c.size::float8 / pc.prows::float8 BETWEEN %s AND %s)',
							 coalesce((privacy #>> '{delta_presence,min}')::float8, 0),
							 (privacy #>> '{delta_presence,max}')::float8) END);
		EXECUTE format($q$
			WITH %1$s pc AS (
				SELECT qidrisk_internal.qid_key(%2$s) AS key, count(*) AS prows FROM %3$s p %4$s GROUP BY 1
			), fails AS (
				SELECT c.key FROM (SELECT qidrisk_key AS key, count(*) AS size FROM pg_temp.qidrisk_anonymize_work GROUP BY 1) c
				LEFT JOIN pc ON pc.key = c.key WHERE %5$s
			)
			UPDATE pg_temp.qidrisk_anonymize_work w SET qidrisk_keep = false FROM fails
			WHERE w.qidrisk_key = fails.key$q$,
			ctes, array_to_string(pop_gens, ', '), (privacy #>> ARRAY[pop_model, 'population'])::regclass, pop_joins, pop_fails);
	END IF;
	-- an average risk ceiling: the smallest kept classes suppressed until it holds, as qid_lattice does
	IF privacy ? 'average_risk' THEN
		UPDATE pg_temp.qidrisk_anonymize_work w SET qidrisk_keep = false
		FROM (SELECT key FROM (
				SELECT key, row_number() OVER o AS rn, count(*) OVER () AS nc, sum(size) OVER () AS nr,
					   coalesce(sum(size) OVER (o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
				FROM (SELECT qidrisk_key AS key, count(*) AS size FROM pg_temp.qidrisk_anonymize_work
					  WHERE qidrisk_keep GROUP BY 1) k
				WINDOW o AS (ORDER BY size, key)) r
			  WHERE (nc - rn + 1)::float8 > (privacy #>> '{average_risk,max}')::float8 * (nr - before)::float8) x
		WHERE w.qidrisk_key = x.key;
	END IF;
	-- population uniqueness: the smallest kept classes qid_lattice suppresses (ARX's search)
	IF privacy ? 'population_uniqueness' THEN
		EXECUTE format('SELECT count(*) FROM %s', rel) INTO n_rows;
		SELECT qidrisk_internal.qidrisk_privacy_uniques_prefix(privacy, coalesce(array_agg(size ORDER BY size, key), '{}'), n_rows)
		INTO pu_prefix
		FROM (SELECT qidrisk_key AS key, count(*) AS size FROM pg_temp.qidrisk_anonymize_work
			  WHERE qidrisk_keep GROUP BY 1) k;
		UPDATE pg_temp.qidrisk_anonymize_work w SET qidrisk_keep = false
		FROM (SELECT key FROM (
				SELECT qidrisk_key AS key, row_number() OVER (ORDER BY count(*), qidrisk_key) AS rn
				FROM pg_temp.qidrisk_anonymize_work WHERE qidrisk_keep GROUP BY 1) r
			  WHERE rn <= pu_prefix) x
		WHERE w.qidrisk_key = x.key;
	END IF;
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
						SELECT min(qidrisk_distinct), max(CASE WHEN %L THEN qidrisk_tord ELSE qidrisk_teq END),
							   bool_and(qidrisk_beta)
						FROM cls JOIN ord USING (key)',
					   qcols, sensitive_column, release,
					   CASE WHEN star THEN 'WHERE NOT (' ||
							(SELECT string_agg(format('%I IS NOT DISTINCT FROM ''*''', q), ' AND ') FROM unnest(qid) q) || ')'
					   ELSE '' END, chain, ordered)
		INTO fl, ft, fb;
		IF privacy ? 'beta_likeness' AND n_released > 0 AND NOT fb THEN
			RAISE EXCEPTION 'qid_anonymize_into: a class of the written release % is not beta-like', release
				USING ERRCODE = 'internal_error';
		END IF;
		IF t IS NULL THEN
			ft := NULL;
		END IF;
	END IF;
	-- the release's own classes against average risk and population uniqueness
	IF n_released > 0 AND (privacy ? 'average_risk' OR privacy ? 'population_uniqueness') THEN
		EXECUTE format('SELECT count(*)::float8 / sum(size), qidrisk_internal.qidrisk_privacy_uniques_prefix(%L, array_agg(size ORDER BY size), %s)
						FROM (SELECT count(*) AS size FROM %s %s GROUP BY %s) c',
					   privacy, coalesce(n_rows, n_released + n_suppressed), release,
					   CASE WHEN star THEN 'WHERE NOT (' ||
							(SELECT string_agg(format('%I IS NOT DISTINCT FROM ''*''', q), ' AND ') FROM unnest(qid) q) || ')'
					   ELSE '' END, qcols)
		INTO fr, pu_prefix;
		IF fr > (privacy #>> '{average_risk,max}')::float8 OR pu_prefix > 0 THEN
			RAISE EXCEPTION 'qid_anonymize_into: the written release % has an average risk of % and % classes too many for population uniqueness',
				release, fr, pu_prefix
				USING ERRCODE = 'internal_error';
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
									  text, double precision, double precision, text, text, text, boolean, text,
									  double precision, jsonb, jsonb) IS
'internal: qid_anonymize_into after the caller''s names are resolved';


-- the body of qid_anonymize_into: resolves the caller's table names with the
-- caller's search_path, so it cannot pin its own; it calls only
-- schema-qualified functions and uses no operator
CREATE FUNCTION qidrisk_internal.qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive_column text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove', local_recoding boolean DEFAULT false,
								   search text DEFAULT 'exact', gs_factor double precision DEFAULT 0.5,
								   weights jsonb DEFAULT NULL, privacy jsonb DEFAULT NULL)
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
		t, t_distance, metric, suppression, local_recoding, search, gs_factor, weights,
		qidrisk_internal.qidrisk_qualified_privacy(privacy))
$$;
COMMENT ON FUNCTION qidrisk_internal.qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision,
								  text, integer, text, double precision, double precision, text, text, text, boolean,
								  text, double precision, jsonb, jsonb) IS
'internal: the body of qid_anonymize_into';

-- the documented name calls the body (src/boundary.c), leaving the caller's search_path as it is
CREATE FUNCTION qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive_column text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove', local_recoding boolean DEFAULT false,
								   search text DEFAULT 'exact', gs_factor double precision DEFAULT 0.5,
								   weights jsonb DEFAULT NULL, privacy jsonb DEFAULT NULL)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, k_anonymity bigint, l_diversity bigint, t_closeness double precision,
			   rows_recoded bigint, recoding text)
AS 'MODULE_PATHNAME', 'qidrisk_call_internal'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision, text, integer,
								  text, double precision, double precision, text, text, text, boolean, text,
								  double precision, jsonb, jsonb) IS
'writes a new table: the source generalized to the best anonymous node of qid_lattice (exact or heuristic search), failing rows suppressed or locally recoded, re-checked';

-- ==== state_events: more counters (front tables, merges from the front, qid_lattice's packed codes, row logs) ====
DROP FUNCTION qidrisk_internal.state_events();
CREATE FUNCTION qidrisk_internal.state_events(OUT partitioned bigint, OUT lent bigint,
											  OUT files_received bigint, OUT partitions_decoded bigint,
											  OUT partitions_to_runs bigint, OUT fronts_started bigint,
											  OUT fronts_given_up bigint, OUT merges_from_front bigint,
											  OUT lattice_packed_splits bigint, OUT logs_started bigint,
											  OUT logs_counted bigint, OUT logs_flushed bigint,
											  OUT logs_into_partitions bigint, OUT logs_crowded bigint)
AS 'MODULE_PATHNAME', 'qidrisk_state_events'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qidrisk_internal.state_events() IS
'for tests: how many frequency states this process moved into partitions, how many partial states it lent and took back, read from workers'' hand-over files, how many received partitions it decoded into arrays or wrote straight to runs, how many front tables of recent classes its states started and gave up, how many runs it merged into the free classes before a partition''s array, how many qid_lattice nodes it split from packed codes, and how many row logs its states started, counted in place for a reader, and counted into their states (of which straight into sorted partitions, and found crowding a sorted bucket and counted class by class), since it started';
