-- Property tests of qid_lattice: on random tables with random nested
-- hierarchies, every node's classification (anonymous, minimal), suppressed
-- rows, classes (the release's: those that pass), height, precision loss,
-- discernibility, non-uniform entropy, suppressed share, its loss under each
-- of the five metrics and the best node under each equal a plain-SQL
-- reference that runs one GROUP BY per node and scores every cell (floats
-- within a relative 1e-9); with and without
-- suppression, with distinct, entropy and recursive l-diversity and
-- t-closeness (equal and ordered distance); for every evaluation mode
-- (tagged, anonymous, all, best: there the nodes it classifies must match,
-- and every anonymous node whose loss ties the best's or beats it must have
-- been evaluated).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
-- the references' generated queries are small; compiling them would dominate
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(70);

\ir lattice_cases.psql

-- The reference figures of one node: one GROUP BY over the generalized
-- columns, the classes that pass counted, then every cell scored: precision
-- (Sweeney 2002) level/height of its column (0 without a hierarchy), 1 when
-- its row is suppressed;
-- non-uniform entropy -log2(rows with the cell's value / rows with its
-- generalized value), where a suppressed cell is generalized to every row
CREATE FUNCTION pg_temp.ref_node(name text, heights integer[], lv integer[], k integer,
								 sens boolean, l integer, model text, c float8, t float8, dist text,
								 OUT classes bigint, OUT suppressed bigint, OUT dm float8,
								 OUT prec float8, OUT ent float8)
LANGUAGE plpgsql AS $$
DECLARE
	cols text[] := ARRAY['a', 'b', 'c'];
	src text := format('%I t', 't_' || name);
	g text[] := '{}';
	cell_prec text[] := '{}';
	keys text;
	wkeys text;
	match text;
	n bigint;
	pass text;
BEGIN
	FOR i IN 1 .. 3 LOOP
		IF heights[i] > 0 THEN
			src := src || format(' LEFT JOIN %I h%s ON h%s.value IS NOT DISTINCT FROM t.%I::text',
								 'h_' || name || '_' || cols[i], i, i, cols[i]);
		END IF;
		g := g || CASE WHEN lv[i] = 0 THEN format('t.%I', cols[i]) ELSE format('h%s.l%s', i, lv[i]) END;
		cell_prec := cell_prec || format('CASE WHEN NOT pass THEN 1 ELSE %s END',
										 CASE WHEN heights[i] = 0 THEN '0'
											  ELSE format('%s::float8 / %s', lv[i], heights[i]) END);
	END LOOP;
	keys := 'g1, g2, g3';
	wkeys := 'w.g1, w.g2, w.g3';
	match := 'o.g1 IS NOT DISTINCT FROM c.g1 AND o.g2 IS NOT DISTINCT FROM c.g2 AND o.g3 IS NOT DISTINCT FROM c.g3';
	EXECUTE format('SELECT count(*) FROM %I', 't_' || name) INTO n;
	pass := format('size >= %s', k);
	IF l > 1 THEN
		pass := pass || format(' AND d >= %s', l);
		IF model = 'entropy' THEN
			pass := pass || format(' AND ent >= ln(%s) * (1 - 1e-9)', l);
		ELSIF model = 'recursive' THEN
			pass := pass || format(' AND r1 < %s * tail', c);
		END IF;
	END IF;
	IF t IS NOT NULL THEN
		pass := pass || format(' AND %s <= %s', CASE dist WHEN 'equal' THEN 'teq' ELSE 'tord' END, t);
	END IF;
	EXECUTE format($q$
		WITH r AS (
			SELECT t.a AS v1, t.b AS v2, t.c AS v3, %1$s AS g1, %2$s AS g2, %3$s AS g3, %4$s AS s
			FROM %5$s
		), g AS (
			SELECT g1, g2, g3, s, count(*) AS n FROM r GROUP BY 1, 2, 3, 4
		), w AS (
			SELECT g.*, sum(n) OVER (PARTITION BY g1, g2, g3) AS size,
				   row_number() OVER (PARTITION BY g1, g2, g3 ORDER BY n DESC) AS r
			FROM g
		), q AS (
			SELECT s, count(*)::float8 / %6$s AS q, row_number() OVER (ORDER BY s) AS rk
			FROM (SELECT %7$s AS s FROM %8$I) x GROUP BY s
		), c AS (
			SELECT g1, g2, g3, max(size) AS size, count(*) AS d,
				   -sum(n::float8 / size * ln(n::float8 / size)) AS ent,
				   max(n) FILTER (WHERE r = 1) AS r1,
				   coalesce(sum(n) FILTER (WHERE r >= %9$s), 0) AS tail,
				   (sum(abs(n::float8 / size - q.q) - q.q) + 1) / 2 AS teq
			FROM w LEFT JOIN q ON q.s IS NOT DISTINCT FROM w.s
			GROUP BY g1, g2, g3
		), o AS (
			%12$s
		), judged AS (
			SELECT c.g1, c.g2, c.g3, c.size, (%10$s) AS pass FROM c JOIN o ON %11$s
		), x AS (
			SELECT j.pass,
				   count(*) OVER (PARTITION BY r.v1) AS cv1, count(*) OVER (PARTITION BY r.g1) AS cg1,
				   count(*) OVER (PARTITION BY r.v2) AS cv2, count(*) OVER (PARTITION BY r.g2) AS cg2,
				   count(*) OVER (PARTITION BY r.v3) AS cv3, count(*) OVER (PARTITION BY r.g3) AS cg3
			FROM r JOIN judged j ON r.g1 IS NOT DISTINCT FROM j.g1 AND r.g2 IS NOT DISTINCT FROM j.g2
								AND r.g3 IS NOT DISTINCT FROM j.g3
		)
		SELECT (SELECT count(*) FILTER (WHERE pass) FROM judged),
			   (SELECT coalesce(sum(size) FILTER (WHERE NOT pass), 0) FROM judged),
			   (SELECT coalesce(sum(size::float8 * size) FILTER (WHERE pass), 0) FROM judged),
			   (SELECT coalesce(sum(%13$s + %14$s + %15$s), 0) FROM x) / (3 * %6$s),
			   (SELECT coalesce(sum(CASE WHEN pass THEN ln(cg1::float8 / cv1) + ln(cg2::float8 / cv2) + ln(cg3::float8 / cv3)
										 ELSE ln(%6$s::float8 / cv1) + ln(%6$s::float8 / cv2) + ln(%6$s::float8 / cv3) END), 0)
				FROM x) / ln(2)$q$,
		g[1], g[2], g[3], CASE WHEN sens THEN 't.s' ELSE 'NULL::int' END, src,
		greatest(n, 1), CASE WHEN sens THEN 's' ELSE 'NULL::int' END, 't_' || name, l,
		pass, match,
		CASE WHEN t IS NOT NULL AND dist = 'ordered' THEN $o$
			SELECT g1, g2, g3, sum(abs(cum)) / greatest((SELECT count(*) FROM q) - 1, 1) AS tord
			FROM (SELECT c.g1, c.g2, c.g3,
						 sum(coalesce(w.n, 0)::float8 / c.size - q.q)
							 OVER (PARTITION BY c.g1, c.g2, c.g3 ORDER BY q.rk) AS cum
				  FROM c CROSS JOIN q
				  LEFT JOIN w ON w.g1 IS NOT DISTINCT FROM c.g1 AND w.g2 IS NOT DISTINCT FROM c.g2
								 AND w.g3 IS NOT DISTINCT FROM c.g3 AND w.s IS NOT DISTINCT FROM q.s) x
			GROUP BY g1, g2, g3$o$
		ELSE 'SELECT g1, g2, g3, 0::float8 AS tord FROM c' END,
		cell_prec[1], cell_prec[2], cell_prec[3])
	INTO classes, suppressed, dm, prec, ent;
	dm := dm + suppressed::float8 * n;
END
$$;

-- A float equal to its reference within a relative 1e-9 (so a reference 0 is
-- met only by 0)
CREATE FUNCTION pg_temp.near(got float8, ref float8) RETURNS boolean
LANGUAGE sql AS $$ SELECT abs(got - ref) <= 1e-9 * abs(ref) $$;

-- Mismatches between qid_lattice (in one evaluation mode) and the reference:
-- nodes whose classification or figures differ, and per metric the nodes whose
-- loss or best flag differs. The best node is the anonymous node of least loss
-- (losses within the tolerance tie), ties to the lower height, then the first
-- levels; in tagged mode a monotone model (no suppression possible, or
-- k-anonymity and distinct l-diversity) reports no best node.
CREATE FUNCTION pg_temp.mismatches(name text, heights integer[], k integer, ms float8,
								   sens boolean DEFAULT false, l integer DEFAULT 1,
								   model text DEFAULT 'distinct', c float8 DEFAULT NULL,
								   t float8 DEFAULT NULL, dist text DEFAULT 'equal',
								   mode text DEFAULT 'all')
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	monotone boolean;
	bad bigint;
	bad_metric bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM %I', 't_' || name) INTO n;
	monotone := floor(ms * n) = 0 OR ((l = 1 OR model = 'distinct') AND t IS NULL);
	CREATE TEMP TABLE ref ON COMMIT DROP AS
	SELECT ARRAY[x, y, z] AS lv, x + y + z AS height, r.*, r.suppressed <= floor(ms * n) AS anonymous,
		   r.suppressed::float8 / n AS share
	FROM generate_series(0, heights[1]) x, generate_series(0, heights[2]) y,
		 generate_series(0, heights[3]) z,
		 LATERAL pg_temp.ref_node(name, heights, ARRAY[x, y, z], k, sens, l, model, c, t, dist) r;
	CREATE TEMP TABLE got ON COMMIT DROP AS
	SELECT * FROM qid_lattice(('t_' || name)::regclass, ARRAY['a', 'b', 'c'],
							  pg_temp.hierarchies(name, heights), k, ms,
							  CASE WHEN sens THEN 's' END, l, model, c, t, dist,
							  'discernibility', mode);
	SELECT count(*) INTO bad
	FROM ref FULL JOIN got ON got.levels = ref.lv
	WHERE got.levels IS NULL OR ref.lv IS NULL
	   OR (got.anonymous IS DISTINCT FROM ref.anonymous AND NOT (mode = 'best' AND got.anonymous IS NULL))
	   OR (got.minimal IS DISTINCT FROM (ref.anonymous AND NOT EXISTS (
			SELECT FROM ref p WHERE p.anonymous AND
				(SELECT sum(ref.lv[i] - p.lv[i]) FROM generate_series(1, 3) i) = 1 AND
				(SELECT bool_and(p.lv[i] <= ref.lv[i]) FROM generate_series(1, 3) i)))
		   AND NOT (mode = 'best' AND got.minimal IS NULL))
	   OR (got.minimal IS NULL AND (mode <> 'best' OR got.anonymous IS FALSE))
	   OR (got.evaluated AND got.anonymous IS NULL)
	   OR (got.evaluated AND (got.rows_suppressed = ref.suppressed AND got.classes = ref.classes
							  AND got.discernibility = ref.dm
							  AND pg_temp.near(got.precision_loss, ref.prec)
							  AND pg_temp.near(got.entropy_loss, ref.ent)
							  AND pg_temp.near(got.suppressed_share, ref.share)) IS NOT TRUE)
	   OR (NOT got.evaluated AND num_nonnulls(got.rows_suppressed, got.classes, got.precision_loss,
											  got.discernibility, got.entropy_loss, got.suppressed_share,
											  got.loss) > 0)
	   OR got.evaluated IS NULL
	   OR (mode = 'all' AND NOT got.evaluated)
	   OR (mode = 'anonymous' AND got.anonymous AND NOT got.evaluated)
	   OR (NOT monotone AND NOT got.evaluated AND mode <> 'best')
	   OR got.height IS DISTINCT FROM ref.height;
	CREATE TEMP TABLE ref_loss ON COMMIT DROP AS
	SELECT m.metric, ref.lv, ref.height, ref.anonymous,
		   CASE m.metric WHEN 'height' THEN ref.height WHEN 'precision' THEN ref.prec
			   WHEN 'discernibility' THEN ref.dm WHEN 'entropy' THEN ref.ent ELSE ref.share END AS loss
	FROM ref, unnest(ARRAY['height', 'precision', 'discernibility', 'entropy', 'suppressed']) m(metric);
	CREATE TEMP TABLE ref_best ON COMMIT DROP AS
	SELECT DISTINCT ON (metric) metric, lv
	FROM ref_loss r
	WHERE anonymous AND loss <= (SELECT min(loss) * (1 + 1e-9) FROM ref_loss b WHERE b.anonymous AND b.metric = r.metric)
	ORDER BY metric, height, lv;
	CREATE TEMP TABLE got_loss ON COMMIT DROP AS
	SELECT m.metric, q.levels, q.evaluated, q.loss, q.best
	FROM unnest(ARRAY['height', 'precision', 'discernibility', 'entropy', 'suppressed']) m(metric),
		 LATERAL qid_lattice(('t_' || name)::regclass, ARRAY['a', 'b', 'c'],
							 pg_temp.hierarchies(name, heights), k, ms,
							 CASE WHEN sens THEN 's' END, l, model, c, t, dist, m.metric, mode) q;
	SELECT count(*) INTO bad_metric
	FROM ref_loss r FULL JOIN got_loss g ON g.metric = r.metric AND g.levels = r.lv
	LEFT JOIN ref_best b ON b.metric = r.metric
	LEFT JOIN ref_loss bl ON bl.metric = b.metric AND bl.lv = b.lv
	WHERE g.levels IS NULL OR r.lv IS NULL
	   -- evaluate => 'best' evaluates every anonymous node that ties the best or beats it
	   OR (mode = 'best' AND r.anonymous AND r.loss <= bl.loss * (1 + 1e-9) AND NOT g.evaluated)
	   OR (g.evaluated AND CASE WHEN r.metric IN ('height', 'discernibility') THEN g.loss = r.loss
								ELSE pg_temp.near(g.loss, r.loss) END IS NOT TRUE)
	   OR (g.evaluated IS NOT TRUE AND g.loss IS NOT NULL)
	   OR g.best IS DISTINCT FROM CASE WHEN mode = 'tagged' AND monotone THEN NULL
									   ELSE r.lv IS NOT DISTINCT FROM b.lv END;
	DROP TABLE ref, got, ref_loss, ref_best, got_loss;
	RETURN bad + bad_metric;
END
$$;

SELECT pg_temp.make_case('p1', 0.11, 120, ARRAY[2, 3, 1]);
SELECT pg_temp.make_case('p2', 0.22, 300, ARRAY[3, 2, 2]);
SELECT pg_temp.make_case('p3', 0.33, 60, ARRAY[1, 0, 3]);
SELECT pg_temp.make_case('p4', 0.44, 200, ARRAY[2, 2, 2]);

-- k-anonymity, no suppression, every mode
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 3, 0), 0::bigint, 'p1 k=3: all nodes as GROUP BY');
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 3, 0, mode => 'tagged'), 0::bigint, 'p1 k=3 tagged');
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 3, 0, mode => 'anonymous'), 0::bigint, 'p1 k=3 anonymous');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 5, 0), 0::bigint, 'p2 k=5');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 5, 0, mode => 'tagged'), 0::bigint, 'p2 k=5 tagged');
SELECT is(pg_temp.mismatches('p3', ARRAY[1, 0, 3], 2, 0, mode => 'tagged'), 0::bigint, 'p3 k=2 tagged, a column without hierarchy');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 1, 0, mode => 'tagged'), 0::bigint, 'p4 k=1: every node anonymous');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 1000, 0, mode => 'tagged'), 0::bigint, 'p4 k > rows: no node anonymous');

