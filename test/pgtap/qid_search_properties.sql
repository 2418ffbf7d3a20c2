-- Property tests of qid_search: every row (subset, singletons, classes,
-- identifier flags, order) equals a plain-SQL reference that runs one
-- GROUP BY ... HAVING count(*) = 1 per subset, on random tables (several seeds,
-- NULLs, ties, identifiers, duplicate rows, 1 to 10 columns), with max_size,
-- drop_incomplete, summary, and under row-level security.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(41);

CREATE COLLATION pg_temp.case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- A random table: heavy ties, about 10% NULL per column, empty strings, an
-- identifier-like column, and duplicated rows
CREATE FUNCTION pg_temp.make_table(name text, seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	EXECUTE format('DROP TABLE IF EXISTS %I', name);
	EXECUTE format($q$CREATE TABLE %I (
		c_int integer,
		c_text text COLLATE "C",
		c_ci text COLLATE pg_temp.case_insensitive,
		c_num numeric,
		c_float float8,
		c_date date,
		c_big bigint,
		c_bool boolean,
		c_wide integer,
		c_char varchar(3)
	)$q$, name);
	EXECUTE format($q$INSERT INTO %I
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 6)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'b', '', 'ab'])[1 + floor(random() * 4)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B', 'ab', 'AB'])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 1.00, 2.5, 2.50, 7])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['-0', '0', 'NaN', '1.5', 'Infinity'])[1 + floor(random() * 5)::int]::float8 END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 4)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 3)::bigint * 10000000000 END,
		CASE WHEN random() < 0.1 THEN NULL ELSE random() < 0.5 END,
		floor(random() * $1 * 2)::int,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['x', 'y', '', 'z'])[1 + floor(random() * 4)::int] END
	FROM generate_series(1, $1)$q$, name) USING nrows;
	-- duplicate some rows whole
	EXECUTE format('INSERT INTO %1$I SELECT * FROM %1$I WHERE random() < 0.05', name);
END
$$;

-- The reference: one GROUP BY per subset, the identifier flags from the
-- subsets' figures, ordered by singletons desc, size asc, candidate positions
CREATE FUNCTION pg_temp.reference(rel text, cols text[], max_size integer DEFAULT NULL,
								  drop_incomplete boolean DEFAULT false, summary boolean DEFAULT false)
RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	m integer := cardinality(cols);
	filter text := 'true';
	total bigint;
	everything bigint;
	s integer;
	collist text;
	pos integer[];
	single bigint;
	cls bigint;
	result text[];
BEGIN
	IF drop_incomplete THEN
		SELECT string_agg(CASE WHEN t.typcategory = 'S'
							   THEN format('(%1$I IS NOT NULL AND %1$I <> %2$L)', c, '')
							   ELSE format('%I IS NOT NULL', c) END, ' AND ')
		INTO filter
		FROM unnest(cols) c
		JOIN pg_attribute a ON a.attrelid = rel::regclass AND a.attname = c
		JOIN pg_type t ON t.oid = a.atttypid;
	END IF;
	EXECUTE format('SELECT count(*) FROM %I', rel) INTO everything;
	EXECUTE format('SELECT count(*) FROM %I WHERE %s', rel, filter) INTO total;
	CREATE TEMP TABLE IF NOT EXISTS ref (cols text[], pos integer[], size integer, singletons bigint, classes bigint);
	TRUNCATE ref;
	FOR s IN 1 .. (1 << m) - 1 LOOP
		SELECT array_agg(i ORDER BY i) INTO pos FROM generate_series(1, m) i WHERE s & (1 << (i - 1)) <> 0;
		CONTINUE WHEN max_size IS NOT NULL AND cardinality(pos) > max_size;
		SELECT string_agg(quote_ident(cols[i]), ', ' ORDER BY i) INTO collist FROM unnest(pos) i;
		EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %I WHERE %s GROUP BY %s HAVING count(*) = 1) x',
					   rel, filter, collist) INTO single;
		EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %I WHERE %s GROUP BY %s) x',
					   rel, filter, collist) INTO cls;
		INSERT INTO ref VALUES ((SELECT array_agg(cols[i] ORDER BY i) FROM unnest(pos) i), pos,
								cardinality(pos), single, cls);
	END LOOP;
	WITH flagged AS (
		SELECT r.*, total > 0 AND r.singletons = total AS ident FROM ref r
	), minimal AS (
		SELECT f.*, f.ident AND NOT EXISTS (
			SELECT 1 FROM flagged g WHERE g.ident AND g.size = f.size - 1 AND g.pos <@ f.pos) AS minimal
		FROM flagged f
	), ordered AS (
		SELECT mm.*, row_number() OVER (ORDER BY mm.singletons DESC, mm.size, mm.pos) AS rn FROM minimal mm
	)
	SELECT array_agg(ROW(o.cols, o.size, o.singletons,
						 CASE WHEN total > 0 THEN o.singletons::float8 / total END,
						 o.classes, o.ident, o.minimal, o.rn = 1, total, everything - total)::text
					 ORDER BY o.rn)
	INTO result
	FROM ordered o
	WHERE NOT summary OR o.rn = 1 OR o.minimal;
	RETURN result;
