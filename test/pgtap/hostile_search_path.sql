-- Every function that generates SQL, run with a hostile schema first on the
-- search_path (before pg_catalog): operators = <> < > for varchar, text,
-- bpchar, integers, numeric and float8, functions and aggregates the
-- generated SQL could name (casts written as functions, to_jsonb, count,
-- min, ...), and domains named like the types it casts to (text, float8,
-- int4, ...).  Each hostile object counts its call in a sequence and raises;
-- every function must give the answer it gives with a clean search_path, and
-- the sequence must never be called.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(43);

CREATE TABLE customers (id serial, zip varchar(5), city text, age integer, sex char(1), w float8);
INSERT INTO customers (zip, city, age, sex, w)
SELECT CASE WHEN i % 17 = 0 THEN '' ELSE (ARRAY['1000', '1001', '2000', '2001'])[1 + i % 4] END,
	   CASE WHEN i % 23 = 0 THEN NULL ELSE (ARRAY['Bern', 'Basel', 'Genf'])[1 + i % 3] END,
	   20 + i % 9, (ARRAY['F', 'M'])[1 + i % 2], 1 + i % 4
FROM generate_series(1, 150) i;
ANALYZE customers;
CREATE TABLE population AS
SELECT (ARRAY['1000', '1001', '2000', '2001'])[1 + i % 4]::varchar(5) AS zip, 20 + i % 9 AS age,
	   (1 + i % 3)::numeric AS w
FROM generate_series(1, 900) i;
CREATE TABLE zip_tree (child text, parent text);
INSERT INTO zip_tree VALUES ('1000', '1xxx'), ('1001', '1xxx'), ('2000', '2xxx'), ('2001', '2xxx');
CREATE TABLE city_map ("from" text, "to" text);
INSERT INTO city_map VALUES ('Bern', 'BE'), ('Basel', 'BS');

CREATE SCHEMA hostile;
CREATE SEQUENCE hostile.hits;
CREATE FUNCTION hostile.trap() RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN PERFORM pg_catalog.nextval('hostile.hits'); RAISE EXCEPTION 'hijacked' USING ERRCODE = 'XX666'; END$$;
-- operators
DO $$
DECLARE
	t text;
	op text;
BEGIN
	FOREACH t IN ARRAY ARRAY['varchar', 'text', 'bpchar', 'int2', 'int4', 'int8', 'numeric', 'float8', 'name'] LOOP
		EXECUTE format('CREATE FUNCTION hostile.op(pg_catalog.%1$s, pg_catalog.%1$s) RETURNS boolean LANGUAGE sql AS ''SELECT hostile.trap()''', t);
		FOREACH op IN ARRAY ARRAY['=', '<>', '<', '>', '<=', '>='] LOOP
			EXECUTE format('CREATE OPERATOR hostile.%2$s (LEFTARG = pg_catalog.%1$s, RIGHTARG = pg_catalog.%1$s, FUNCTION = hostile.op)', t, op);
		END LOOP;
	END LOOP;
	-- mixed string operands, and string against an untyped literal
	CREATE FUNCTION hostile.op(pg_catalog.varchar, pg_catalog.text) RETURNS boolean LANGUAGE sql AS 'SELECT hostile.trap()';
	CREATE FUNCTION hostile.op(pg_catalog.text, pg_catalog.varchar) RETURNS boolean LANGUAGE sql AS 'SELECT hostile.trap()';
	CREATE OPERATOR hostile.= (LEFTARG = pg_catalog.varchar, RIGHTARG = pg_catalog.text, FUNCTION = hostile.op);
	CREATE OPERATOR hostile.= (LEFTARG = pg_catalog.text, RIGHTARG = pg_catalog.varchar, FUNCTION = hostile.op);
	CREATE OPERATOR hostile.<> (LEFTARG = pg_catalog.varchar, RIGHTARG = pg_catalog.text, FUNCTION = hostile.op);
	CREATE OPERATOR hostile.<> (LEFTARG = pg_catalog.text, RIGHTARG = pg_catalog.varchar, FUNCTION = hostile.op);
	-- domains named like the types generated SQL casts to
	FOREACH t IN ARRAY ARRAY['text', 'float8', 'int4', 'int8', 'numeric', 'jsonb', 'bytea', 'varchar'] LOOP
		EXECUTE format('CREATE DOMAIN hostile.%1$s AS pg_catalog.%1$s CHECK (hostile.trap())', t);
	END LOOP;