-- with suppression
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 4, 0.05), 0::bigint, 'p1 k=4, 5% suppression');
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 4, 0.05, mode => 'tagged'), 0::bigint, 'p1 k=4, 5% suppression, tagged');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 10, 0.1, mode => 'tagged'), 0::bigint, 'p2 k=10, 10% suppression, tagged');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 10, 0.1, mode => 'anonymous'), 0::bigint, 'p2 k=10, 10% suppression, anonymous');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 6, 0.3, mode => 'tagged'), 0::bigint, 'p4 k=6, 30% suppression, tagged');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 6, 1, mode => 'tagged'), 0::bigint, 'p4 everything may be suppressed');

-- distinct l-diversity, with and without suppression
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 2, 0, true, 2), 0::bigint, 'p1 distinct l=2');
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 2, 0, true, 2, mode => 'tagged'), 0::bigint, 'p1 distinct l=2 tagged');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 3, 0.05, true, 3, mode => 'tagged'), 0::bigint, 'p2 distinct l=3, 5% suppression, tagged');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 2, 0.2, true, 2, mode => 'anonymous'), 0::bigint, 'p4 distinct l=2, 20% suppression');

-- entropy l-diversity
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 2, 0, true, 2, 'entropy', mode => 'tagged'), 0::bigint, 'p1 entropy l=2 tagged');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0, true, 3, 'entropy'), 0::bigint, 'p2 entropy l=3');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0.1, true, 2, 'entropy'), 0::bigint, 'p2 entropy l=2, 10% suppression (every node evaluated)');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 2, 0, true, 2, 'entropy', mode => 'tagged'), 0::bigint, 'p4 entropy l=2 tagged');

