-- qidrisk 0.1.0 -> 0.2.0.  A new installation of 0.2.0 runs qidrisk--0.1.0.sql
-- and then this script, so it holds every change of 0.2.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" to load this file. \quit

-- ==== generalization lattice: hierarchies, qid_lattice, qid_anonymize ====

CREATE FUNCTION hierarchy_levels(hierarchy regclass)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE PARALLEL SAFE
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
COMMENT ON FUNCTION hierarchy_levels(regclass) IS
'the rows of a hierarchy table in ARX''s layout (value, level 1, ..., level n) as value and levels[]';

CREATE FUNCTION hierarchy_levels(hierarchy regclass, child_column text, parent_column text)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad text;
BEGIN
	IF hierarchy IS NULL OR child_column IS NULL OR parent_column IS NULL THEN
		RAISE EXCEPTION 'hierarchy_levels needs a hierarchy table and its child and parent columns'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	EXECUTE format('SELECT FROM %s LIMIT 0', hierarchy);
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
			SELECT DISTINCT %1$I::text, 0 FROM %2$s WHERE %1$I IS NOT NULL
			UNION ALL
			SELECT h.%3$I::text, c.depth + 1
			FROM chain c JOIN %2$s h ON h.%1$I::text = c.node
			WHERE h.%3$I IS NOT NULL
		) CYCLE node SET looped USING path
		SELECT node FROM chain WHERE looped LIMIT 1$q$,
		child_column, hierarchy, parent_column)
	INTO bad;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'hierarchy % has a cycle through "%"', hierarchy, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- every node's ancestors level by level; a top stays itself above its depth
	RETURN QUERY EXECUTE format($q$
		WITH RECURSIVE nodes AS (
			SELECT %1$I::text AS v FROM %2$s WHERE %1$I IS NOT NULL
			UNION
			SELECT %3$I::text FROM %2$s WHERE %3$I IS NOT NULL
		), chain(value, node, depth) AS (
			SELECT n.v, n.v, 0 FROM nodes n
			UNION ALL
			SELECT c.value, h.%3$I::text, c.depth + 1
			FROM chain c JOIN %2$s h ON h.%1$I::text = c.node
			WHERE h.%3$I IS NOT NULL
		), tops AS (
			SELECT c.value, max(c.depth) AS top FROM chain c GROUP BY c.value
		)
		SELECT t.value,
			   ARRAY(SELECT c.node FROM generate_series(1, (SELECT max(top) FROM tops)) g
					 JOIN chain c ON c.value = t.value AND c.depth = least(g, t.top)
					 ORDER BY g)
		FROM tops t$q$,
		child_column, hierarchy, parent_column);
END
$$;
COMMENT ON FUNCTION hierarchy_levels(regclass, text, text) IS
'a child -> parent hierarchy table as value and levels[] (each node''s ancestors; a top stays itself)';

CREATE FUNCTION interval_hierarchy(rel regclass, column_name text, spec jsonb)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE PARALLEL SAFE
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
				@extschema@.quantile_bucket_label(v, ARRAY(
					SELECT DISTINCT CAST(c AS %1$s) FROM jsonb_array_elements($1->'cuts') WITH ORDINALITY AS l(cs, n),
						jsonb_array_elements_text(l.cs) AS c
					WHERE l.n >= %2$s ORDER BY 1)) END$e$, typ, j));
		END LOOP;
	END IF;
	exprs := array_append(exprs, '''*''');
	RETURN QUERY EXECUTE format('SELECT CAST(v AS pg_catalog.text), ARRAY[%s] FROM (SELECT DISTINCT %I AS v FROM %s) d',
								array_to_string(exprs, ', '), column_name, rel)
	USING spec;
END
$$;
COMMENT ON FUNCTION interval_hierarchy(regclass, text, jsonb) IS
'a nested interval hierarchy of a column''s values: {"widths": [w1, w2, ...]} (each a multiple of the last) or {"cuts": [[...], ...]} (level j cuts at the cuts of levels j..n), then *';

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
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
								double precision, double precision, text, text, text) IS
'every node of the full-domain generalization lattice: anonymous (k, suppression, l-diversity, t-closeness), minimal, utility, best';
