-- Security properties, each asserted so that it fails if the property breaks:
-- trusted, SECURITY INVOKER everywhere, pinned search_path, volatility of
-- table readers, permission denied (42501) without SELECT, row-level security,
-- hostile identifiers, hostile search_path.  The install by a non-superuser
-- database owner is in test/sql/security.sql (it needs a second database).
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(69);

-- Functions, aggregates and procedures of the extension
CREATE TEMP VIEW ext_proc AS
SELECT p.oid, p.oid::regprocedure::text AS sig, p.proname::text AS name, l.lanname::text AS lang,
	   p.prokind, p.provolatile, p.prosecdef, p.proconfig, p.prosrc
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'qidrisk'
JOIN pg_language l ON l.oid = p.prolang;

-- 1. trusted, and every function runs with the caller's rights
SELECT is((SELECT trusted FROM pg_available_extension_versions WHERE name = 'qidrisk' AND version = (SELECT default_version FROM pg_available_extensions WHERE name = 'qidrisk')),
		  true, 'the control file marks qidrisk trusted');
SELECT cmp_ok((SELECT count(*) FROM ext_proc), '>', 100::bigint, 'the catalog query sees the extension''s functions');
SELECT is((SELECT array_agg(sig) FROM ext_proc WHERE prosecdef), NULL, 'no function is SECURITY DEFINER');
SELECT is((SELECT count(*) FROM ext_proc WHERE lang NOT IN ('c', 'internal', 'sql', 'plpgsql')), 0::bigint,
		  'functions are written in C, SQL or PL/pgSQL only');

-- 2. every SQL and PL/pgSQL routine pins search_path, except qid_anonymize_into
-- (it resolves the caller's table names with the caller's search_path), whose
-- body names only schema-qualified objects; qid_assert is C, so it can commit
SELECT is((SELECT array_agg(sig ORDER BY sig) FROM ext_proc
		   WHERE lang IN ('sql', 'plpgsql')
		   AND (proconfig IS NULL OR NOT 'search_path=pg_catalog, pg_temp' = ANY (proconfig))),
		  ARRAY['qidrisk_internal.qid_anonymize_into(regclass,text[],jsonb,text,integer,double precision,text,integer,text,double precision,double precision,text,text,text,boolean,text,double precision,jsonb,jsonb)'],
		  'every SQL/PL/pgSQL function pins search_path = pg_catalog, pg_temp; only qid_anonymize_into''s body does not');
SELECT is((SELECT array_agg(m[1]) FROM ext_proc,
		   regexp_matches(prosrc, '([A-Za-z_][A-Za-z_0-9.]*)\s*\(', 'g') AS m
		   WHERE name = 'qid_anonymize_into' AND m[1] NOT LIKE '%.%'),
		  NULL, 'qid_anonymize_into calls only schema-qualified functions');

-- a documented name in C that calls its body in qidrisk_internal (src/boundary.c)
-- has one, of the same arguments, result, volatility, strictness and parallel safety
SELECT is((SELECT array_agg(e.sig ORDER BY e.sig) FROM ext_proc e JOIN pg_proc d ON d.oid = e.oid
		   WHERE e.lang = 'c' AND e.prosrc = 'qidrisk_call_internal'
		   AND NOT EXISTS (SELECT 1 FROM pg_proc b
						   WHERE b.pronamespace = 'qidrisk_internal'::regnamespace AND b.proname = d.proname
						   AND b.proargtypes = d.proargtypes AND b.prorettype = d.prorettype
						   AND b.proretset = d.proretset AND b.provolatile = d.provolatile
						   AND b.proisstrict = d.proisstrict AND b.proparallel = d.proparallel
						   AND b.prolang <> d.prolang)), NULL,
		  'every documented name that calls a body has one in qidrisk_internal, alike but for its language');
SELECT is((SELECT count(*) FROM ext_proc WHERE lang = 'c' AND prosrc = 'qidrisk_call_internal'), 16::bigint,
		  'the documented names of 16 SQL and PL/pgSQL bodies call them under a boundary');

