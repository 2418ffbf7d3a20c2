-- hierarchy_generalize (C, one climb per value) against the recursive SQL it
-- replaced (the first 0.2.0 version, kept below as pg_temp.hierarchy_sql):
-- the same rows in the same order, or the same error, on random forests
-- with NULL values, values outside the hierarchy, values that are inner
-- nodes or tops, repeated edges and rows, under many limits; then the
-- shapes that end in errors (a cycle a value reaches, a child with two
-- parents, no level that fits), cycles no value reaches, other column and
-- hierarchy types, an empty and an all-NULL column, quoted names.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(1 + 12 * 14 + 21);

SELECT is((SELECT l.lanname::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		   WHERE p.oid = 'public.hierarchy_generalize'::regproc), 'c', 'the function under test is the C one');

-- The former implementation, verbatim but for its name and schema
CREATE FUNCTION pg_temp.hierarchy_sql(rel regclass, column_name text, hierarchy regclass,
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
	PERFORM qidrisk_internal.qidrisk_require_columns(rel, ARRAY[column_name]);
	PERFORM qidrisk_internal.qidrisk_require_columns(hierarchy, ARRAY[child_column, parent_column]);
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

-- A call's rows as text in their order, or its error (the node a cycle is
-- named by may differ)
CREATE FUNCTION pg_temp.outcome(fn text, rel text, col text, hier text, max_values bigint, min_rows bigint,
								child_column text DEFAULT 'child', parent_column text DEFAULT 'parent')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format('SELECT string_agg(row(h.value, h.generalized, h.level, h.rows)::text, '' '' ORDER BY h.n) FROM %s($1::regclass, $2, $3::regclass, $4, $5, $6, $7) WITH ORDINALITY AS h(value, generalized, level, rows, n)', fn)
	INTO result USING rel, col, hier, max_values, min_rows, child_column, parent_column;
	RETURN coalesce(result, '(no rows)');
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || regexp_replace(SQLERRM, 'through ".*"', 'through ...');
END
$$;

-- A random forest of nodes n1..n<nodes>: node i > tops has, with
-- probability 0.9, a parent among the nodes before it (so no cycle); some
-- edges repeated.  The table: rows drawn from the nodes (leaves, inner
-- nodes and tops alike), values outside the hierarchy and NULLs.
CREATE TABLE forest (child text, parent text);
CREATE TABLE vals (v text);
CREATE FUNCTION pg_temp.make(seed integer, nodes integer, tops integer, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed / 100.0);
	TRUNCATE forest, vals;
	INSERT INTO forest
	SELECT 'n' || i, 'n' || (1 + floor(random() * (i - 1)))::int
	FROM generate_series(tops + 1, nodes) i WHERE random() < 0.9;
	INSERT INTO forest SELECT * FROM forest WHERE random() < 0.1;
	INSERT INTO vals
	SELECT CASE WHEN r < 0.05 THEN NULL
				WHEN r < 0.12 THEN 'x' || floor(random() * 10)::int
				ELSE 'n' || (1 + floor(random() ^ 0.5 * nodes))::int END
	FROM (SELECT random() AS r FROM generate_series(1, nrows)) s;
END
$$;

CREATE TEMP TABLE limits (max_values bigint, min_rows bigint);
INSERT INTO limits VALUES (1, NULL), (2, NULL), (3, NULL), (5, NULL), (10, NULL), (40, NULL), (1000, NULL),
	(NULL, 1), (NULL, 2), (NULL, 5), (NULL, 20), (NULL, 200), (10, 5), (40, 2);

-- 12 forests: from a handful of nodes to 400, few tops to many
CREATE TEMP TABLE cases (seed integer, nodes integer, tops integer, nrows integer);
INSERT INTO cases VALUES (1, 5, 1, 12), (2, 12, 2, 40), (3, 30, 1, 100), (4, 30, 10, 100), (5, 60, 3, 200),
	(6, 100, 1, 300), (7, 100, 20, 300), (8, 200, 4, 500), (9, 200, 50, 150), (10, 400, 2, 800),
	(11, 400, 8, 2000), (12, 50, 50, 100);
CREATE FUNCTION pg_temp.compare(seed integer, nodes integer, tops integer, nrows integer)
RETURNS TABLE (c text, s text, d text) LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.make(seed, nodes, tops, nrows);
	RETURN QUERY
	SELECT pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', l.max_values, l.min_rows),
		   pg_temp.outcome('pg_temp.hierarchy_sql', 'vals', 'v', 'forest', l.max_values, l.min_rows),
		   format('forest %s (%s nodes, %s tops, %s rows), max_values %s, min_rows %s', seed, nodes, tops, nrows,
				  coalesce(l.max_values::text, 'NULL'), coalesce(l.min_rows::text, 'NULL'))
	FROM limits l;
END
$$;
SELECT is(r.c, r.s, r.d) FROM cases, pg_temp.compare(seed, nodes, tops, nrows) r;

-- Errors: a cycle a value reaches, a child with two parents
SELECT pg_temp.make(13, 50, 2, 200);
-- the top n1 becomes the child of one of its children
INSERT INTO forest SELECT 'n1', min(child) FROM forest WHERE parent = 'n1';
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 3, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'vals', 'v', 'forest', 3, NULL), 'a cycle through a top: the same error');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 3, NULL),
		  '22023 hierarchy public.forest has a cycle through ...', 'the cycle error, 22023');
TRUNCATE forest;
INSERT INTO forest VALUES ('a', 'b'), ('b', 'c'), ('c', 'a'), ('d', 'e'), ('e', 'd'), ('n5', 'n1');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 1000, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'vals', 'v', 'forest', 1000, NULL),
		  'cycles no value reaches: no error, the same rows');