-- recursive (c,l)-diversity
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 2, 0, true, 2, 'recursive', 3, mode => 'tagged'), 0::bigint, 'p1 recursive (3,2) tagged');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0, true, 3, 'recursive', 2), 0::bigint, 'p2 recursive (2,3)');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0.15, true, 2, 'recursive', 1.5), 0::bigint, 'p2 recursive (1.5,2), 15% suppression');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 1, 0, true, 2, 'recursive', 4, mode => 'anonymous'), 0::bigint, 'p4 recursive (4,2)');

-- t-closeness, equal and ordered distance
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 1, 0, true, t => 0.3137, mode => 'tagged'), 0::bigint, 'p1 t=0.3137 equal tagged');
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 1, 0, true, t => 0.2113, dist => 'ordered', mode => 'tagged'), 0::bigint, 'p1 t=0.2113 ordered tagged');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0, true, t => 0.2471), 0::bigint, 'p2 t=0.2471 equal');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0, true, t => 0.1529, dist => 'ordered'), 0::bigint, 'p2 t=0.1529 ordered');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 2, 0.1, true, t => 0.2719), 0::bigint, 'p4 t=0.2719 equal, 10% suppression');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 2, 0.1, true, t => 0.1733, dist => 'ordered'), 0::bigint, 'p4 t=0.1733 ordered, 10% suppression');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 3, 0, true, 2, 'entropy', t => 0.35, mode => 'tagged'), 0::bigint, 'p4 k=3, entropy l=2 and t=0.35 together');

