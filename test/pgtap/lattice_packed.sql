-- qid_lattice's packed codes: when the rows' level-0 codes take 4 MB or more
-- (rows x columns x 4 bytes) and every column's codes fit in one 64-bit word
-- together, its cached nodes carry their classes' codes packed and a node
-- split from one reads them in order.  UCI Adult (32,561 rows x 8 QIDs, 1 MB)
-- stays below that; Adult with every row five times (162,805 rows, 5.2 MB)
-- takes it.  Every class of the copy is five times Adult's class, so under
-- k = 25 with 2 % suppression every node of the copy must have Adult's verdict
-- under k = 5 with 2 %, five times its suppressed rows, its classes, 25 times
-- its discernibility, and the same best node (Adult's figures are ARX's, node
-- for node: lattice_loss.sql, lattice_privacy.sql).  state_events() shows
-- which run split nodes from packed codes.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(8);

-- a schema of its own, so that an adult table elsewhere in the database does not matter
CREATE SCHEMA lattice_packed;
SET LOCAL search_path = lattice_packed, public;
\i data/load_adult.sql
\i data/load_adult_hierarchies.sql
CREATE TABLE adult_x5 AS SELECT a.* FROM adult a, generate_series(1, 5);
ANALYZE adult, adult_x5;

-- every node of rel under k and 2 % suppression, and the nodes split from packed codes meanwhile
CREATE FUNCTION pg_temp.run(rel regclass, k integer, OUT nodes jsonb, OUT packed_splits bigint)
LANGUAGE plpgsql AS $$
DECLARE
	qid text[] := '{age,workclass,education,marital_status,occupation,race,sex,native_country}';
	before bigint := (SELECT lattice_packed_splits FROM qidrisk_internal.state_events());
BEGIN
	SELECT jsonb_object_agg(l.levels::text, to_jsonb(l)) INTO nodes
	FROM qid_lattice(rel, qid, (SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(qid) c),
					 k, 0.02) l;
	packed_splits := (SELECT lattice_packed_splits FROM qidrisk_internal.state_events()) - before;
END
$$;
CREATE TEMP TABLE runs AS SELECT 'adult' AS rel, * FROM pg_temp.run('adult', 5);
INSERT INTO runs SELECT 'adult_x5', * FROM pg_temp.run('adult_x5', 25);

CREATE TEMP TABLE pairs AS
SELECT o.key AS levels, o.value AS one, f.value AS five
FROM jsonb_each((SELECT nodes FROM runs WHERE rel = 'adult')) o
	JOIN jsonb_each((SELECT nodes FROM runs WHERE rel = 'adult_x5')) f USING (key);

SELECT is((SELECT packed_splits FROM runs WHERE rel = 'adult'), 0::bigint,
		  'UCI Adult (1 MB of codes): no node split from packed codes');
SELECT cmp_ok((SELECT packed_splits FROM runs WHERE rel = 'adult_x5'), '>', 0::bigint,
			  'Adult five times (5.2 MB of codes): nodes split from packed codes');
SELECT is((SELECT count(*) FROM pairs), 4320::bigint, 'both lattices: 4,320 nodes');
SELECT is((SELECT count(*) FROM pairs WHERE one -> 'anonymous' IS DISTINCT FROM five -> 'anonymous'), 0::bigint,
		  'every node: the verdict of k = 25 on Adult five times = that of k = 5 on Adult');
SELECT cmp_ok((SELECT count(*) FROM pairs WHERE (one ->> 'evaluated')::boolean AND (five ->> 'evaluated')::boolean),
			  '>', 1000::bigint, 'more than 1,000 nodes evaluated in both');
SELECT is((SELECT count(*) FROM pairs
		   WHERE (one ->> 'evaluated')::boolean AND (five ->> 'evaluated')::boolean
			 AND ((five ->> 'rows_suppressed')::bigint IS DISTINCT FROM 5 * (one ->> 'rows_suppressed')::bigint
				  OR (five ->> 'classes')::bigint IS DISTINCT FROM (one ->> 'classes')::bigint)),
		  0::bigint, 'every node evaluated in both: five times the suppressed rows, the same classes');
SELECT is((SELECT count(*) FROM pairs
		   WHERE (one ->> 'evaluated')::boolean AND (five ->> 'evaluated')::boolean
			 AND (five ->> 'discernibility')::float8 IS DISTINCT FROM 25 * (one ->> 'discernibility')::float8),
		  0::bigint, 'every node evaluated in both: 25 times the discernibility');
SELECT is((SELECT array_agg(levels ORDER BY levels) FROM pairs WHERE (five ->> 'best')::boolean),
		  (SELECT array_agg(levels ORDER BY levels) FROM pairs WHERE (one ->> 'best')::boolean),
		  'the best node is Adult''s');

SELECT * FROM finish();
ROLLBACK;
