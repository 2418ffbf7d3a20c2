-- qidrisk 0.1.0 -> 0.2.0.  A new installation of 0.2.0 runs qidrisk--0.1.0.sql
-- and then this script, so it holds every change of 0.2.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" to load this file. \quit

-- ==== Table reading: locked, resolved and privilege-checked in one place ====

-- Lock rel, resolve its columns (NULL: every column) and check SELECT on them:
-- the first step of every table-level function written in SQL or PL/pgSQL
CREATE OR REPLACE FUNCTION qidrisk_require_columns(rel regclass, columns text[])
RETURNS void
AS 'MODULE_PATHNAME', 'qidrisk_require_columns'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qidrisk_require_columns(regclass, text[]) IS
'internal: lock a relation (AccessShareLock), raise 42P01 if it is gone, 42703 naming the first listed column it lacks (NULL: every column), 42501 naming the first the caller may not read';

-- The rows qid_search and qid_generalize drop as incomplete: a NULL, or an
-- empty string of a string type, in any QID column; the WHERE clause keeping the others
CREATE OR REPLACE FUNCTION qidrisk_complete_filter(rel regclass, qid text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM @extschema@.qidrisk_require_columns(rel, qid);
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
CREATE OR REPLACE FUNCTION qidrisk_generalization_query(rel regclass, qid text[], whatif jsonb,
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
	-- lock rel, then check its QID columns (or every column) and the caller's access
	PERFORM @extschema@.qidrisk_require_columns(rel, qid);
	IF all_columns THEN
		PERFORM @extschema@.qidrisk_require_columns(rel, NULL);
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
			PERFORM @extschema@.qidrisk_require_columns(map_rel, ARRAY[from_col, to_col]);
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
-- ==== numbers: keyed sampling of the approximate aggregates ====

-- The approximate aggregates sample classes by a keyed permutation of the
-- fingerprint (the key secret and new per statement, or fixed by the
-- superuser setting qidrisk.sample_seed); this exposes the permutation so
-- that tests can recompute a sample in plain SQL.
CREATE FUNCTION qidrisk_sample_permute(key uuid)
RETURNS uuid
AS 'MODULE_PATHNAME', 'qidrisk_sample_permute'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_sample_permute(uuid) IS
'internal: a qid_key as the approximate aggregates of the current statement sample it (their keyed permutation)';
-- ==== generalization lattice: hierarchies, qid_lattice, qid_anonymize_into ====

CREATE FUNCTION hierarchy_levels(hierarchy regclass)
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
COMMENT ON FUNCTION hierarchy_levels(regclass) IS
'the rows of a hierarchy table in ARX''s layout (value, level 1, ..., level n) as value and levels[]';

CREATE FUNCTION hierarchy_levels(hierarchy regclass, child_column text, parent_column text)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
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
	-- NULL always has a row, so an empty table still has the hierarchy's levels
	RETURN QUERY EXECUTE format('SELECT CAST(v AS pg_catalog.text), ARRAY[%s] FROM (SELECT %I AS v FROM %s UNION SELECT NULL) d',
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
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION qid_lattice(regclass, text[], jsonb, integer, double precision, text, integer, text,
								double precision, double precision, text, text, text) IS
'every node of the full-domain generalization lattice: anonymous (k, suppression, l-diversity, t-closeness), minimal, utility, best';

CREATE FUNCTION qidrisk_qualified_table(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'qidrisk_qualified_table'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_qualified_table(text) IS
'internal: an existing table''s schema-qualified, quoted name, resolved with the caller''s search_path';

CREATE FUNCTION qidrisk_qualified_new_table(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'qidrisk_qualified_new_table'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION qidrisk_qualified_new_table(text) IS
'internal: the schema-qualified, quoted name CREATE TABLE would give a new table, with the caller''s search_path';

-- The hierarchy rows (value, levels[]) of one column, from a qualified specification
CREATE FUNCTION qidrisk_hierarchy_rows(rel regclass, column_name text, spec jsonb)
RETURNS TABLE (value text, levels text[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF jsonb_typeof(spec) = 'string' THEN
		RETURN QUERY SELECT * FROM @extschema@.hierarchy_levels((spec #>> '{}')::regclass);
	ELSIF spec ? 'table' AND (spec ? 'child' OR spec ? 'parent') THEN
		RETURN QUERY SELECT * FROM @extschema@.hierarchy_levels((spec ->> 'table')::regclass,
																 coalesce(spec ->> 'child', 'child'),
																 coalesce(spec ->> 'parent', 'parent'));
	ELSIF spec ? 'table' THEN
		RETURN QUERY SELECT * FROM @extschema@.hierarchy_levels((spec ->> 'table')::regclass);
	ELSE
		RETURN QUERY SELECT * FROM @extschema@.interval_hierarchy(rel, column_name, spec);
	END IF;
END
$$;
COMMENT ON FUNCTION qidrisk_hierarchy_rows(regclass, text, jsonb) IS
'internal: the rows of one column''s hierarchy from a schema-qualified specification';

CREATE FUNCTION qidrisk_anonymize(rel regclass, qid text[], hierarchies jsonb, release text,
								  k integer, max_suppressed double precision, sensitive text,
								  l integer, l_model text, c double precision, t double precision,
								  t_distance text, metric text, suppression text)
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, final_k bigint, final_l bigint, final_t double precision)
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
BEGIN
	IF release IS NULL OR suppression IS NULL THEN
		RAISE EXCEPTION 'qid_anonymize_into needs a release table name and a suppression mode'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF suppression NOT IN ('remove', 'star') THEN
		RAISE EXCEPTION 'qid_anonymize_into: unknown suppression "%"', suppression
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Use remove or star.';
	END IF;
	star := suppression = 'star';
	-- the caller's empty object arrives as NULL
	hierarchies := coalesce(hierarchies, '{}');
	SELECT q.levels, q.loss INTO lv, best_loss
	FROM @extschema@.qid_lattice(rel, qid, hierarchies, k, max_suppressed, sensitive, l, l_model, c,
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
			ctes := ctes || format('hr%1$s AS MATERIALIZED (SELECT h.value, h.levels[%2$s] AS g FROM @extschema@.qidrisk_hierarchy_rows(%3$L::regclass, %4$L, %5$L::jsonb) h), ',
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
			SELECT t.*, %2$s, %3$s AS qidrisk_s, @extschema@.qid_key(%4$s) AS qidrisk_key
			FROM %5$s t %6$s
		), %7$s
		SELECT src.*, %8$s AS qidrisk_keep
		FROM src JOIN cls ON cls.key = src.qidrisk_key JOIN ord ON ord.key = src.qidrisk_key$q$,
		ctes,
		(SELECT string_agg(format('%s AS qidrisk_g%s', gens[s.gi], s.gi), ', ') FROM generate_series(1, m) AS s(gi)),
		CASE WHEN sensitive IS NULL THEN 'NULL::integer' ELSE format('t.%I', sensitive) END,
		array_to_string(gens, ', '), rel, joins, chain, keep);

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
	EXECUTE format('SELECT @extschema@.k_anonymity(%s) FROM %s %s',
				   (SELECT string_agg(format('%I', q), ', ') FROM unnest(qid) q), release,
				   CASE WHEN star THEN 'WHERE NOT (' ||
						(SELECT string_agg(format('%I IS NOT DISTINCT FROM ''*''', q), ' AND ') FROM unnest(qid) q) || ')'
				   ELSE '' END)
	INTO fk;
	IF sensitive IS NOT NULL THEN
		-- t is measured against the source's distribution, suppressed rows included
		EXECUTE format('WITH src AS (SELECT @extschema@.qid_key(%s) AS qidrisk_key, %I AS qidrisk_s FROM %s %s
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
		n_suppressed, changes, fk, fl, ft;
END
$$;
COMMENT ON FUNCTION qidrisk_anonymize(regclass, text[], jsonb, text, integer, double precision, text, integer,
									  text, double precision, double precision, text, text, text) IS
'internal: qid_anonymize_into after the caller''s names are resolved';

-- Resolves the caller's table names with the caller's search_path, so it cannot
-- pin its own (like qid_assert); its body calls only schema-qualified
-- functions and uses no operator, so that path cannot redirect anything
CREATE FUNCTION qid_anonymize_into(rel regclass, qid text[], hierarchies jsonb, release text, k integer,
								   max_suppressed double precision DEFAULT 0, sensitive text DEFAULT NULL,
								   l integer DEFAULT 1, l_model text DEFAULT 'distinct',
								   c double precision DEFAULT NULL, t double precision DEFAULT NULL,
								   t_distance text DEFAULT 'equal', metric text DEFAULT 'discernibility',
								   suppression text DEFAULT 'remove')
RETURNS TABLE (node integer[], loss double precision, rows_released bigint, rows_suppressed bigint,
			   values_changed jsonb, final_k bigint, final_l bigint, final_t double precision)
LANGUAGE sql VOLATILE
AS $$
	SELECT * FROM @extschema@.qidrisk_anonymize(rel, qid,
		(SELECT pg_catalog.jsonb_object_agg(e.key,
			CASE WHEN pg_catalog.texteq(pg_catalog.jsonb_typeof(e.value), 'string')
				 THEN pg_catalog.to_jsonb(@extschema@.qidrisk_qualified_table(
						pg_catalog.jsonb_array_element_text(pg_catalog.jsonb_build_array(e.value), 0)))
				 WHEN pg_catalog.texteq(pg_catalog.jsonb_typeof(e.value), 'object')
					  AND pg_catalog.jsonb_exists(e.value, 'table')
				 THEN pg_catalog.jsonb_concat(e.value, pg_catalog.jsonb_build_object('table',
						@extschema@.qidrisk_qualified_table(pg_catalog.jsonb_object_field_text(e.value, 'table'))))
				 ELSE e.value END)
		 FROM pg_catalog.jsonb_each(hierarchies) e),
		@extschema@.qidrisk_qualified_new_table(release), k, max_suppressed, sensitive, l, l_model, c,
		t, t_distance, metric, suppression)
$$;
COMMENT ON FUNCTION qid_anonymize_into(regclass, text[], jsonb, text, integer, double precision, text, integer,
								  text, double precision, double precision, text, text, text) IS
'writes a new table: the source generalized to the best anonymous node of qid_lattice, failing rows suppressed, re-checked';

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
	CREATE TABLE @extschema@.qidrisk_check_history (
		checked_at timestamptz NOT NULL,
		checked_by name NOT NULL,
		relation text NOT NULL,
		qid text[] NOT NULL,
		policy jsonb NOT NULL,
		results jsonb NOT NULL,
		passed boolean NOT NULL
	);
	EXECUTE format('INSERT INTO @extschema@.qidrisk_check_history
						(checked_at, checked_by, relation, qid, policy, results, passed)
					SELECT o.checked_at, o.checked_by, o.relation, o.qid, o.policy, o.results, o.passed
					FROM ONLY %s AS o
					WHERE o.checked_at IS NOT NULL AND o.checked_by IS NOT NULL AND o.relation IS NOT NULL
					AND o.qid IS NOT NULL AND o.policy IS NOT NULL AND o.results IS NOT NULL
					AND o.passed IS NOT NULL', old::regclass);
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
COMMENT ON TABLE qidrisk_check_history IS
'runs of qid_check / qid_assert with record_history => true: when, who, which table and QID, policy, per-rule results; written only by qid_check';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.qidrisk_check_history', '');
ALTER TABLE @extschema@.qidrisk_check_history ENABLE ROW LEVEL SECURITY;
-- a role sees the rows of roles it is a member of (itself included), members of
-- pg_read_all_data and of the extension's owner see all
CREATE POLICY qidrisk_check_history_read ON @extschema@.qidrisk_check_history FOR SELECT
	USING (checked_by OPERATOR(pg_catalog.=) CURRENT_USER
		   OR pg_catalog.pg_has_role('pg_read_all_data'::pg_catalog.name, 'MEMBER'::pg_catalog.text)
		   OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
					  WHERE r.rolname OPERATOR(pg_catalog.=) checked_by
					  AND pg_catalog.pg_has_role(r.oid, 'MEMBER'::pg_catalog.text))
		   OR pg_catalog.pg_has_role((SELECT e.extowner FROM pg_catalog.pg_extension e
									  WHERE e.extname OPERATOR(pg_catalog.=) 'qidrisk'::pg_catalog.name),
									 'MEMBER'::pg_catalog.text));
-- reading only: rows come from qid_check, which inserts as the table's owner
GRANT SELECT ON @extschema@.qidrisk_check_history TO PUBLIC;

-- The evaluation of qid_check (0.1.0's body without the INSERT), run through
-- SPI with the caller's rights by the C function qid_check
CREATE FUNCTION qidrisk_check_evaluate(rel regclass, qid text[], policy jsonb)
RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision,
			   passed boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols text;
	profile @extschema@.qid_profile;
	r record;
BEGIN
	PERFORM @extschema@.qidrisk_check_validate(rel, qid, policy);
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
												   @extschema@.qidrisk_check_names(r.rule, setting, 'population_qid'::text));
				threshold := (setting ->> 'k')::double precision;
				passed := measured IS NULL OR measured >= threshold;
			WHEN 'max_qar_risk' THEN
				SELECT q.risk INTO measured
				FROM @extschema@.qar_risk(rel,
										  coalesce(@extschema@.qidrisk_check_names(r.rule, setting, 'columns'::text), qid),
										  coalesce((setting ->> 'p')::integer, 3),
										  coalesce((setting ->> 'alpha')::double precision, 0.01::double precision),
										  coalesce((setting ->> 'pi_u')::double precision, 0.05::double precision)) AS q;
				threshold := (setting ->> 'max')::double precision;
				passed := measured <= threshold;
		END CASE;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION qidrisk_check_evaluate(regclass, text[], jsonb) IS
'internal: the rules of a qid_check policy evaluated with the caller''s rights, one row per rule; records nothing';

CREATE OR REPLACE FUNCTION qid_check(rel regclass, qid text[], policy jsonb, record_history boolean DEFAULT false)
RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision,
			   passed boolean)
AS 'MODULE_PATHNAME', 'qidrisk_qid_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION qid_check(regclass, text[], jsonb, boolean) IS
'check a table or view against a publication policy: one row per rule (measured, threshold, passed); record_history => true also appends the run to qidrisk_check_history';

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
-- that order differed in their last digit, so they are taken in class order.
CREATE OR REPLACE FUNCTION weighted_risk_summary(rel regclass, qid text[], weight text, method text DEFAULT 'approx')
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
	FROM @extschema@.weighted_risk(rel, qid, weight, method) AS w
$$;
