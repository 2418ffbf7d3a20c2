-- class_size_profile: the profile of classes given by their sizes equals
-- class_profile over the rows, on random tables (4 seeds, 0 to 40,000 rows,
-- NULLs, ties, a case-insensitive collation) keyed by a qid_key column as on a
-- distributed table, the sizes from GROUP BY of the key or of the columns;
-- serially and under forced parallel plans (partial states combined); in
-- window frames (a state changed in place must not leak between frames); an
-- aggregated census; NULL sizes; and the errors: sizes below 1, overflow,
-- malformed states given to the support functions.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;
\ir parallel_plans.psql

SELECT plan(4 * 12 + 2 + 4 + 4 + 18 + 8);

CREATE COLLATION pg_temp.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- A random table with its key: heavily tied values, about 10% NULL each
CREATE FUNCTION pg_temp.make_keyed(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS t, sizes;
	CREATE TABLE t (a integer, b text COLLATE pg_temp.ci, c numeric, qid uuid NOT NULL);
	INSERT INTO t (a, b, c, qid)
	SELECT a, b, c, qid_key(a, b COLLATE pg_temp.ci, c)
	FROM (SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * greatest(4, nrows / 40))::int END AS a,
				 CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B', 'ab'])[1 + floor(random() * 5)::int] END AS b,
				 CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 2.5, 2.50, 7])[1 + floor(random() * 5)::int] END AS c
		  FROM generate_series(1, nrows)) r;
	-- the class sizes, as the shards of a table distributed by qid count them
	CREATE TABLE sizes AS SELECT count(*) AS n FROM t GROUP BY qid;
	ANALYZE t;
	ANALYZE sizes;
END
$$;