-- 3. volatility: anything that reads a table is STABLE or VOLATILE.  Readers
-- are found in the bodies (EXECUTE, FROM a relation or catalog, or a call of
-- another reader) and must include the known list.
CREATE TEMP TABLE readers AS
WITH RECURSIVE r(oid) AS (
	-- qid_check, qidrisk_check_run and qid_assert are C: they read through
	-- qidrisk_check_evaluate; hierarchy_generalize is C and reads its tables itself
	SELECT oid FROM ext_proc WHERE name IN ('qid_check', 'qidrisk_check_run', 'qid_assert', 'hierarchy_generalize')
	UNION
	SELECT oid FROM ext_proc
	WHERE lang IN ('sql', 'plpgsql')
	AND (prosrc ~* '\mEXECUTE\M'
		 -- string literals are messages or EXECUTEd text, so they are left out
		 OR regexp_replace(prosrc, '''([^'']|'''')*''', '', 'g') ~* '\m(FROM|JOIN)\s+(?!unnest\s*\(|\(\s*VALUES|jsonb_|generate_s|@|public\.|qidrisk_internal\.)[A-Za-z_]')
	UNION
	SELECT c.oid FROM ext_proc c, r, ext_proc rp
	WHERE rp.oid = r.oid AND c.lang IN ('sql', 'plpgsql') AND c.oid <> r.oid
	AND c.prosrc ~ ('\.' || rp.name || '\s*\(')
)
SELECT e.sig, e.name, e.provolatile FROM r JOIN ext_proc e USING (oid);
SELECT is((SELECT array_agg(n ORDER BY n) FROM unnest(ARRAY['column_distinct_counts', 'distinct_product',
		  'column_budgets', 'hierarchy_generalize', 'qid_check', 'qidrisk_check_evaluate', 'qidrisk_check_validate',
		  'qidrisk_check_report', 'qid_assert']) n
		   WHERE n NOT IN (SELECT name FROM readers)), NULL,
		  'the scan of function bodies finds every known table-reading function');
SELECT is((SELECT array_agg(sig) FROM readers WHERE provolatile = 'i'), NULL,
		  'no function that reads a table or catalog is IMMUTABLE');
SELECT is((SELECT array_agg(sig) FROM ext_proc WHERE name IN ('qid_check', 'qidrisk_check_run',
		   'qidrisk_check_report', 'qid_assert') AND provolatile <> 'v'), NULL,
		  'functions that may write history or raise for a check are VOLATILE');

-- Run one statement as a role; the SQLSTATE it raised, or its result as text
CREATE FUNCTION pg_temp.as_role(who text, stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	res text;
BEGIN
	PERFORM set_config('role', who, true);
	EXECUTE stmt INTO res;
	PERFORM set_config('role', 'none', true);
	RETURN coalesce(res, 'NULL');
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE;
END
$$;

CREATE ROLE qidrisk_t_nobody;
CREATE ROLE qidrisk_t_cols;
CREATE ROLE qidrisk_t_north;
CREATE TABLE patients (id serial, birth_year integer, sex text, zip text, region text);
INSERT INTO patients (birth_year, sex, zip, region)
SELECT 1950 + i % 13, (ARRAY['F', 'M'])[1 + i % 2], (ARRAY['1000', '1001', '2000', '2001'])[1 + i % 4],
	   CASE WHEN i % 3 = 0 THEN 'north' ELSE 'south' END
FROM generate_series(1, 200) i;
ANALYZE patients;
CREATE TABLE places (child text, parent text);
INSERT INTO places VALUES ('1000', '1xxx'), ('1001', '1xxx'), ('2000', '2xxx'), ('2001', '2xxx');
GRANT SELECT ON places TO qidrisk_t_nobody, qidrisk_t_cols, qidrisk_t_north;
GRANT SELECT (sex, zip) ON patients TO qidrisk_t_cols;
GRANT SELECT ON patients TO qidrisk_t_north;
ALTER TABLE patients ENABLE ROW LEVEL SECURITY;
CREATE POLICY north_only ON patients FOR SELECT TO qidrisk_t_north USING (region = 'north');
CREATE POLICY all_rows ON patients FOR SELECT TO qidrisk_t_nobody, qidrisk_t_cols USING (true);
CREATE TEMP TABLE patients_before AS SELECT md5(string_agg(p::text, ',' ORDER BY id)) AS h FROM patients p;

-- 4. a role without SELECT gets 42501 from every function that reads the table
SELECT is(pg_temp.as_role('qidrisk_t_nobody', s), 'ERROR 42501', 'without SELECT: ' || s)
FROM unnest(ARRAY[
	'SELECT singleton_count(birth_year, sex) FROM patients',
	'SELECT class_profile(zip)::text FROM patients',
	'SELECT rows_below_k(3, zip) FROM patients',
	'SELECT kl_uniform(zip) FROM patients',
	'SELECT birthday_uniqueness_exact(3, zip) FROM patients',
	'SELECT quantile_cuts(birth_year, 5)::text FROM patients',
	'SELECT optimal_cuts(birth_year, 5)::text FROM patients',
	$$SELECT string_agg(distinct_values::text, ',') FROM column_distinct_counts('patients', ARRAY['zip'])$$,
	$$SELECT distinct_product('patients', ARRAY['zip', 'sex'])$$,
	$$SELECT count(*) FROM column_budgets('patients', ARRAY['zip', 'sex'], 1e6, 5)$$,
	$$SELECT count(*) FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 2)$$,
	$$SELECT count(*) FROM qid_check('patients', ARRAY['zip'], '{"min_k": 2}')$$,
	$$SELECT count(*) FROM qid_check('patients', ARRAY['zip'], '{"max_birthday_uniqueness": {"group_size": 2, "max": 1}}')$$,
	$$CALL qid_assert('patients', ARRAY['zip'], '{"min_k": 2}')$$]) AS s;
