-- hierarchy_levels(hierarchy, child_column, parent_column) (C, one climb per
-- node) against the recursive SQL it replaced (the first 0.2.0 version, kept
-- below as pg_temp.levels_sql): the same rows, or the same error, on random
-- forests with several roots, unequal depths, rows with a NULL parent or a
-- NULL child, tops that are only parents, and integer and quoted columns;
-- then the errors (NULL arguments, a missing table or column, a child with
-- two parents, a cycle named by one of its nodes, two collations, the memory
-- budget), repeated rows, and a 20,000-leaf four-level tree, a chain of
-- depth 3,000 and a cycle of 200,000 nodes under a 20 s statement timeout
-- (the recursive SQL took 66 s, over 5 minutes and longer).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(1 + 14 + 4 + 18 + 4);

SELECT is((SELECT l.lanname::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		   WHERE p.oid = 'public.hierarchy_levels(regclass, text, text)'::regprocedure), 'c',
		  'the function under test is the C one');

-- The former implementation, verbatim but for its name and schema
CREATE FUNCTION pg_temp.levels_sql(hierarchy regclass, child_column text, parent_column text)
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

-- A call's rows as text in value order (its own order is unspecified), or
-- its error (the node a cycle is named by may differ)
CREATE FUNCTION pg_temp.outcome(fn text, tbl text, child_column text DEFAULT 'child',
								parent_column text DEFAULT 'parent')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format('SELECT string_agg(row(h.value, h.levels)::text, '' '' ORDER BY h.value COLLATE "C") FROM %s($1::regclass, $2, $3) h', fn)
	INTO result USING tbl, child_column, parent_column;
	RETURN coalesce(result, '(no rows)');
EXCEPTION WHEN OTHERS OR query_canceled THEN
	RETURN SQLSTATE || ' ' || regexp_replace(SQLERRM, 'through ".*"', 'through ...');
END
$$;

-- A random forest of nodes n1..n<nodes>: node i > tops has, with
-- probability 0.85, a parent among the nodes before it (so no cycle and no
-- repeated edge), else sometimes a row with a NULL parent; some nodes are
-- named only as a parent; a few rows have a NULL child.
CREATE TABLE forest (child text, parent text);
CREATE FUNCTION pg_temp.make(seed integer, nodes integer, tops integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed / 100.0);
	TRUNCATE forest;
	INSERT INTO forest
	SELECT 'n' || i, CASE WHEN r < 0.85 THEN 'n' || (1 + floor(random() * (i - 1)))::int END
	FROM (SELECT i, random() AS r FROM generate_series(tops + 1, nodes) i) s
	WHERE r < 0.95;
	INSERT INTO forest SELECT NULL, 'n' || (1 + floor(random() * nodes))::int
	FROM generate_series(1, 1 + nodes / 20);
	INSERT INTO forest SELECT child, NULL FROM forest WHERE child IS NOT NULL AND random() < 0.05;
END
$$;

-- 14 forests: from a handful of nodes to 300, one top to every node a top
CREATE TEMP TABLE cases (seed integer, nodes integer, tops integer);
INSERT INTO cases VALUES (1, 3, 1), (2, 8, 1), (3, 12, 2), (4, 30, 1), (5, 30, 10), (6, 60, 3),
	(7, 100, 1), (8, 100, 20), (9, 150, 2), (10, 200, 4), (11, 200, 50), (12, 300, 1),
	(13, 300, 6), (14, 40, 40);
CREATE FUNCTION pg_temp.compare(seed integer, nodes integer, tops integer)
RETURNS TABLE (c text, s text, d text) LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.make(seed, nodes, tops);
	RETURN QUERY
	SELECT pg_temp.outcome('public.hierarchy_levels', 'forest'),
		   pg_temp.outcome('pg_temp.levels_sql', 'forest'),
		   format('forest %s (%s nodes, %s tops, %s rows, %s with a NULL side, depth %s)', seed, nodes, tops,
				  (SELECT count(*) FROM forest), (SELECT count(*) FROM forest WHERE child IS NULL OR parent IS NULL),
				  (SELECT max(cardinality(levels)) FROM hierarchy_levels('forest', 'child', 'parent')));
END
$$;
SELECT is(r.c, r.s, r.d) FROM cases, pg_temp.compare(seed, nodes, tops) r;

