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