-- estimates come from pg_stats, but the column privilege is checked first
SELECT is(pg_temp.as_role('qidrisk_t_nobody', $$SELECT count(*) FROM column_distinct_counts('patients', ARRAY['zip'], true)$$),
		  'ERROR 42501', 'without SELECT, estimated counts are denied (42501), not "no statistics"');
-- the hierarchy table is read with the caller's rights too (its row-level
-- security in section 6)
REVOKE SELECT ON places FROM qidrisk_t_north;
SELECT is(pg_temp.as_role('qidrisk_t_north', $$SELECT count(*) FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 2)$$),
		  'ERROR 42501', 'without SELECT on the hierarchy table: 42501');
GRANT SELECT ON places TO qidrisk_t_north;

-- 5. column privileges: granted columns work, others are denied
SELECT is(pg_temp.as_role('qidrisk_t_cols', $$SELECT string_agg(measured::text, ',') FROM qid_check('patients', ARRAY['sex', 'zip'], '{"min_k": 2}')$$),
		  (SELECT k_anonymity(sex, zip)::text FROM patients), 'SELECT on the QID columns suffices for qid_check');
SELECT is(pg_temp.as_role('qidrisk_t_cols', $$SELECT string_agg(distinct_values::text, ',') FROM column_distinct_counts('patients', ARRAY['sex', 'zip'])$$),
		  '2,4', 'and for column_distinct_counts');
SELECT is(pg_temp.as_role('qidrisk_t_cols', s), 'ERROR 42501', 'a column without SELECT: ' || s)
FROM unnest(ARRAY[
	$$SELECT count(*) FROM qid_check('patients', ARRAY['sex', 'birth_year'], '{"min_k": 2}')$$,
	$$SELECT count(*) FROM column_distinct_counts('patients', ARRAY['birth_year'])$$,
	'SELECT singleton_count(sex, birth_year) FROM patients']) AS s;

-- 6. row-level security: results over the visible rows only
CREATE TEMP TABLE north AS SELECT * FROM patients WHERE region = 'north';
SELECT is(pg_temp.as_role('qidrisk_t_north', 'SELECT ROW(singleton_count(birth_year, sex, zip), class_count(birth_year, zip), k_anonymity(birth_year))::text FROM patients'),
		  (SELECT ROW(singleton_count(birth_year, sex, zip), class_count(birth_year, zip), k_anonymity(birth_year))::text FROM north),
		  'aggregates under RLS equal the aggregates over the visible rows');