CREATE FUNCTION pg_temp.check_seed(seed float8, nrows integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	label text := format('seed %s, %s rows', seed, nrows);
	reference text;
BEGIN
	PERFORM pg_temp.make_keyed(seed, nrows);
	PERFORM pg_temp.serial_plans();
	reference := (SELECT class_profile(a, b, c)::text FROM t);
	RETURN NEXT is((SELECT class_size_profile(n)::text FROM (SELECT count(*) AS n FROM t GROUP BY qid) s),
				   reference, label || ': sizes of GROUP BY qid = class_profile(a, b, c)');
	RETURN NEXT is((SELECT class_size_profile(n)::text FROM (SELECT count(*) AS n FROM t GROUP BY a, b, c) s),
				   reference, label || ': sizes of GROUP BY a, b, c (case-insensitive b) = class_profile(a, b, c)');
	RETURN NEXT is((SELECT ROW((p).singletons, (p).classes, (p).k_anonymity, rows_below(p, 3))::text
					FROM (SELECT class_size_profile(n) AS p FROM sizes) s),
				   (SELECT ROW(singleton_count(a, b, c), class_count(a, b, c), k_anonymity(a, b, c),
							   rows_below_k(3, a, b, c))::text FROM t),
				   label || ': singletons, classes, k, rows below 3 = the frequency aggregates');
	PERFORM pg_temp.force_parallel_plans();
	RETURN NEXT is((SELECT class_size_profile(n)::text FROM sizes), reference,
				   label || ': forced parallel plan = class_profile(a, b, c)');
	PERFORM pg_temp.serial_plans();
END
$$;

-- the last table stays for the checks below
SELECT pg_temp.check_seed(seed, nrows)
FROM (VALUES (0.13, 0), (0.13, 1), (0.13, 40000), (0.29, 200), (0.29, 9000), (0.29, 40000),
			 (0.47, 3000), (0.47, 25000), (-0.61, 60), (-0.61, 5000), (-0.61, 40000), (0.83, 12000))
	 AS v(seed, nrows);

SELECT pg_temp.force_parallel_plans();
SELECT ok(pg_temp.runs_partial_in_workers('SELECT class_size_profile(n) FROM sizes'),
		  'class_size_profile runs as partial aggregates in launched workers, combined in the leader');
SELECT is((SELECT class_size_profile(n)::text FROM (SELECT n FROM sizes UNION ALL SELECT NULL) s),
		  (SELECT class_profile(a, b, c)::text FROM t), 'forced parallel plan over an Append, NULL among the sizes');
SELECT pg_temp.serial_plans();

-- Window frames: each row's profile of its frame (the state is changed in place)
SELECT is((SELECT array_agg((p).rows ORDER BY i)::text
		   FROM (SELECT i, class_size_profile(n) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS p
				 FROM (VALUES (1, 3), (2, 1), (3, 3), (4, 2)) v(i, n)) w),
		  '{3,4,7,9}', 'running frame: rows 3, 4, 7, 9');
SELECT is((SELECT array_agg(ROW((p).class_sizes, (p).class_counts)::text ORDER BY i)
		   FROM (SELECT i, class_size_profile(n) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS p
				 FROM (VALUES (1, 3), (2, 1), (3, 3), (4, 2)) v(i, n)) w),
		  ARRAY['({3},{1})', '("{1,3}","{1,1}")', '("{1,3}","{1,1}")', '("{2,3}","{1,1}")'],
		  'moving frame of two rows: each frame counted afresh');
SELECT is((SELECT array_agg((p).classes ORDER BY g)::text
		   FROM (SELECT g, class_size_profile(n) AS p FROM (VALUES (1, 2), (1, 2), (2, 5), (1, 7), (3, NULL)) v(g, n)
				 GROUP BY g) s),
		  '{3,1,0}', 'per group, a group of NULL sizes only has 0 classes');
SELECT is((SELECT class_size_profile(n)::text FROM sizes WHERE false),
		  (SELECT class_profile(a, b, c)::text FROM t WHERE false), 'no rows: the profile of no rows, as class_profile');

-- An aggregated census (a count column): the profile of the people it counts
CREATE TABLE census AS SELECT a, c, count(*)::int AS people FROM t GROUP BY a, c;
SELECT is((SELECT class_size_profile(people)::text FROM census), (SELECT class_profile(a, c)::text FROM t),
		  'an integer count column of an aggregated table = class_profile of its rows');
SELECT is((SELECT h.class_size || ' ' || h.classes || ' ' || h.rows
		   FROM (SELECT class_size_profile(people) AS p FROM census) s, class_histogram(s.p) h ORDER BY h.class_size DESC LIMIT 1),
		  (SELECT n || ' ' || count(*) || ' ' || n * count(*) FROM (SELECT count(*) AS n FROM t GROUP BY a, c) g
		   GROUP BY n ORDER BY n DESC LIMIT 1),
		  'class_histogram of the profile: its largest class size');
SELECT is((SELECT class_size_profile(n)::text FROM (VALUES (2::bigint), (NULL), (1), (2), (NULL)) v(n)),
		  '(5,3,1,0.2,1,2,"{1,2}","{1,2}")', 'NULL sizes are ignored');
SELECT is((SELECT class_size_profile(n)::text FROM (VALUES (NULL::bigint)) v(n)),
		  '(0,0,0,,,,{},{})', 'only NULL sizes: the profile of no rows');

-- The transition function checks the state it is given as the combine and
-- final functions do (0.1.0 returned {3,1,1,1,2,1}); the internal functions
-- are found in public or in qidrisk_internal
SET LOCAL search_path = public, qidrisk_internal;
SELECT throws_ok($$SELECT qidrisk_class_size_profile_transfn('{3,1,1,1}', 2)$$, '22P03', 'invalid class_size_profile state',
				 'transition: a state with sizes descending');
SELECT throws_ok($$SELECT qidrisk_class_size_profile_transfn('{2,1,2,1}', 2)$$, '22P03', NULL, 'transition: a state with a size twice');
SELECT throws_ok($$SELECT qidrisk_class_size_profile_transfn('{-1,1}', 2)$$, '22P03', NULL, 'transition: a state with a negative size');
SELECT throws_ok($$SELECT qidrisk_class_size_profile_transfn('{1,-1}', 1)$$, '22P03', NULL, 'transition: a state with a negative count');
SELECT throws_ok($$SELECT qidrisk_class_size_profile_transfn('{1,1,2,0}', 3)$$, '22P03', NULL, 'transition: a state with no classes of a size');
SELECT is(qidrisk_class_size_profile_transfn('{1,2,4,1}', 3)::text, '{1,2,3,1,4,1}', 'transition: a valid state still takes a new size');
-- an aggregate built on the transition function checks its initial state at the first row
CREATE AGGREGATE pg_temp.unsorted_profile(bigint) (SFUNC = qidrisk_class_size_profile_transfn, STYPE = bigint[],
												   INITCOND = '{3,1,1,1}');
SELECT throws_ok($$SELECT pg_temp.unsorted_profile(n) FROM (VALUES (2), (2), (5)) v(n)$$, '22P03', NULL,
				 'an aggregate whose initial state is unsorted');
CREATE AGGREGATE pg_temp.sorted_profile(bigint) (SFUNC = qidrisk_class_size_profile_transfn, STYPE = bigint[],
												 INITCOND = '{1,1,3,1}');
SELECT is((SELECT pg_temp.sorted_profile(n)::text FROM (VALUES (2), (2), (5), (1)) v(n)), '{1,2,2,2,3,1,5,1}',
		  'an aggregate whose initial state is valid');
RESET search_path;

-- Errors
SELECT throws_ok($$SELECT class_size_profile(n) FROM (VALUES (3), (0)) v(n)$$, '22023',
				 'class_size_profile: a class size must be at least 1, not 0', 'a size of 0');
SELECT throws_ok($$SELECT class_size_profile(n) FROM (VALUES ('-9223372036854775808'::bigint)) v(n)$$, '22023', NULL,
				 'the smallest bigint as a size');
SELECT throws_ok($$SELECT class_size_profile(n) FROM (VALUES (4611686018427387904), (4611686018427387904)) v(n)$$,
				 '22003', 'class_size_profile: the rows of the classes exceed the bigint range',
				 'two classes of 2^62 rows: the rows overflow');
SELECT throws_ok($$SELECT class_size_profile(n) FROM (VALUES (9223372036854775807), (1)) v(n)$$, '22003', NULL,
				 'classes of 2^63 - 1 and 1 rows: the rows overflow');
SELECT is((SELECT (class_size_profile(n)).rows FROM (VALUES (9223372036854775807)) v(n)), 9223372036854775807,
		  'one class of 2^63 - 1 rows is fine');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_transfn('{1,9223372036854775807}', 1)$$, '22003', NULL,
				 'transition: a count past the bigint range');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_combine('{1,9223372036854775807}', '{1,1}')$$, '22003', NULL,
				 'combine: a count past the bigint range');