END
$$;
-- functions and aggregates
CREATE FUNCTION hostile.text(pg_catalog.int4) RETURNS pg_catalog.text LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.text';
CREATE FUNCTION hostile.text(pg_catalog.varchar) RETURNS pg_catalog.text LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.text';
CREATE FUNCTION hostile.float8(pg_catalog.int4) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.int4::pg_catalog.float8';
CREATE FUNCTION hostile.float8(pg_catalog.numeric) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.int4::pg_catalog.float8';
CREATE FUNCTION hostile.to_jsonb(anyelement) RETURNS pg_catalog.jsonb LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.text::pg_catalog.jsonb';
CREATE FUNCTION hostile.lower(pg_catalog.text) RETURNS pg_catalog.text LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.text';
CREATE FUNCTION hostile.length(pg_catalog.text) RETURNS pg_catalog.int4 LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.int4';
CREATE FUNCTION hostile.quote_ident(pg_catalog.text) RETURNS pg_catalog.text LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.text';
CREATE FUNCTION hostile.sfunc(pg_catalog.int8, anyelement) RETURNS pg_catalog.int8 LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.int4::pg_catalog.int8';
CREATE AGGREGATE hostile.count(anyelement) (SFUNC = hostile.sfunc, STYPE = pg_catalog.int8);
CREATE FUNCTION hostile.fsfunc(pg_catalog.float8, pg_catalog.float8) RETURNS pg_catalog.float8 LANGUAGE sql AS 'SELECT hostile.trap()::pg_catalog.int4::pg_catalog.float8';
CREATE AGGREGATE hostile.min(pg_catalog.float8) (SFUNC = hostile.fsfunc, STYPE = pg_catalog.float8);
CREATE AGGREGATE hostile.max(pg_catalog.float8) (SFUNC = hostile.fsfunc, STYPE = pg_catalog.float8);
CREATE AGGREGATE hostile.sum(pg_catalog.float8) (SFUNC = hostile.fsfunc, STYPE = pg_catalog.float8);

-- A statement's rows as sorted jsonb text (or its error), with or without the hostile path
CREATE FUNCTION pg_temp.run(stmt text, hostile boolean) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
	query text := 'SELECT pg_catalog.jsonb_agg(x ORDER BY x::pg_catalog.text)::pg_catalog.text FROM ('
				  || stmt || ') x';
	res text;
BEGIN
	IF hostile THEN
		PERFORM set_config('search_path', 'hostile, pg_catalog, public', true);
	END IF;
	EXECUTE query INTO res;
	PERFORM set_config('search_path', 'pg_catalog, public', true);
	-- long answers compare by their digest, so that a failure prints short
	RETURN CASE WHEN res IS NULL THEN 'NULL' WHEN pg_catalog.length(res) <= 200 THEN res
				ELSE pg_catalog.left(res, 120) || '... md5 ' || pg_catalog.md5(res) END;
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE || ' ' || SQLERRM;
END
$$;

SELECT is(pg_temp.run($$SELECT 1 WHERE 'a'::pg_catalog.varchar = 'a'$$, true), 'ERROR XX666 hijacked',
		  'the hostile schema does hijack unqualified SQL (so the tests below can fail)');
SELECT is(pg_catalog.setval('hostile.hits', 1, false), 1::bigint, 'the hit counter starts afresh');