SELECT isnt((SELECT ROW(singleton_count(birth_year, sex, zip), class_count(birth_year, zip), k_anonymity(birth_year))::text FROM north),
			(SELECT ROW(singleton_count(birth_year, sex, zip), class_count(birth_year, zip), k_anonymity(birth_year))::text FROM patients),
			'(and differ from the whole table''s, so the test can tell)');
SELECT is(pg_temp.as_role('qidrisk_t_north', $$SELECT jsonb_agg(round(measured::numeric, 12) ORDER BY rule)::text FROM qid_check('patients', ARRAY['birth_year', 'zip'], '{"min_k": 1, "max_singleton_share": 1, "max_birthday_uniqueness": {"group_size": 3, "max": 1}}')$$),
		  (SELECT jsonb_agg(round(measured::numeric, 12) ORDER BY rule)::text FROM qid_check('pg_temp.north', ARRAY['birth_year', 'zip'], '{"min_k": 1, "max_singleton_share": 1, "max_birthday_uniqueness": {"group_size": 3, "max": 1}}')),
		  'qid_check under RLS measures the visible rows only');
SELECT is(pg_temp.as_role('qidrisk_t_north', $$SELECT string_agg(distinct_values::text, ',') FROM column_distinct_counts('patients', ARRAY['birth_year', 'zip', 'region'])$$),
		  (SELECT string_agg(distinct_values::text, ',') FROM column_distinct_counts('pg_temp.north', ARRAY['birth_year', 'zip', 'region'])),
		  'column_distinct_counts under RLS counts the visible rows only');
SELECT is(pg_temp.as_role('qidrisk_t_north', $$SELECT sum(rows)::text FROM hierarchy_generalize('patients', 'zip', 'places', max_values => 4)$$),
		  (SELECT count(*)::text FROM north), 'hierarchy_generalize under RLS counts the visible rows only');
SELECT is(pg_temp.as_role('qidrisk_t_north', 'SELECT quantile_cuts(birth_year, 10)::text FROM patients'),
		  (SELECT quantile_cuts(birth_year, 10)::text FROM north), 'quantile_cuts under RLS sees the visible rows only');
-- a hierarchy under a policy of its own: qidrisk_t_north sees the edges of its
-- region only.  The reference is what the two policies allow, in plain SQL:
-- the visible rows' four ZIP codes (over max_values at level 0) one level up
-- through the visible edges, a ZIP code without one staying itself
CREATE TABLE zones (child text, parent text, region text);
INSERT INTO zones VALUES ('1000', '1xxx', 'north'), ('1001', '1xxx', 'north'),
	('2000', '2xxx', 'south'), ('2001', '2xxx', 'south');
GRANT SELECT ON zones TO qidrisk_t_north;
ALTER TABLE zones ENABLE ROW LEVEL SECURITY;
CREATE POLICY zones_north ON zones FOR SELECT TO qidrisk_t_north USING (region = 'north');
CREATE FUNCTION pg_temp.zones_reference(edges_region text) RETURNS text
LANGUAGE sql AS $$
	SELECT string_agg(concat_ws(':', v.zip, coalesce(z.parent, v.zip), 1, v.n), ','
					  ORDER BY coalesce(z.parent, v.zip), v.zip)
	FROM (SELECT zip, count(*) AS n FROM north GROUP BY zip) v
	LEFT JOIN zones z ON z.child = v.zip AND z.region LIKE edges_region
$$;
SELECT is(pg_temp.as_role('qidrisk_t_north', $$SELECT string_agg(concat_ws(':', value, generalized, level, rows), ',' ORDER BY generalized, value) FROM hierarchy_generalize('patients', 'zip', 'zones', max_values => 3)$$),
		  pg_temp.zones_reference('north'),
		  'hierarchy_generalize under RLS on the hierarchy climbs the visible edges only');
SELECT isnt(pg_temp.zones_reference('north'), pg_temp.zones_reference('%'),
			'(and that differs from climbing every edge, so the test can tell)');