END
$$;

-- qid_search's rows, in its own order
CREATE FUNCTION pg_temp.ours(rel text, cols text[], max_size integer DEFAULT NULL,
							 drop_incomplete boolean DEFAULT false, summary boolean DEFAULT false)
RETURNS text[]
LANGUAGE sql AS $$
	SELECT array_agg(ROW(q.columns, q.size, q.singletons, q.singleton_share, q.classes,
						 q.identifier, q.minimal_identifier, q.best, q.rows, q.rows_removed)::text
					 ORDER BY o)
	FROM qid_search(rel::regclass, cols, max_size, drop_incomplete, summary) WITH ORDINALITY AS q(
		columns, size, singletons, singleton_share, classes, identifier, minimal_identifier,
		best, rows, rows_removed, o)
$$;

-- Ten columns, all 1023 subsets, three seeds
SELECT pg_temp.make_table('t1', 0.11, 300);
SELECT is(pg_temp.ours('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool', 'c_wide', 'c_char']),
		  pg_temp.reference('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool', 'c_wide', 'c_char']),
		  'seed 0.11, 10 columns: all 1023 subsets equal the GROUP BY reference');
SELECT pg_temp.make_table('t2', 0.22, 120);
SELECT is(pg_temp.ours('t2', ARRAY['c_wide', 'c_bool', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_int', 'c_text', 'c_char']),
		  pg_temp.reference('t2', ARRAY['c_wide', 'c_bool', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_int', 'c_text', 'c_char']),
		  'seed 0.22, 10 columns in another order: equal the reference');
SELECT pg_temp.make_table('t3', 0.33, 2000);
SELECT is(pg_temp.ours('t3', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool']),
		  pg_temp.reference('t3', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool']),
		  'seed 0.33, 2000 rows, 8 columns: equal the reference');
SELECT is(pg_temp.ours('t3', ARRAY['c_date']), pg_temp.reference('t3', ARRAY['c_date']),
		  'one column');
SELECT is(pg_temp.ours('t3', ARRAY['c_text', 'c_char']), pg_temp.reference('t3', ARRAY['c_text', 'c_char']),
		  'two columns');

-- Identifiers: a unique key makes every superset an identifier, minimal ones flagged
SELECT pg_temp.make_table('t4', 0.44, 200);
ALTER TABLE t4 ADD COLUMN id serial;
UPDATE t4 SET c_wide = id * 7 % 1000 WHERE id % 2 = 0;
SELECT is(pg_temp.ours('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide', 'c_date', 'c_num']),
		  pg_temp.reference('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide', 'c_date', 'c_num']),
		  'with a key column: identifiers and minimal identifiers equal the reference');
SELECT ok((SELECT bool_and(identifier = ('id' = ANY(columns) OR singletons = rows))
		   FROM qid_search('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide', 'c_date', 'c_num'])),
		  'every subset containing the key is an identifier');
SELECT is((SELECT columns FROM qid_search('t4', ARRAY['c_int', 'id', 'c_ci']) WHERE best),
		  ARRAY['id'], 'the best QID of a table with a key is the key alone');
-- several minimal identifiers of different sizes
CREATE TABLE t5 (a int, b int, c int, d int);
INSERT INTO t5 SELECT i % 4, i / 4, (i * 5) % 16, i % 2 FROM generate_series(0, 15) i;
SELECT is(pg_temp.ours('t5', ARRAY['a', 'b', 'c', 'd']), pg_temp.reference('t5', ARRAY['a', 'b', 'c', 'd']),
		  'a table with minimal identifiers of sizes 1 and 2');
SELECT is((SELECT array_agg(columns::text ORDER BY columns::text) FROM qid_search('t5') WHERE minimal_identifier),
		  ARRAY['{a,b}', '{c}'], 'minimal identifiers {a,b} and {c}');

-- codes of every width: more than 65,536 and more than 256 distinct values
CREATE TABLE t10 AS SELECT (i * 7919) % 70001 AS wide, i % 300 AS mid, i % 3 AS narrow,
	CASE WHEN i % 5 = 0 THEN NULL ELSE i % 1000 END AS nulls FROM generate_series(1, 90000) i;
SELECT is(pg_temp.ours('t10', ARRAY['wide', 'mid', 'narrow', 'nulls']),
		  pg_temp.reference('t10', ARRAY['wide', 'mid', 'narrow', 'nulls']),
		  '90,000 rows, codes of 4, 2 and 1 bytes: equal the reference');

-- max_size
SELECT is(pg_temp.ours('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool', 'c_wide', 'c_char'], 3),
		  pg_temp.reference('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool', 'c_wide', 'c_char'], 3),
		  'max_size 3 over 10 columns: the 175 subsets equal the reference');
SELECT is((SELECT count(*) FROM qid_search('t1', NULL, 2)), 55::bigint, 'NULL columns: every column, C(10,1) + C(10,2) subsets');
SELECT is(pg_temp.ours('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide'], 1),
		  pg_temp.reference('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide'], 1), 'max_size 1');