-- Other types and names
CREATE TABLE num_tree (child integer, parent integer);
INSERT INTO num_tree SELECT i, i / 10 FROM generate_series(10, 499) i;
INSERT INTO num_tree SELECT i, 100 + i % 2 FROM generate_series(1, 9) i;
INSERT INTO num_tree VALUES (1000, NULL), (NULL, 2000);
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'num_tree'), pg_temp.outcome('pg_temp.levels_sql', 'num_tree'),
		  'integer columns, depths 0 to 3');
CREATE TABLE "odd ""h""" ("c;" varchar(20), "P'" text);
INSERT INTO "odd ""h""" VALUES ('x y', 'both'), ('é', 'both'), ('', 'empty'), ('both', 'all'), ('empty', 'all'),
	('all', NULL), (NULL, 'alone');
SELECT is(pg_temp.outcome('public.hierarchy_levels', '"odd ""h"""', 'c;', 'P'''),
		  pg_temp.outcome('pg_temp.levels_sql', '"odd ""h"""', 'c;', 'P'''),
		  'quoted names, varchar and text, an empty string and a non-ASCII value');
CREATE TABLE lonely (child text, parent text);
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'lonely'), '(no rows)', 'an empty table: no rows');
INSERT INTO lonely VALUES ('a', NULL), (NULL, 'b'), (NULL, NULL);
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'lonely'), pg_temp.outcome('pg_temp.levels_sql', 'lonely'),
		  'only tops: each with no levels, as before');

-- From here on a quadratic version fails instead of hanging (the small
-- comparisons above run the recursive SQL, which may take longer on a busy
-- machine)
SET LOCAL statement_timeout = '20s';

-- Errors
SELECT throws_ok($$SELECT * FROM hierarchy_levels(NULL, 'child', 'parent')$$, '22004',
				 'hierarchy_levels needs a hierarchy table and its child and parent columns', 'NULL table: 22004');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', NULL, 'parent')$$, '22004', NULL, 'NULL child column: 22004');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', 'child', NULL)$$, '22004', NULL, 'NULL parent column: 22004');
SELECT throws_ok($$SELECT * FROM hierarchy_levels(999999::oid::regclass, 'child', 'parent')$$, '42P01',
				 'hierarchy relation with OID 999999 does not exist', 'a table that does not exist: 42P01');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', 'kid', 'parent')$$, '42703',
				 'column "kid" of relation "forest" does not exist', 'an unknown child column: 42703');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', 'child', 'Parent')$$, '42703',
				 'column "Parent" of relation "forest" does not exist', 'an unknown parent column: 42703');
TRUNCATE forest;
INSERT INTO forest VALUES ('n1', 'top'), ('n2', 'top'), ('n2', 'other'), ('n2', 'top');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', 'child', 'parent')$$, '22023',
				 'hierarchy public.forest gives "n2" more than one parent', 'a child with two parents: 22023');
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'forest'), pg_temp.outcome('pg_temp.levels_sql', 'forest'),
		  'and the same error as before');
-- a cycle reached through a tail; the node named is on the cycle
TRUNCATE forest;
INSERT INTO forest VALUES ('t1', 't2'), ('t2', 'a'), ('a', 'b'), ('b', 'c'), ('c', 'a'), ('x', 'y');
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'forest'), pg_temp.outcome('pg_temp.levels_sql', 'forest'),
		  'a cycle: the same error as before');
CREATE FUNCTION pg_temp.cycle_node(tbl text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM count(*) FROM hierarchy_levels(tbl::regclass, 'child', 'parent');
	RETURN '(no error)';
EXCEPTION WHEN invalid_parameter_value THEN
	RETURN substring(SQLERRM FROM 'cycle through "(.*)"$');
WHEN query_canceled THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END
$$;
SELECT ok(pg_temp.cycle_node('forest') IN ('a', 'b', 'c'), 'the node named is on the cycle, not on its tail');
TRUNCATE forest;
INSERT INTO forest VALUES ('x', 'y'), ('s', 's');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', 'child', 'parent')$$, '22023',
				 'hierarchy public.forest has a cycle through "s"', 'a node its own parent: 22023');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('forest', 'child', 'child')$$, '22023', NULL,
				 'one column as child and parent: every node its own parent');
-- a cycle of 200,000 nodes is climbed without recursion
CREATE TABLE ring AS SELECT 'r' || i AS child, 'r' || ((i + 1) % 200000) AS parent FROM generate_series(0, 199999) i;
SELECT ok(pg_temp.cycle_node('ring') ~ '^r[0-9]+$', 'a cycle of 200,000 nodes: 22023 naming one of them');