-- evaluate => 'best': the reference's best node under every metric, the
-- nodes it classifies classified alike
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 3, 0, mode => 'best'), 0::bigint, 'p1 k=3 best');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 5, 0, mode => 'best'), 0::bigint, 'p2 k=5 best');
SELECT is(pg_temp.mismatches('p3', ARRAY[1, 0, 3], 2, 0, mode => 'best'), 0::bigint, 'p3 k=2 best, a column without hierarchy');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 1, 0, mode => 'best'), 0::bigint, 'p4 k=1 best: every node anonymous');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 1000, 0, mode => 'best'), 0::bigint, 'p4 k > rows best: no node anonymous');
SELECT is(pg_temp.mismatches('p1', ARRAY[2, 3, 1], 4, 0.05, mode => 'best'), 0::bigint, 'p1 k=4, 5% suppression, best');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 10, 0.1, mode => 'best'), 0::bigint, 'p2 k=10, 10% suppression, best');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 6, 1, mode => 'best'), 0::bigint, 'p4 everything may be suppressed, best');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 3, 0.05, true, 3, mode => 'best'), 0::bigint, 'p2 distinct l=3, 5% suppression, best');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0.1, true, 2, 'entropy', mode => 'best'), 0::bigint, 'p2 entropy l=2, 10% suppression, best (not monotone)');
SELECT is(pg_temp.mismatches('p2', ARRAY[3, 2, 2], 2, 0.15, true, 2, 'recursive', 1.5, mode => 'best'), 0::bigint, 'p2 recursive (1.5,2), 15% suppression, best');
SELECT is(pg_temp.mismatches('p4', ARRAY[2, 2, 2], 2, 0.1, true, t => 0.1733, dist => 'ordered', mode => 'best'), 0::bigint, 'p4 t=0.1733 ordered, 10% suppression, best');
-- and it skips nodes: fewer evaluated than with 'anonymous', some left unclassified
SELECT ok((SELECT count(*) FILTER (WHERE evaluated) FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.1, metric => 'loss', evaluate => 'best'))
		  < (SELECT count(*) FILTER (WHERE evaluated) FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.1, metric => 'loss'))
		  AND (SELECT count(*) FILTER (WHERE anonymous IS NULL) > 0 FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.1, metric => 'loss', evaluate => 'best')),
		  'best evaluates fewer nodes than anonymous and leaves some unclassified');