-- 7. the check history: each role reads its own rows, writes only in its own name
SELECT is(pg_temp.as_role('qidrisk_t_north', $$SELECT count(*) FROM qid_check('patients', ARRAY['zip'], '{"min_k": 2}', record_history => true)$$),
		  '1', 'any role may record a check of a table it reads (qid_check writes the row)');
SELECT is(pg_temp.as_role('qidrisk_t_cols', $$SELECT count(*) FROM qid_check('patients', ARRAY['zip'], '{"min_k": 3}', record_history => true)$$),
		  '1', 'a second role records its own check');
SELECT is(pg_temp.as_role('qidrisk_t_north', 'SELECT string_agg(checked_by || policy::text, '','') FROM qid_check_history'),
		  'qidrisk_t_north{"min_k": 2}', 'a role sees only its own history rows');
SELECT is(pg_temp.as_role('qidrisk_t_nobody', 'SELECT count(*) FROM qid_check_history'),
		  '0', 'a role with no runs sees none');
SELECT is(pg_temp.as_role('qidrisk_t_nobody', $$INSERT INTO qidrisk_internal.check_history (checked_by, relation, qid, policy, results, passed) VALUES ('qidrisk_t_north', 'x', '{x}', '{}', '[]', true) RETURNING 1$$),
		  'ERROR 42501', 'nobody can record a run in another role''s name');
SELECT is(pg_temp.as_role('qidrisk_t_north', $$DELETE FROM qid_check_history RETURNING 1$$),
		  'ERROR 42501', 'stewards cannot delete history');
GRANT qidrisk_t_north TO qidrisk_t_cols;
SELECT is(pg_temp.as_role('qidrisk_t_cols', 'SELECT count(*) FROM qid_check_history'),
		  '2', 'a member of a role also sees that role''s rows');
SELECT cmp_ok((SELECT count(*) FROM qid_check_history), '>=', 2::bigint, 'the table owner sees every row');

-- 8. hostile identifiers: quotes, spaces, semicolons, upper case, non-ASCII; no injection
CREATE SCHEMA "Sch ""é"" ;";
CREATE TABLE canary (x integer);
CREATE TABLE "Sch ""é"" ;"."T; DROP TABLE canary; --" ("a""b" integer, "with space" text, "semi;colon" text,
	"UPPER" integer, "été" text, "x); DROP TABLE canary; --" integer);
INSERT INTO "Sch ""é"" ;"."T; DROP TABLE canary; --"
SELECT i % 7, (ARRAY['p', 'q'])[1 + i % 2], (ARRAY['1000', '2000', '1001'])[1 + i % 3], i % 5, 'é' || (i % 4), i % 3
FROM generate_series(1, 90) i;
CREATE TEMP TABLE weird_qid AS
SELECT ARRAY['a"b', 'with space', 'semi;colon', 'UPPER', 'été', 'x); DROP TABLE canary; --'] AS q;
SELECT is((SELECT jsonb_agg(round(measured::numeric, 12) ORDER BY rule)::text FROM weird_qid,
		   qid_check('"Sch ""é"" ;"."T; DROP TABLE canary; --"', q, '{"min_k": 1, "max_singleton_share": 1, "max_rows_below_k": {"k": 3, "max": 1000}, "max_birthday_uniqueness": {"group_size": 2, "max": 1}}')),
		  (SELECT jsonb_build_array(round((1 - sum((n / 90) ^ 2))::numeric, 12), round(sum(n) FILTER (WHERE n < 3)::numeric, 12), round((coalesce(sum(n) FILTER (WHERE n = 1), 0) / 90)::numeric, 12), round(min(n)::numeric, 12))::text
		   FROM (SELECT count(*)::float8 AS n FROM "Sch ""é"" ;"."T; DROP TABLE canary; --"
				 GROUP BY "a""b", "with space", "semi;colon", "UPPER", "été", "x); DROP TABLE canary; --") c),
		  'qid_check with hostile table and column names equals GROUP BY over them');
SELECT is((SELECT string_agg(column_name || '=' || distinct_values, ',') FROM weird_qid,
		   column_distinct_counts('"Sch ""é"" ;"."T; DROP TABLE canary; --"', q)),
		  'a"b=7,with space=2,semi;colon=3,UPPER=5,été=4,x); DROP TABLE canary; --=3',
		  'column_distinct_counts with hostile names');