SELECT is(pg_temp.ours('t4', ARRAY['c_int', 'c_ci'], 9),
		  pg_temp.reference('t4', ARRAY['c_int', 'c_ci']), 'max_size above the column count');

-- drop_incomplete: rows with a NULL or empty string in any candidate column
SELECT is(pg_temp.ours('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_char', 'c_bool'], NULL, true),
		  pg_temp.reference('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_char', 'c_bool'], NULL, true),
		  'drop_incomplete: figures over the complete rows, dropped rows counted');
SELECT is(pg_temp.ours('t3', ARRAY['c_text', 'c_float', 'c_date'], 2, true),
		  pg_temp.reference('t3', ARRAY['c_text', 'c_float', 'c_date'], 2, true),
		  'drop_incomplete with max_size');
SELECT ok((SELECT min(rows_removed) > 0 FROM qid_search('t3', ARRAY['c_text', 'c_date'], NULL, true)),
		  'drop_incomplete drops some rows of a table with NULLs and empty strings');

-- summary: the best QID and the minimal identifiers only
SELECT is(pg_temp.ours('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide', 'c_date', 'c_num'], NULL, false, true),
		  pg_temp.reference('t4', ARRAY['c_int', 'id', 'c_ci', 'c_wide', 'c_date', 'c_num'], NULL, false, true),
		  'summary with identifiers');
SELECT is(pg_temp.ours('t5', ARRAY['d', 'c', 'b', 'a'], NULL, false, true),
		  pg_temp.reference('t5', ARRAY['d', 'c', 'b', 'a'], NULL, false, true),
		  'summary with two minimal identifiers');
SELECT is(pg_temp.ours('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool'], NULL, true, true),
		  pg_temp.reference('t1', ARRAY['c_int', 'c_text', 'c_ci', 'c_num', 'c_float', 'c_date', 'c_big', 'c_bool'], NULL, true, true),
		  'summary with drop_incomplete, no identifier');

-- empty table, one row, all rows equal
CREATE TABLE t6 (a int, b text);
SELECT is(pg_temp.ours('t6', ARRAY['a', 'b']), pg_temp.reference('t6', ARRAY['a', 'b']), 'empty table');
INSERT INTO t6 VALUES (1, 'x');
SELECT is(pg_temp.ours('t6', ARRAY['a', 'b']), pg_temp.reference('t6', ARRAY['a', 'b']), 'one row: every subset an identifier');
INSERT INTO t6 VALUES (1, 'x'), (1, 'x');
SELECT is(pg_temp.ours('t6', ARRAY['a', 'b']), pg_temp.reference('t6', ARRAY['a', 'b']), 'three equal rows: no singleton');