-- the best node minimizes the chosen loss among anonymous nodes
SELECT is((SELECT count(*) FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.05) WHERE best),
		  1::bigint, 'exactly one best node');
SELECT is((SELECT loss FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.05, metric => 'entropy') WHERE best),
		  (SELECT min(entropy_loss) FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.05) WHERE anonymous),
		  'best under entropy has the least entropy loss');
SELECT is((SELECT precision_loss = suppressed_share AND rows_suppressed > 0
		   FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.05, evaluate => 'all') WHERE levels = '{0,0,0}'),
		  true, 'precision loss at the bottom: only suppressed cells count');
SELECT ok((SELECT abs(precision_loss - ((300 - rows_suppressed) * (1.0 / 3 + 1.0 / 2) + rows_suppressed * 3.0) / (300 * 3)) < 1e-12
		   FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, 0.05, evaluate => 'all') WHERE levels = '{1,1,0}'),
		  'precision loss (Sweeney) of a node with suppression');
SELECT is((SELECT entropy_loss FROM qid_lattice('t_p4', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p4', ARRAY[2, 2, 2]), 1) WHERE levels = '{0,0,0}'),
		  0::float8, 'no information lost at the bottom without suppression');
SELECT ok((SELECT abs(entropy_loss - (
			SELECT sum(-log(2, n0::numeric / n1))
			FROM (SELECT count(*) OVER (PARTITION BY t.b) AS n0, count(*) OVER (PARTITION BY h.l1) AS n1
				  FROM t_p4 t JOIN h_p4_b h ON h.value IS NOT DISTINCT FROM t.b) x)::float8) < 1e-9
		   FROM qid_lattice('t_p4', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p4', ARRAY[2, 2, 2]), 1) WHERE levels = '{0,1,0}'),
		  'non-uniform entropy of one generalized column');
SELECT ok((SELECT rows_suppressed > 0 AND abs(entropy_loss - (
			WITH r AS (
				SELECT t.a, t.b, t.c, h1.l1 AS g1, h2.l1 AS g2
				FROM t_p4 t LEFT JOIN h_p4_a h1 ON h1.value IS NOT DISTINCT FROM t.a::text
				LEFT JOIN h_p4_b h2 ON h2.value IS NOT DISTINCT FROM t.b::text
			), x AS (
				SELECT count(*) OVER (PARTITION BY g1, g2, c) AS size,
					   count(*) OVER (PARTITION BY a) AS ca, count(*) OVER (PARTITION BY g1) AS cg1,
					   count(*) OVER (PARTITION BY b) AS cb, count(*) OVER (PARTITION BY g2) AS cg2,
					   count(*) OVER (PARTITION BY c) AS cc, count(*) OVER () AS n
				FROM r
			)
			SELECT sum(CASE WHEN size >= 6 THEN log(2, cg1::numeric / ca) + log(2, cg2::numeric / cb)
						   ELSE log(2, n::numeric / ca) + log(2, n::numeric / cb) + log(2, n::numeric / cc) END)
			FROM x)::float8) < 1e-9
		   FROM qid_lattice('t_p4', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p4', ARRAY[2, 2, 2]), 6, evaluate => 'all')
		   WHERE levels = '{1,1,0}'),
		  'non-uniform entropy with suppressed rows (generalized to everything)');
SELECT is((SELECT count(*) FILTER (WHERE evaluated) < count(*) FILTER (WHERE NOT evaluated)
		   FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, evaluate => 'tagged')),
		  true, 'tagging classifies most nodes without evaluating them');
SELECT is((SELECT count(*) FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 5, evaluate => 'tagged') WHERE best IS NULL),
		  36::bigint, 'tagged mode reports no best node');

-- qid_anonymize_into writes the best node's release: the reference's kept rows, generalized
CREATE TEMP TABLE before_p2 AS SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) AS h FROM t_p2 t;
CREATE TEMP TABLE best_p2 AS
SELECT * FROM qid_lattice('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 4, 0.1) WHERE best;
CREATE TEMP TABLE anon_p2 AS
SELECT * FROM qid_anonymize_into('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 'rel_p2', 4, 0.1);
SELECT is((SELECT node FROM anon_p2), (SELECT levels FROM best_p2), 'qid_anonymize_into picks qid_lattice''s best node');
SELECT is((SELECT rows_suppressed FROM anon_p2), (SELECT rows_suppressed FROM best_p2), 'and suppresses its failing rows');
SELECT is((SELECT rows_released + rows_suppressed FROM anon_p2), 300::bigint, 'every row released or suppressed');
SELECT is((SELECT count(*) FROM rel_p2), (SELECT rows_released FROM anon_p2), 'the release holds the released rows');
SELECT ok((SELECT k_anonymity(a, b, c) >= 4 FROM rel_p2), 'the release is 4-anonymous');
SELECT is((SELECT h FROM before_p2), (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM t_p2 t), 'the source is unchanged');
CREATE FUNCTION pg_temp.generalized(lv integer[]) RETURNS TABLE (a text, b text, c text, s integer, kept boolean, ca boolean, cb boolean, cc boolean)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
		SELECT g1, g2, g3, s, count(*) OVER (PARTITION BY g1, g2, g3) >= 4,
			   g1 IS DISTINCT FROM a::text, g2 IS DISTINCT FROM b::text, g3 IS DISTINCT FROM c::text
		FROM (SELECT t.*, %s AS g1, %s AS g2, %s AS g3 FROM t_p2 t
			  LEFT JOIN h_p2_a h1 ON h1.value IS NOT DISTINCT FROM t.a::text
			  LEFT JOIN h_p2_b h2 ON h2.value IS NOT DISTINCT FROM t.b::text
			  LEFT JOIN h_p2_c h3 ON h3.value IS NOT DISTINCT FROM t.c::text) x$q$,
		CASE WHEN lv[1] = 0 THEN 't.a::text' ELSE 'h1.l' || lv[1] END,
		CASE WHEN lv[2] = 0 THEN 't.b::text' ELSE 'h2.l' || lv[2] END,
		CASE WHEN lv[3] = 0 THEN 't.c::text' ELSE 'h3.l' || lv[3] END);
END
$$;
SELECT is((SELECT count(*) FROM (
			(SELECT a::text, b::text, c::text, s FROM rel_p2
			 EXCEPT ALL SELECT a, b, c, s FROM pg_temp.generalized((SELECT node FROM anon_p2)) WHERE kept)
			UNION ALL
			(SELECT a, b, c, s FROM pg_temp.generalized((SELECT node FROM anon_p2)) WHERE kept
			 EXCEPT ALL SELECT a::text, b::text, c::text, s FROM rel_p2)) d),
		  0::bigint, 'the release''s rows are the kept rows, generalized through the hierarchies');
SELECT is((SELECT values_changed FROM anon_p2),
		  (SELECT jsonb_build_object('a', count(*) FILTER (WHERE kept AND ca), 'b', count(*) FILTER (WHERE kept AND cb),
									 'c', count(*) FILTER (WHERE kept AND cc))
		   FROM pg_temp.generalized((SELECT node FROM anon_p2))),
		  'values changed: only cells whose value differs');
CREATE TEMP TABLE star_p2 AS
SELECT * FROM qid_anonymize_into('t_p2', ARRAY['a', 'b', 'c'], pg_temp.hierarchies('p2', ARRAY[3, 2, 2]), 'rel_p2_star', 4, 0.1, suppression => 'star');
SELECT is((SELECT count(*) FROM rel_p2_star WHERE a = '*' AND b = '*' AND c = '*'),
		  (SELECT rows_suppressed FROM star_p2) + (SELECT count(*) FROM rel_p2 WHERE a::text = '*' AND b::text = '*' AND c::text = '*'),
		  'star: suppressed rows kept with * in every quasi-identifier');
SELECT is((SELECT count(*) FROM rel_p2_star), 300::bigint, 'star: every row released');

-- qid_anonymize_into's own (SQL) classification of the best node's classes agrees
-- with qid_lattice's for every model, and the release meets the target
CREATE FUNCTION pg_temp.anonymize_agrees(name text, heights integer[], k integer, ms float8,
										 l integer, model text, c float8, t float8, dist text,
										 metric text DEFAULT 'discernibility')
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	b record;
	a record;
BEGIN
	SELECT * INTO b FROM qid_lattice(('t_' || name)::regclass, ARRAY['a', 'b', 'c'], pg_temp.hierarchies(name, heights),
									 k, ms, 's', l, model, c, t, dist, metric) WHERE best;
	SELECT * INTO a FROM qid_anonymize_into(('t_' || name)::regclass, ARRAY['a', 'b', 'c'], pg_temp.hierarchies(name, heights),
									   translate(format('rel_%s_%s_%s_%s_%s', name, model, ms, t, dist), '.', '_'), k, ms, 's', l, model, c, t, dist, metric);
	-- some rows suppressed, so that the two classifications have something to agree on
	RETURN a.node = b.levels AND a.rows_suppressed = b.rows_suppressed AND a.rows_suppressed > 0 AND a.k_anonymity >= k
		AND a.l_diversity >= l AND (t IS NULL OR a.t_closeness <= t);
END
$$;
SELECT ok(pg_temp.anonymize_agrees('p2', ARRAY[3, 2, 2], 2, 0.1, 2, 'distinct', NULL, NULL, 'equal'), 'anonymize: distinct l');
SELECT ok(pg_temp.anonymize_agrees('p4', ARRAY[2, 2, 2], 2, 0.3, 2, 'entropy', NULL, NULL, 'equal', 'height'), 'anonymize: entropy l');
SELECT ok(pg_temp.anonymize_agrees('p4', ARRAY[2, 2, 2], 2, 0.15, 2, 'recursive', 3, NULL, 'equal'), 'anonymize: recursive (c,l)');
SELECT ok(pg_temp.anonymize_agrees('p2', ARRAY[3, 2, 2], 2, 0.2, 1, 'distinct', NULL, 0.1913, 'equal', 'height'), 'anonymize: t-closeness, equal distance');
SELECT ok(pg_temp.anonymize_agrees('p2', ARRAY[3, 2, 2], 2, 0.2, 1, 'distinct', NULL, 0.1733, 'ordered'), 'anonymize: t-closeness, ordered distance');

SELECT * FROM finish();
ROLLBACK;