CREATE TABLE "Sch ""é"" ;"."h""ier; --" ("c h" text, "P;" text);
INSERT INTO "Sch ""é"" ;"."h""ier; --" VALUES ('1000', '1xxx'), ('1001', '1xxx'), ('2000', '2xxx');
SELECT is((SELECT string_agg(generalized || ':' || rows, ',' ORDER BY generalized)
		   FROM hierarchy_generalize('"Sch ""é"" ;"."T; DROP TABLE canary; --"', 'semi;colon', '"Sch ""é"" ;"."h""ier; --"',
									 max_values => 2, child_column => 'c h', parent_column => 'P;')),
		  '1xxx:30,1xxx:30,2xxx:30', 'hierarchy_generalize with hostile table and column names');
SELECT throws_ok($$SELECT * FROM qid_check('patients', ARRAY['zip) FROM patients; DROP TABLE canary; --'], '{"min_k": 2}')$$,
				 '42703', NULL, 'a column name carrying SQL is an unknown column, not SQL');
SELECT throws_ok($$SELECT * FROM qid_check('patients; DROP TABLE canary', ARRAY['zip'], '{"min_k": 2}')$$,
				 '42602', NULL, 'a table name carrying SQL is an invalid name, not SQL');
SELECT has_table('public', 'canary', 'the canary table survived every hostile name');