INSERT INTO vals VALUES ('b');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 1000, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'vals', 'v', 'forest', 1000, NULL), 'a value on a cycle: the same error');
TRUNCATE forest;
INSERT INTO forest VALUES ('n1', 'top'), ('n2', 'top'), ('n2', 'other'), ('n2', 'top');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 3, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'vals', 'v', 'forest', 3, NULL), 'a child with two parents: the same error');
DELETE FROM forest WHERE parent = 'other';
INSERT INTO forest VALUES ('unused', 'p1'), ('unused', 'p2');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 3, NULL),
		  '22023 hierarchy public.forest gives "unused" more than one parent', 'two parents of a node no value reaches: 22023');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'vals', 'v', 'forest', 3, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'vals', 'v', 'forest', 3, NULL), 'and the same error as before');

-- Other types and shapes
CREATE TABLE typed (i integer, vc varchar(10), d date);
INSERT INTO typed SELECT i % 37, 'z' || (i % 11), date '2020-01-01' + i % 5 FROM generate_series(1, 300) i;
INSERT INTO typed VALUES (NULL, NULL, NULL);
CREATE TABLE num_tree (child integer, parent integer);
INSERT INTO num_tree SELECT i, i / 10 FROM generate_series(10, 49) i;
INSERT INTO num_tree SELECT i, 100 FROM generate_series(1, 4) i;
CREATE TABLE vc_tree ("Kid" varchar(20), "Mom" varchar(20));
INSERT INTO vc_tree SELECT 'z' || i, 'g' || (i % 3) FROM generate_series(0, 10) i;
INSERT INTO vc_tree VALUES ('g0', 'all'), ('g1', 'all');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'typed', 'i', 'num_tree', m, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'typed', 'i', 'num_tree', m, NULL),
		  format('integer column and hierarchy, max_values %s', m))
FROM unnest(ARRAY[2, 6, 30]) m;
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'typed', 'vc', 'vc_tree', m, NULL, 'Kid', 'Mom'),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'typed', 'vc', 'vc_tree', m, NULL, 'Kid', 'Mom'),
		  format('varchar column and hierarchy with other column names, max_values %s', m))
FROM unnest(ARRAY[2, 3]) m;
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'typed', 'd', 'forest', 5, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'typed', 'd', 'forest', 5, NULL), 'dates outside the hierarchy');
CREATE TABLE nothing (v text);
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'nothing', 'v', 'forest', 5, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'nothing', 'v', 'forest', 5, NULL), 'an empty table: the same error');
INSERT INTO nothing VALUES (NULL), (NULL);
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'nothing', 'v', 'forest', 5, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'nothing', 'v', 'forest', 5, NULL), 'only NULLs: the same error');
CREATE TABLE "odd ""t""" ("a b" text);
INSERT INTO "odd ""t""" VALUES ('x y'), ('é'), ('x y'), (''), ('Z');
CREATE TABLE "odd ""h""" ("c;" text, "p'" text);
INSERT INTO "odd ""h""" VALUES ('x y', 'both'), ('é', 'both'), ('', 'empty'), ('both', 'all'), ('empty', 'all');
SELECT is(pg_temp.outcome('public.hierarchy_generalize', '"odd ""t"""', 'a b', '"odd ""h"""', m, NULL, 'c;', 'p'''),
		  pg_temp.outcome('pg_temp.hierarchy_sql', '"odd ""t"""', 'a b', '"odd ""h"""', m, NULL, 'c;', 'p'''),
		  format('quoted names, an empty string and a non-ASCII value, max_values %s', m))
FROM unnest(ARRAY[2, 3]) m;

-- Collations: the column's "C" orders the output as before; two different
-- non-default collations are refused with 42P22 (the former version failed
-- with an obscure message of its recursive query)
CREATE TABLE c_vals (z text COLLATE "C");
INSERT INTO c_vals VALUES ('a'), ('B'), ('a'), ('b'), (NULL);
CREATE TABLE c_tree (child text, parent text);
INSERT INTO c_tree VALUES ('a', 'x'), ('B', 'X'), ('b', 'x');
CREATE TABLE posix_tree (child text COLLATE "POSIX", parent text COLLATE "POSIX");
INSERT INTO posix_tree SELECT * FROM c_tree;
SELECT is(pg_temp.outcome('public.hierarchy_generalize', 'c_vals', 'z', 'c_tree', m, NULL),
		  pg_temp.outcome('pg_temp.hierarchy_sql', 'c_vals', 'z', 'c_tree', m, NULL),
		  format('a column of collation "C" under a hierarchy of the default one, max_values %s', m))
FROM unnest(ARRAY[2, 3]) m;
SELECT throws_ok($$SELECT * FROM hierarchy_generalize('c_vals', 'z', 'posix_tree', max_values => 2)$$, '42P22',
				 'hierarchy_generalize: column "z" and hierarchy column "child" have different collations',
				 'two different non-default collations: 42P22');

-- The values and nodes are held to qidrisk.max_state_memory
CREATE TABLE many AS SELECT 'v' || i AS v FROM generate_series(1, 30000) i;
SET LOCAL qidrisk.max_state_memory = '1MB';
SELECT throws_ok($$SELECT * FROM hierarchy_generalize('many', 'v', 'forest', max_values => 2)$$, '54000',
				 'hierarchy_generalize: the values and hierarchy nodes exceed qidrisk.max_state_memory',
				 '30,000 values past a 1 MB budget: 54000');
RESET qidrisk.max_state_memory;

SELECT * FROM finish();
ROLLBACK;