SELECT is((SELECT concat_ws(' ', s, qidrisk_internal.qidrisk_class_size_profile_transfn(s, 1), qidrisk_internal.qidrisk_class_size_profile_transfn(s, 2))
		   FROM (SELECT '{1,5,3,1}'::bigint[] AS s) x), '{1,5,3,1} {1,6,3,1} {1,5,2,1,3,1}',
		  'called directly, the transition function leaves its argument alone');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{1}')$$, '22P03', 'invalid class_size_profile state',
				 'a state of odd length');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{3,1,2,1}')$$, '22P03', NULL, 'a state with sizes descending');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{2,1,2,1}')$$, '22P03', NULL, 'a state with a size twice');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{0,1}')$$, '22P03', NULL, 'a state with size 0');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{1,0}')$$, '22P03', NULL, 'a state with no classes of a size');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{1,NULL}')$$, '22P03', NULL, 'a state with a NULL');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_final('{{1,1},{2,1}}')$$, '22P03', NULL, 'a two-dimensional state');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_transfn('{1,1,2}', 1)$$, '22P03', NULL, 'transition: a state of odd length');
SELECT throws_ok($$SELECT qidrisk_internal.qidrisk_class_size_profile_combine('{2,1}', '{2,1,1,1}')$$, '22P03', NULL,
				 'combine: a state with sizes descending');
SELECT is(qidrisk_internal.qidrisk_class_size_profile_combine('{1,2,5,1}', '{2,1,5,3,9,1}')::text, '{1,2,2,1,5,4,9,1}',
		  'combine merges the pairs and adds the counts of equal sizes');

SELECT * FROM finish();
ROLLBACK;