-- Repeated rows are one edge, and a row with a NULL parent adds nothing to
-- a child that has one (the recursive SQL repeated levels for repeated rows)
TRUNCATE forest;
INSERT INTO forest VALUES ('b', 'a'), ('b', 'a'), ('c', 'b'), ('c', NULL), ('c', 'b');
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'forest'), '(a,"{a,a}") (b,"{a,a}") (c,"{b,a}")',
		  'repeated rows are one edge');

-- Collations: texts compare under the columns' collation, a non-default
-- one winning over the default (the former version failed there, 42P22
-- from its recursive query); two different non-default ones are refused
-- with 42P22 (the former version failed with an obscure message)
CREATE TABLE c_tree (child text COLLATE "C", parent text);
INSERT INTO c_tree VALUES ('a', 'x'), ('B', 'X'), ('b', 'x'), ('x', 'top'), ('X', 'top');
SELECT is(pg_temp.outcome('public.hierarchy_levels', 'c_tree'),
		  '(B,"{X,top}") (X,"{top,top}") (a,"{x,top}") (b,"{x,top}") (top,"{top,top}") (x,"{top,top}")',
		  'a child column of collation "C" and a parent column of the default one');
CREATE TABLE mixed_tree (child text COLLATE "C", parent text COLLATE "POSIX");
INSERT INTO mixed_tree VALUES ('a', 'x');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('mixed_tree', 'child', 'parent')$$, '42P22',
				 'hierarchy_levels: child column "child" and parent column "parent" have different collations',
				 'two different non-default collations: 42P22');

-- Privileges: the caller's, per column
CREATE ROLE qidrisk_levels_reader;
GRANT SELECT (child) ON num_tree TO qidrisk_levels_reader;
SET LOCAL ROLE qidrisk_levels_reader;
SELECT throws_ok($$SELECT * FROM hierarchy_levels('num_tree', 'child', 'parent')$$, '42501',
				 'permission denied for column "parent" of relation "num_tree"', 'no SELECT on the parent column: 42501');
RESET ROLE;

-- The nodes are held to qidrisk.max_state_memory
CREATE TABLE many AS SELECT 'v' || i AS child, NULL::text AS parent FROM generate_series(1, 30000) i;
SET LOCAL qidrisk.max_state_memory = '1MB';
SELECT throws_ok($$SELECT * FROM hierarchy_levels('many', 'child', 'parent')$$, '54000',
				 'hierarchy_levels: the hierarchy nodes exceed qidrisk.max_state_memory',
				 '30,000 nodes past a 1 MB budget: 54000');
RESET qidrisk.max_state_memory;

-- Linear time (within the 20 s statement timeout): each of these took the
-- recursive SQL a minute or more
CREATE FUNCTION pg_temp.summary(tbl text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format('SELECT concat_ws('' '', count(*), sum(cardinality(levels)), count(DISTINCT levels[cardinality(levels)])) FROM hierarchy_levels(%L, ''child'', ''parent'')', tbl)
	INTO result;
	RETURN result;
EXCEPTION WHEN query_canceled THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END
$$;
-- ZIP codes: 20,000 five-digit codes, 200 three-digit prefixes, 10 states, one top
CREATE TABLE zips AS
SELECT lpad(i::text, 5, '0') AS child, 'z' || lpad((i / 100)::text, 3, '0') AS parent FROM generate_series(0, 19999) i
UNION ALL SELECT 'z' || lpad(j::text, 3, '0'), 'state' || (j / 20) FROM generate_series(0, 199) j
UNION ALL SELECT 'state' || s, '*' FROM generate_series(0, 9) s;
SELECT is(pg_temp.summary('zips'), '20211 60633 1', 'a 20,000-leaf four-level tree within 20 s: every node, 3 levels, one top');
SELECT is((SELECT levels FROM hierarchy_levels('zips', 'child', 'parent') WHERE value = '01234'),
		  '{z012,state0,*}'::text[], 'a leaf''s levels');
CREATE TABLE chain AS SELECT 'c' || i AS child, 'c' || (i + 1) AS parent FROM generate_series(0, 2999) i;
SELECT is(pg_temp.summary('chain'), '3001 9003000 1', 'a chain of depth 3,000 within 20 s');
SELECT is((SELECT levels[1:2] || levels[2999:3000] FROM hierarchy_levels('chain', 'child', 'parent') WHERE value = 'c2998'),
		  '{c2999,c3000,c3000,c3000}'::text[], 'a node near the top repeats the top above its depth');

SELECT * FROM finish();
ROLLBACK;