-- under row-level security the caller counts only the rows it sees
CREATE ROLE qid_search_reader;
CREATE TABLE t7 (owner text, a int, b int);
INSERT INTO t7 SELECT CASE WHEN i % 3 = 0 THEN 'qid_search_reader' ELSE 'other' END, i % 5, i % 7
FROM generate_series(1, 300) i;
ALTER TABLE t7 ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON t7 USING (owner = current_user);
GRANT SELECT ON t7 TO qid_search_reader;
CREATE TEMP TABLE rls_ours AS SELECT NULL::text[] AS r;
GRANT ALL ON ref TO qid_search_reader;
GRANT ALL ON rls_ours TO qid_search_reader;
GRANT ALL ON SCHEMA public TO qid_search_reader;
SET ROLE qid_search_reader;
UPDATE rls_ours SET r = pg_temp.ours('t7', ARRAY['a', 'b']);
SELECT is((SELECT max(rows) FROM qid_search('t7', ARRAY['a', 'b'])), 100::bigint, 'under RLS a role counts only its 100 rows');
CREATE TEMP TABLE rls_ref AS SELECT pg_temp.reference('t7', ARRAY['a', 'b']) AS r;
RESET ROLE;
SELECT is((SELECT r FROM rls_ours), (SELECT r FROM rls_ref), 'under RLS: equal the reference run by the same role');
SELECT isnt((SELECT r FROM rls_ours), pg_temp.ours('t7', ARRAY['a', 'b']), 'the owner sees other figures');
-- a column the role may not read
CREATE TABLE t8 (a int, secret int);
-- classes of 3 (0 to 3), 3 singletons and a NULL
INSERT INTO t8 SELECT CASE WHEN i <= 12 THEN i % 4 ELSE i END, i FROM generate_series(1, 15) i;
INSERT INTO t8 VALUES (NULL, 16);
GRANT SELECT (a) ON t8 TO qid_search_reader;
SET ROLE qid_search_reader;
SELECT throws_ok($$SELECT * FROM qid_search('t8', ARRAY['a', 'secret'])$$, '42501', NULL,
				 'a column without SELECT privilege is refused');
SELECT is(pg_temp.ours('t8', ARRAY['a']), pg_temp.reference('t8', ARRAY['a']),
		  'the readable column alone: equal the GROUP BY reference');
RESET ROLE;

-- bad input, nothing changed
CREATE TEMP TABLE t3_before AS SELECT md5(string_agg(t3::text, ',' ORDER BY t3::text)) AS sum FROM t3;
SELECT throws_ok($$SELECT * FROM qid_search('t6', ARRAY['a', 'nope'])$$, '42703', NULL, 'unknown column');
SELECT throws_ok($$SELECT * FROM qid_search('t6', ARRAY['a', 'a'])$$, '22023', NULL, 'duplicate column');
SELECT throws_ok($$SELECT * FROM qid_search('t6', ARRAY[]::text[])$$, '22023', NULL, 'empty column list');
SELECT throws_ok($$SELECT * FROM qid_search('t6', ARRAY['a'], 0)$$, '22023', NULL, 'max_size below 1');
SELECT throws_ok($$SELECT * FROM qid_search(NULL)$$, '22004', NULL, 'no table');
SELECT throws_ok($$SELECT * FROM qid_search('t6', ARRAY['a', NULL])$$, '22004', NULL, 'NULL column name');
SELECT throws_ok($$SELECT * FROM qid_search('t6', ARRAY[['a'], ['b']])$$, '2202E', NULL, 'two-dimensional column list');
CREATE TABLE t9 (p point, q int);
SELECT throws_ok($$SELECT * FROM qid_search('t9')$$, '42883', NULL, 'a column without hash support');
SET LOCAL qidrisk.max_state_memory = 64;
SELECT throws_ok($$SELECT * FROM qid_search('t3')$$, '54000', NULL, 'past the memory budget: 54000');
RESET qidrisk.max_state_memory;
-- cancellable: a statement timeout stops a long search
CREATE TEMP VIEW slow AS SELECT i % 1000 AS a, i % 997 AS b, i % 991 AS c, i % 983 AS d, i % 977 AS e,
	i % 971 AS f, i % 967 AS g, i % 953 AS h FROM generate_series(1, 400000) i;
CREATE FUNCTION pg_temp.cancel_code() RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM count(*) FROM qid_search('slow');
	RETURN 'finished';
EXCEPTION WHEN query_canceled THEN
	RETURN SQLSTATE;
END
$$;
SET LOCAL statement_timeout = '100ms';
SELECT is(pg_temp.cancel_code(), '57014', 'a statement timeout cancels the search');
RESET statement_timeout;
SELECT is((SELECT md5(string_agg(t3::text, ',' ORDER BY t3::text)) FROM t3), (SELECT sum FROM t3_before),
		  'the table is unchanged');
SELECT is(pg_temp.ours('t5', ARRAY['a', 'b', 'c', 'd']), pg_temp.reference('t5', ARRAY['a', 'b', 'c', 'd']),
		  'the same figures after the errors');

SELECT * FROM finish();
ROLLBACK;