CREATE TEMP TABLE statements (s text);
INSERT INTO statements VALUES
 ($$SELECT * FROM public.qid_search('public.customers', ARRAY['zip', 'city', 'age', 'sex'])$$),
 ($$SELECT * FROM public.qid_search('public.customers', ARRAY['zip', 'city', 'sex'], drop_incomplete => true)$$),
 ($$SELECT * FROM public.qid_search('public.customers', NULL, 2, drop_incomplete => true)$$),
 ($$SELECT * FROM public.qid_generalize('public.customers', ARRAY['zip', 'city', 'age'], '[{"name": "a", "columns": {"zip": {"constant": "*"}}}, {"name": "b", "local": true, "columns": {"age": {"range": 20}}}, {"name": "c", "columns": {"age": {"mean": 20}}}, {"name": "m", "columns": {"city": {"map": "public.city_map"}}}]', drop_incomplete => true)$$),
 ($$SELECT * FROM public.qid_generalize('public.customers', ARRAY['zip', 'city'], '{"columns": {"city": {"map": "city_map"}}}')$$),
 ($$SELECT * FROM public.kmap_count('public.customers', 'public.population', ARRAY['zip', 'age'])$$),
 ($$SELECT * FROM public.kmap_count('public.customers', 'public.population', ARRAY['zip', 'age'], 'w')$$),
 ($$SELECT release_rows, population_rows FROM public.kmap_row_counts('public.customers', 'public.population', ARRAY['zip', 'age'], 'w')$$),
 ($$SELECT public.kmap_value('public.customers', 'public.population', ARRAY['zip', 'age'])$$),
 ($$SELECT public.kmap_rows_below('public.customers', 'public.population', ARRAY['zip', 'age'], 30)$$),
 ($$SELECT * FROM public.weighted_risk('public.customers', ARRAY['zip', 'city'], 'w')$$),
 ($$SELECT * FROM public.weighted_risk_summary('public.customers', ARRAY['zip', 'city'], 'w', 'exact')$$),
 ($$SELECT * FROM public.qar_thetas('public.customers', ARRAY['zip', 'city', 'age', 'sex'], 2)$$),
 ($$SELECT * FROM public.qar_risk('public.customers', ARRAY['zip', 'city', 'age', 'sex', 'w'], 2, 0.01, 0.5)$$),
 ($$SELECT * FROM public.qar_record_scores('public.customers', ARRAY['zip', 'city', 'age', 'sex'], 2, 'id')$$),
 ($$SELECT * FROM public.qar_record_scores('public.customers', ARRAY['zip', 'city', 'age'], 2)$$),
 ($$SELECT * FROM public.qar_record_scores('public.customers', ARRAY['city', 'age'], 1, 'zip')$$),
 ($$SELECT * FROM public.qar_record_contributions('public.customers', ARRAY['zip', 'city', 'age', 'sex', 'w'], 2, 'id', 0.01, 0.5)$$),
 ($$SELECT * FROM public.qar_record_entropy('public.customers', ARRAY['zip', 'city', 'age'], 2, 'id')$$),
 ($$SELECT * FROM public.qar_greedy_removal('public.customers', ARRAY['zip', 'city', 'age'], 2, 'id', 3)$$),
 ($$SELECT * FROM public.qid_check('public.customers', ARRAY['zip', 'age'], '{"min_k": 2, "max_singleton_share": 0.5, "max_rows_below_k": {"k": 3, "max": 100}, "max_birthday_uniqueness": {"group_size": 3, "max": 1}, "min_kmap": {"population": "population", "k": 1, "weight": "w"}, "max_qar_risk": {"max": 1, "columns": ["zip", "age", "city", "sex", "w"], "p": 2, "pi_u": 0.5}}')$$),
 ($$SELECT * FROM public.column_distinct_counts('public.customers', ARRAY['zip', 'city', 'age'])$$),
 ($$SELECT * FROM public.column_distinct_counts('public.customers', ARRAY['zip', 'city', 'age'], true)$$),
 ($$SELECT * FROM public.column_budgets('public.customers', ARRAY['zip', 'city', 'age'], 1e5, 5)$$),
 ($$SELECT public.distinct_product('public.customers', ARRAY['zip', 'city', 'sex'])$$),
 ($$SELECT * FROM public.hierarchy_generalize('public.customers', 'zip', 'public.zip_tree', max_values => 3)$$),
 ($$SELECT * FROM public.hierarchy_levels('public.zip_tree', 'child', 'parent')$$),
 ($$SELECT qidrisk_internal.qidrisk_complete_filter('public.customers', ARRAY['zip', 'city', 'age'])$$);

-- the clean answers first, then the hostile runs
CREATE TEMP TABLE clean AS SELECT s, pg_temp.run(s, false) AS r FROM statements;
SELECT is((SELECT count(*) FROM clean WHERE r LIKE 'ERROR%' OR r = 'NULL'), 0::bigint,
		  'every statement answers with a clean search_path');
SELECT is(pg_temp.run(c.s, true), c.r, 'hostile search_path changes nothing: ' || left(c.s, 110))
FROM clean c;

-- the grouped scans (a Citus table's: GROUP BY qid_key) give the probe's answers, hostile or not
SET LOCAL qidrisk.kmap_population_scan = grouped;
SELECT is(pg_temp.run(c.s, true), c.r, 'grouped scans, hostile search_path: ' || left(c.s, 100))
FROM clean c WHERE c.s ~ 'kmap|weighted_risk';
SET LOCAL qidrisk.kmap_population_scan = DEFAULT;

-- qid_generalize_into writes a table: the same rows both ways
SELECT is(pg_temp.run($$SELECT public.qid_generalize_into('public.customers', ARRAY['zip', 'city'], '{"columns": {"zip": {"constant": "*"}, "city": {"map": "city_map"}}}', 'gen_hostile', true)$$, true),
		  pg_temp.run($$SELECT public.qid_generalize_into('public.customers', ARRAY['zip', 'city'], '{"columns": {"zip": {"constant": "*"}, "city": {"map": "city_map"}}}', 'gen_clean', true)$$, false),
		  'qid_generalize_into writes as many rows under the hostile search_path');
SELECT cmp_ok((SELECT count(*) FROM gen_hostile), '>', 100::bigint, 'it wrote the complete rows');
SELECT is((SELECT count(*) FROM (SELECT * FROM gen_clean EXCEPT ALL SELECT * FROM gen_hostile
								 UNION ALL (SELECT * FROM gen_hostile EXCEPT ALL SELECT * FROM gen_clean)) d),
		  0::bigint, 'the two written tables are equal');

SELECT is((SELECT is_called FROM hostile.hits), false, 'no hostile object was ever called');

SELECT * FROM finish();
ROLLBACK;
