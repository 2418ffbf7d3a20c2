-- Property tests of qid_lattice's heuristic search (search => 'heuristic'):
-- on random tables with random nested hierarchies (lattice_cases.psql), its
-- best node is anonymous by a plain-SQL GROUP BY, every node it evaluated
-- has the exact run's figures, its best loss is never below the exact
-- optimum, and with a budget covering the lattice it finds the exact best
-- node under every metric; it is deterministic; lattices past the exact
-- search's 10,000,000 nodes (2^24 and 2^62 nodes) run within the budget and
-- give an anonymous node; qid_anonymize_into writes the release of the node
-- it found; a statement timeout cancels a long search.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(4 * 5 + 6 + 4 + 3 + 1);

\ir lattice_cases.psql

-- The rows of the classes of node lv that fail k or distinct l (NULL is one
-- sensitive value), by one GROUP BY over the generalized columns
CREATE FUNCTION pg_temp.ref_suppressed(name text, heights integer[], lv integer[], k integer, l integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	cols text[] := ARRAY['a', 'b', 'c'];
	src text := format('%I t', 't_' || name);
	g text[] := '{}';
	r bigint;
BEGIN
	FOR i IN 1 .. 3 LOOP
		IF heights[i] > 0 THEN
			src := src || format(' LEFT JOIN %I h%s ON h%s.value IS NOT DISTINCT FROM t.%I::text',
								 'h_' || name || '_' || cols[i], i, i, cols[i]);
		END IF;
		g := g || CASE WHEN lv[i] = 0 THEN format('t.%I', cols[i]) ELSE format('h%s.l%s', i, lv[i]) END;
	END LOOP;
	EXECUTE format($q$SELECT coalesce(sum(n), 0) FROM (
		SELECT count(*) AS n, count(DISTINCT t.s) + max(CASE WHEN t.s IS NULL THEN 1 ELSE 0 END) AS d
		FROM %s GROUP BY %s) c WHERE n < %s OR d < %s$q$, src, array_to_string(g, ', '), k, l) INTO r;
	RETURN r;
END
$$;

-- one lattice run as rows, in the order returned: exact (every node
-- evaluated) when budget is NULL, else heuristic with that budget
CREATE FUNCTION pg_temp.run(name text, heights integer[], k integer, supp float8, l integer, model text,
							metric text, budget integer)
RETURNS TABLE (levels integer[], anonymous boolean, minimal boolean, evaluated boolean,
			   rows_suppressed bigint, classes bigint, height integer, precision_loss float8,
			   discernibility float8, entropy_loss float8, suppressed_share float8, loss float8,
			   best boolean, rows bigint, ord bigint)
LANGUAGE sql AS $$
	SELECT set_config('qidrisk.lattice_heuristic_nodes', coalesce(budget, 10000)::text, true);
	SELECT q.* FROM qid_lattice('t_' || name, '{a,b,c}', pg_temp.hierarchies(name, heights), k, supp,
								CASE WHEN l > 1 THEN 's' END, l, model, NULL, NULL, 'equal', metric,
								CASE WHEN budget IS NULL THEN 'all' ELSE 'anonymous' END,
								CASE WHEN budget IS NULL THEN 'exact' ELSE 'heuristic' END) WITH ORDINALITY AS q(levels, anonymous, minimal, evaluated,
								rows_suppressed, classes, height, precision_loss, discernibility,
								entropy_loss, suppressed_share, loss, best, rows, ord)
$$;

CREATE FUNCTION pg_temp.close(a float8, b float8) RETURNS boolean
LANGUAGE sql AS $$ SELECT a = b OR abs(a - b) <= 1e-9 * greatest(abs(a), abs(b)) $$;

-- the cases: k, suppression, distinct or entropy l-diversity (entropy with
-- suppression is not monotone, so the exact search evaluates every node)
CREATE TABLE cases (name text, seed float8, nrows integer, heights integer[], k integer, supp float8,
					l integer, model text);
INSERT INTO cases VALUES
	('h1', 0.11, 300, '{2,3,2}', 3, 0, 1, 'distinct'),
	('h2', 0.22, 500, '{3,2,3}', 5, 0.05, 1, 'distinct'),
	('h3', 0.33, 400, '{2,2,3}', 2, 0.02, 2, 'distinct'),
	('h4', 0.44, 400, '{3,3,2}', 3, 0.03, 2, 'entropy');
SELECT pg_temp.make_case(name, seed, nrows, heights) FROM cases;
CREATE TABLE metrics (metric text);
INSERT INTO metrics VALUES ('height'), ('precision'), ('discernibility'), ('entropy'), ('suppressed'), ('loss');

-- every run: exact (every node evaluated), heuristic with the default budget
-- (which covers these lattices) and with budgets of 3, 8 and 15 nodes
CREATE TABLE runs AS
SELECT c.name, m.metric, b.budget, r.*
FROM cases c CROSS JOIN metrics m
CROSS JOIN (VALUES (NULL::integer), (10000), (3), (8), (15)) b(budget)
CROSS JOIN LATERAL pg_temp.run(c.name, c.heights, c.k, c.supp, c.l, c.model, m.metric, b.budget) r;
RESET qidrisk.lattice_heuristic_nodes;
CREATE TABLE exact AS SELECT * FROM runs WHERE budget IS NULL;
CREATE TABLE heur AS SELECT * FROM runs WHERE budget IS NOT NULL;

-- per case: 5 tests
SELECT is((SELECT array_agg(DISTINCT h.metric || '/' || h.budget)
		   FROM heur h WHERE h.name = c.name AND h.best
			AND (h.rows_suppressed <> pg_temp.ref_suppressed(c.name, c.heights, h.levels, c.k, c.l)
				 OR h.rows_suppressed > floor(c.supp * h.rows))),
		  NULL, c.name || ': the best node found is anonymous by a plain-SQL GROUP BY (every metric and budget)')
FROM cases c ORDER BY c.name;
SELECT is((SELECT count(*) FROM heur h JOIN exact e USING (name, metric, levels)
		   WHERE h.name = c.name
			 AND NOT (h.evaluated AND h.anonymous = e.anonymous AND h.rows_suppressed = e.rows_suppressed
					  AND h.classes = e.classes AND h.height = e.height
					  AND pg_temp.close(h.precision_loss, e.precision_loss)
					  AND h.discernibility = e.discernibility AND pg_temp.close(h.entropy_loss, e.entropy_loss)
					  AND h.suppressed_share = e.suppressed_share AND pg_temp.close(h.loss, e.loss)
					  AND (h.minimal IS NULL OR h.minimal = e.minimal) AND h.rows = e.rows)),
		  0::bigint, c.name || ': every node the search evaluated has the exact run''s figures')
FROM cases c ORDER BY c.name;
SELECT is((SELECT array_agg(h.metric || '/' || h.budget) FROM heur h JOIN exact e USING (name, metric)
		   WHERE h.name = c.name AND h.best AND e.best AND h.loss < e.loss AND NOT pg_temp.close(h.loss, e.loss)),
		  NULL, c.name || ': no best node found beats the exact optimum')
FROM cases c ORDER BY c.name;
SELECT is((SELECT array_agg(m.metric) FROM metrics m
		   WHERE (SELECT levels FROM heur h WHERE h.name = c.name AND h.metric = m.metric AND h.budget = 10000 AND h.best)
				 IS DISTINCT FROM
				 (SELECT levels FROM exact e WHERE e.name = c.name AND e.metric = m.metric AND e.best)
			 AND (m.metric <> 'entropy' OR NOT pg_temp.close(
					(SELECT loss FROM heur h WHERE h.name = c.name AND h.metric = m.metric AND h.budget = 10000 AND h.best),
					(SELECT loss FROM exact e WHERE e.name = c.name AND e.metric = m.metric AND e.best)))),
		  NULL, c.name || ': with a budget covering the lattice, the exact best node under every metric (entropy: its loss)')
FROM cases c ORDER BY c.name;
SELECT ok((SELECT bool_and(n <= budget AND n = nodes) FROM
			(SELECT metric, budget, count(*) AS n, count(DISTINCT levels) AS nodes FROM heur
			 WHERE name = c.name GROUP BY 1, 2) x),
		  c.name || ': no more nodes evaluated than the budget, one row each')
FROM cases c ORDER BY c.name;

-- the budget is spent where needed: the full search is complete within the lattice
SELECT ok((SELECT bool_and(n <= nodes) FROM
			(SELECT name, metric, count(*) AS n FROM heur WHERE budget = 10000 GROUP BY 1, 2) h
			JOIN (SELECT name, metric, count(*) AS nodes FROM exact GROUP BY 1, 2) e USING (name, metric)),
		  'the default budget evaluates each node at most once');
SELECT is((SELECT count(*) FROM heur WHERE best AND NOT anonymous), 0::bigint, 'best is an anonymous node');
SELECT is((SELECT count(*) FROM (SELECT name, metric, budget FROM heur WHERE best GROUP BY 1, 2, 3 HAVING count(*) > 1) x),
		  0::bigint, 'at most one best node per run');
SELECT is((SELECT count(*) FROM heur
		   WHERE metric <> 'loss' AND loss IS DISTINCT FROM CASE metric WHEN 'height' THEN height WHEN 'precision' THEN precision_loss
				 WHEN 'discernibility' THEN discernibility WHEN 'entropy' THEN entropy_loss ELSE suppressed_share END),
		  0::bigint, 'loss is the figure of the metric chosen');
SELECT is((SELECT string_agg(r::text, ';' ORDER BY ord) FROM pg_temp.run('h4', '{3,3,2}', 3, 0.03, 2, 'entropy',
			'discernibility', 8) r),
		  (SELECT string_agg(r::text, ';' ORDER BY ord) FROM pg_temp.run('h4', '{3,3,2}', 3, 0.03, 2, 'entropy',
			'discernibility', 8) r),
		  'deterministic: two runs return the same rows in the same order');
RESET qidrisk.lattice_heuristic_nodes;
SELECT is((SELECT node FROM qid_anonymize_into('t_h2', '{a,b,c}', pg_temp.hierarchies('h2', '{3,2,3}'), 'rel_h2', 5, 0.05,
											 search => 'heuristic')),
		  (SELECT levels FROM exact WHERE name = 'h2' AND metric = 'discernibility' AND best),
		  'qid_anonymize_into with a budget covering the lattice writes the exact best node');

-- past the exact search's bound: 24 columns of two levels (2^24 nodes), 40 rows
DROP TABLE IF EXISTS wide;
SELECT format('CREATE TABLE wide (%s)', string_agg(format('c%s integer', i), ', ')) FROM generate_series(1, 62) i \gexec
SELECT setseed(0.5);
SELECT format('INSERT INTO wide SELECT %s FROM generate_series(1, 40)', string_agg('floor(random() * 3)::integer', ', '))
FROM generate_series(1, 62) i \gexec
CREATE TABLE h_wide (value text, l1 text);
INSERT INTO h_wide VALUES ('0', '*'), ('1', '*'), ('2', '*');
-- the rows of node lv's failing classes over wide's first columns (level 1 is *)
CREATE FUNCTION pg_temp.wide_suppressed(lv integer[], k integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
BEGIN
	EXECUTE format('SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM wide GROUP BY %s) c WHERE n < %s',
				   (SELECT coalesce(string_agg(format('c%s', i), ', ') FILTER (WHERE lv[i] = 0), '()')
					FROM generate_series(1, cardinality(lv)) i), k)
	INTO r;
	RETURN r;
END
$$;
CREATE FUNCTION pg_temp.wide_run(n integer, k integer, supp float8)
RETURNS SETOF record
LANGUAGE sql AS $$
	SELECT levels, anonymous, rows_suppressed, best, clock_timestamp()
	FROM qid_lattice('wide', (SELECT array_agg('c' || i ORDER BY i) FROM generate_series(1, n) i),
					 (SELECT jsonb_object_agg('c' || i, 'h_wide') FROM generate_series(1, n) i), k, supp,
					 search => 'heuristic')
$$;
CREATE TABLE wide_start AS SELECT clock_timestamp() AS t;
CREATE TABLE wide24 AS
SELECT * FROM pg_temp.wide_run(24, 3, 0.05) AS r(levels integer[], anonymous boolean, rows_suppressed bigint,
												  best boolean, at timestamptz);
SELECT is((SELECT count(*) FROM wide24), 10000::bigint,
		  '2^24 nodes: the default budget of 10,000 nodes evaluated, one row each');
SELECT ok((SELECT max(at) - (SELECT t FROM wide_start) < interval '60 seconds' FROM wide24),
		  '2^24 nodes: within bounded time');
SELECT is((SELECT pg_temp.wide_suppressed(levels, 3) <= floor(0.05 * 40) AND rows_suppressed = pg_temp.wide_suppressed(levels, 3)
		   FROM wide24 WHERE best),
		  true, '2^24 nodes: the best node found is anonymous by a plain-SQL GROUP BY');
SET LOCAL qidrisk.lattice_heuristic_nodes = 2000;
CREATE TABLE wide62 AS
SELECT * FROM pg_temp.wide_run(62, 2, 0) AS r(levels integer[], anonymous boolean, rows_suppressed bigint,
											   best boolean, at timestamptz);
SELECT is((SELECT pg_temp.wide_suppressed(levels, 2) FROM wide62 WHERE best), 0::bigint,
		  '2^62 nodes (node numbers near the int64 bound): the best node found is anonymous by a plain-SQL GROUP BY');
RESET qidrisk.lattice_heuristic_nodes;

-- qid_anonymize_into writes the release of the node the search found
CREATE TABLE wide_release AS
SELECT * FROM qid_anonymize_into('wide', (SELECT array_agg('c' || i ORDER BY i) FROM generate_series(1, 24) i),
								 (SELECT jsonb_object_agg('c' || i, 'h_wide') FROM generate_series(1, 24) i),
								 'rel_wide', 3, 0.05, search => 'heuristic');
SELECT is((SELECT node FROM wide_release), (SELECT levels FROM wide24 WHERE best),
		  'qid_anonymize_into (heuristic) writes the node qid_lattice''s heuristic search found');
SELECT ok((SELECT k_anonymity >= 3 AND rows_released + rows_suppressed = 40
				  AND rows_suppressed = (SELECT rows_suppressed FROM wide24 WHERE best) FROM wide_release),
		  'its release is 3-anonymous and suppresses the rows qid_lattice counted');
SELECT is((SELECT count(*) FROM rel_wide), (SELECT rows_released FROM wide_release), 'the release holds the rows released');

-- cancellable: a search of 1,000,000 nodes of 24 columns over 20,000 rows
-- (minutes) stops at a statement timeout (throws_ok's WHEN OTHERS does not
-- catch a cancellation)
CREATE TABLE wide_big AS SELECT * FROM wide LIMIT 0;
SELECT format('INSERT INTO wide_big SELECT %s FROM generate_series(1, 20000)',
			  string_agg(CASE WHEN i <= 24 THEN 'floor(random() * 3)::integer' ELSE '0' END, ', '))
FROM generate_series(1, 62) i \gexec
CREATE FUNCTION pg_temp.cancelled() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM count(*) FROM qid_lattice('wide_big', (SELECT array_agg('c' || i ORDER BY i) FROM generate_series(1, 24) i),
									  (SELECT jsonb_object_agg('c' || i, 'h_wide') FROM generate_series(1, 24) i), 3,
									  search => 'heuristic');
	RETURN 'finished';
EXCEPTION WHEN query_canceled THEN
	RETURN SQLSTATE;
END
$$;
SET LOCAL qidrisk.lattice_heuristic_nodes = 1000000;
SET LOCAL statement_timeout = '300ms';
SELECT is(pg_temp.cancelled(), '57014', 'a statement timeout cancels a long heuristic search');
SET LOCAL statement_timeout = 0;
RESET qidrisk.lattice_heuristic_nodes;

SELECT * FROM finish();
ROLLBACK;