-- 9. hostile search_path: a schema placed before pg_catalog shadows functions
-- and operators the extension's SQL uses; none of them may be called
CREATE SCHEMA evil;
CREATE FUNCTION evil.hijack() RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN RAISE EXCEPTION 'hijacked' USING ERRCODE = 'XX666'; END$$;
CREATE FUNCTION evil.format(text, text) RETURNS text LANGUAGE sql AS 'SELECT evil.hijack()::text';
CREATE FUNCTION evil.format(text, text, text) RETURNS text LANGUAGE sql AS 'SELECT evil.hijack()::text';
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE sql AS 'SELECT NULL::anyelement FROM evil.hijack()';
CREATE FUNCTION evil.cardinality(anyarray) RETURNS integer LANGUAGE sql AS 'SELECT evil.hijack()::integer';
CREATE FUNCTION evil.jsonb_typeof(jsonb) RETURNS text LANGUAGE sql AS 'SELECT evil.hijack()::text';
CREATE FUNCTION evil.exp(float8) RETURNS float8 LANGUAGE sql AS 'SELECT evil.hijack()::int::float8';
CREATE FUNCTION evil.ln(float8) RETURNS float8 LANGUAGE sql AS 'SELECT evil.hijack()::int::float8';
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT evil.hijack()::text::timestamptz';
CREATE FUNCTION evil.eq(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT evil.hijack()';
CREATE FUNCTION evil.eq(name, name) RETURNS boolean LANGUAGE sql AS 'SELECT evil.hijack()';
CREATE FUNCTION evil.eq(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT evil.hijack()';
CREATE FUNCTION evil.lt(float8, float8) RETURNS boolean LANGUAGE sql AS 'SELECT evil.hijack()';
CREATE FUNCTION evil.has(jsonb, text) RETURNS boolean LANGUAGE sql AS 'SELECT evil.hijack()';
CREATE FUNCTION evil.count_sfunc(bigint, anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT evil.hijack()::int::bigint';
CREATE AGGREGATE evil.count(anyelement) (SFUNC = evil.count_sfunc, STYPE = bigint);
CREATE FUNCTION evil.string_agg_sfunc(text, text, text) RETURNS text LANGUAGE sql AS 'SELECT evil.hijack()::text';
CREATE AGGREGATE evil.string_agg(text, text) (SFUNC = evil.string_agg_sfunc, STYPE = text);
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.eq);
CREATE OPERATOR evil.= (LEFTARG = name, RIGHTARG = name, FUNCTION = evil.eq);
CREATE OPERATOR evil.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.eq);
CREATE OPERATOR evil.< (LEFTARG = float8, RIGHTARG = float8, FUNCTION = evil.lt);
CREATE OPERATOR evil.? (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = evil.has);

-- Evaluate one statement with the hostile schema first on the path
CREATE FUNCTION pg_temp.hostile(stmt text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
	res text;
BEGIN
	PERFORM set_config('search_path', 'evil, pg_catalog, public', true);
	IF starts_with(stmt, 'CALL') THEN
		EXECUTE stmt;
	ELSE
		EXECUTE stmt INTO res;
	END IF;
	RETURN res;
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE || ' ' || SQLERRM;
END
$$;
CREATE FUNCTION pg_temp.clean(stmt text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
	res text;
BEGIN
	EXECUTE stmt INTO res;
	RETURN res;
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE || ' ' || SQLERRM;
END
$$;
SELECT is(pg_temp.hostile($$SELECT 'a' = 'a'$$), 'ERROR XX666 hijacked',
		  'the hostile schema does hijack unqualified SQL (so the tests below can fail)');
-- the clean run must give an answer: two runs that fail alike prove nothing
SELECT is(pg_temp.hostile(s),
		  CASE WHEN c IS NULL OR c LIKE 'ERROR %' THEN 'an answer from the clean run, not ' || coalesce(c, 'NULL') ELSE c END,
		  'hostile search_path changes nothing: ' || s)
FROM unnest(ARRAY[
	$$SELECT jsonb_agg(to_jsonb(c))::text FROM public.qid_check('public.patients', ARRAY['sex', 'zip'], '{"min_k": 3, "max_singleton_share": 0.5, "max_rows_below_k": {"k": 40, "max": 1}, "max_birthday_uniqueness": {"group_size": 3, "max": 0.9}}') c$$,
	$$SELECT pg_catalog.string_agg(c.column_name || '=' || c.distinct_values, ',') FROM public.column_distinct_counts('public.patients', ARRAY['sex', 'zip']) c$$,
	$$SELECT pg_catalog.string_agg(c.column_name || '=' || c.distinct_values, ',') FROM public.column_distinct_counts('public.patients', ARRAY['sex', 'zip'], true) c$$,
	$$SELECT public.distinct_product('public.patients', ARRAY['sex', 'zip'])::text$$,
	$$SELECT jsonb_agg(to_jsonb(c))::text FROM public.column_budgets('public.patients', ARRAY['birth_year', 'zip'], 1e5, 5) c$$,
	$$SELECT jsonb_agg(to_jsonb(h))::text FROM public.hierarchy_generalize('public.patients', 'zip', 'public.places', max_values => 2) h$$,
	$$SELECT jsonb_agg(to_jsonb(h))::text FROM public.class_histogram((SELECT public.class_profile(zip, sex) FROM public.patients)) h$$,
	$$SELECT public.rows_below((SELECT public.class_profile(birth_year, sex) FROM public.patients), 8)::text$$,
	$$SELECT public.quantile_bucket_value(5, ARRAY[1, 4, 8], ARRAY[2, 6, 9])::text$$,
	$$SELECT jsonb_agg(to_jsonb(r))::text FROM public.qid_check_rules() r$$,
	$$SELECT jsonb_agg(to_jsonb(h) ORDER BY h.value)::text FROM public.hierarchy_levels('public.places') h$$]) AS s,
	LATERAL pg_temp.clean(s) AS c;
SELECT is(pg_temp.hostile($$CALL public.qid_assert('public.patients', ARRAY['zip'], '{"min_k": 2}')$$), NULL,
		  'qid_assert passes under a hostile search_path');
SELECT is(pg_temp.hostile($$CALL public.qid_assert('public.patients', ARRAY['sex', 'zip'], '{"min_k": 51}')$$),
		  'ERROR QR001 qidrisk policy check failed for public.patients: min_k',
		  'qid_assert fails with QR001, not a hijacked call, under a hostile search_path');

SELECT is((SELECT md5(string_agg(p::text, ',' ORDER BY id)) FROM patients p), h, 'the checked table is unchanged')
FROM patients_before;

SELECT * FROM finish();
ROLLBACK;
