-- qidrisk 0.1.0 -> 0.2.0.  A new installation of 0.2.0 runs qidrisk--0.1.0.sql
-- and then this script, so it holds every change of 0.2.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" to load this file. \quit

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
-- looked for cycles by carrying a path per value.  Now every step is a hash
-- join or aggregate: each value climbs the hierarchy once, keeping its chain
-- of ancestors as an array, and a level's generalization is an array element
-- (a value whose next ancestor is already in its chain is in a cycle, and then
-- the query returns nothing and a second one names the cycle).  A NULL
-- value has no chain and generalizes to NULL at every level, as before.  A
-- table or hierarchy that does not exist, or lacks a named column, is
-- reported as such before any query.
CREATE OR REPLACE FUNCTION hierarchy_generalize(rel regclass, column_name text, hierarchy regclass,
									 max_values bigint DEFAULT NULL, min_rows bigint DEFAULT NULL,
									 child_column text DEFAULT 'child',
									 parent_column text DEFAULT 'parent')
RETURNS TABLE (value text, generalized text, level integer, rows bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- JIT costs more than it saves here; the size of a recursive query's result is
-- misestimated, and a nested loop or merge join over it would be quadratic or
-- sort the hierarchy at every level
SET jit = off
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
DECLARE
	bad text;
	edges text;
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
	IF NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = rel::oid) THEN
		RAISE EXCEPTION 'relation with OID % does not exist', rel::oid
			USING ERRCODE = 'undefined_table';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = hierarchy::oid) THEN
		RAISE EXCEPTION 'hierarchy relation with OID % does not exist', hierarchy::oid
			USING ERRCODE = 'undefined_table';
	END IF;
	PERFORM @extschema@.qidrisk_require_columns(rel, ARRAY[column_name]);
	PERFORM @extschema@.qidrisk_require_columns(hierarchy, ARRAY[child_column, parent_column]);
	-- the hierarchy's edges as text, once each (a repeated row is one edge)
	edges := format('edges AS MATERIALIZED (
			SELECT DISTINCT h.%1$I::text AS child, h.%2$I::text AS parent FROM %3$s h
			WHERE h.%1$I IS NOT NULL AND h.%2$I IS NOT NULL)',
		child_column, parent_column, hierarchy);
	-- a child with two parents has no single generalization
	EXECUTE format('SELECT s.c::text FROM (SELECT DISTINCT %1$I AS c, %2$I AS p FROM %3$s
					WHERE %1$I IS NOT NULL AND %2$I IS NOT NULL) s GROUP BY s.c HAVING count(*) > 1 LIMIT 1',
				   child_column, parent_column, hierarchy)
	INTO bad;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'hierarchy % gives "%" more than one parent', hierarchy, bad
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN QUERY EXECUTE format($q$
		WITH RECURSIVE %1$s, vals AS MATERIALIZED (
			SELECT %2$I::text AS value, count(*) AS rows FROM %3$s GROUP BY 1
		), chain(value, node, path, looped) AS MATERIALIZED (
			-- a value whose next ancestor is already in its chain is in a cycle
			SELECT v.value, v.value, ARRAY[v.value], false FROM vals v WHERE v.value IS NOT NULL
			UNION ALL
			SELECT c.value, e.parent, c.path || e.parent, e.parent = ANY (c.path)
			FROM chain c JOIN edges e ON e.child = c.node
			WHERE NOT c.looped
		), tops AS MATERIALIZED (
			-- each value with its whole chain (the path that climbs no further); NULL has none
			SELECT v.value, v.rows, c.path FROM vals v
			LEFT JOIN (SELECT c.value, c.path FROM chain c
					   WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.child = c.node)) c ON c.value = v.value
		), levels AS (
			SELECT generate_series(0, coalesce(max(cardinality(t.path)) - 1, 0)) AS level FROM tops t
		), fits AS (
			SELECT g.level FROM (
				SELECT l.level, t.path[least(l.level, cardinality(t.path) - 1) + 1] AS generalized,
					   sum(t.rows) AS r
				FROM tops t CROSS JOIN levels l
				WHERE t.value IS NOT NULL GROUP BY 1, 2
			) g
			GROUP BY g.level
			HAVING ($1 IS NULL OR count(*) <= $1) AND ($2 IS NULL OR min(g.r) >= $2)
			ORDER BY g.level LIMIT 1
		)
		SELECT t.value, t.path[least(f.level, cardinality(t.path) - 1) + 1], f.level, t.rows::bigint
		FROM tops t CROSS JOIN fits f
		-- no rows at all when there is a cycle: it is named below
		WHERE NOT EXISTS (SELECT 1 FROM chain c WHERE c.looped)
		ORDER BY 2, 1$q$,
		edges, column_name, rel)
	USING max_values, min_rows;
	IF NOT FOUND THEN
		-- name a node of the cycle (only here, after the main query found none to return)
		EXECUTE format($q$
			WITH RECURSIVE %1$s, chain(node, path, looped) AS (
				SELECT d.v, ARRAY[d.v], false FROM (SELECT DISTINCT %2$I::text AS v FROM %3$s) d
				WHERE d.v IS NOT NULL
				UNION ALL
				SELECT e.parent, c.path || e.parent, e.parent = ANY (c.path)
				FROM chain c JOIN edges e ON e.child = c.node
				WHERE NOT c.looped
			)
			SELECT c.node FROM chain c WHERE c.looped LIMIT 1$q$,
			edges, column_name, rel)
		INTO bad;
		IF bad IS NOT NULL THEN
			RAISE EXCEPTION 'hierarchy % has a cycle through "%"', hierarchy, bad
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		RAISE EXCEPTION 'no level of hierarchy % meets max_values = % and min_rows = %',
			hierarchy, max_values, min_rows
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Even the top of the hierarchy is too fine; add a coarser level or relax the policy.';
	END IF;
END
$$;
