#!/bin/bash
# Planted objects, as TAP (run by test/suites.sh through prove): a database
# owner without superuser installs qidrisk into public, which it owns, and
# plants there and in a schema on the superuser's search_path functions,
# aggregates and operators that match the calls qidrisk's own SQL makes
# better than qidrisk's objects do (VARIADIC "any" and polymorphic ones
# most of all).  Each planted object, run by a superuser, makes the owner
# superuser and notes that it ran.  A superuser then runs every function
# that generates SQL or calls other qidrisk functions, over integer and text
# columns: nothing planted runs, and the owner stays a plain role.  Also:
# the extension's schema holds only documented functions, and the internal
# schema accepts no object from the owner.
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
OWNER=qidrisk_pl_owner
DB=qidrisk_pl

cleanup() {
	q -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null
	q -d postgres -c "DROP ROLE IF EXISTS $OWNER" 2>/dev/null
}
cleanup
[ -n "${PLANTED_KEEP:-}" ] || trap cleanup EXIT
q -d postgres -c "CREATE ROLE $OWNER" -c "CREATE DATABASE $DB OWNER $OWNER"
as $OWNER $DB -c "CREATE EXTENSION qidrisk" >/dev/null

# The owner's data: integer and text QIDs, hierarchies of each layout, a
# population, a mapping table
as $OWNER $DB -f - >/dev/null <<'SQL'
CREATE TABLE people (age integer, zip text, sex text, income integer, w float8);
INSERT INTO people SELECT 20 + i % 50, (10000 + i % 37)::text, CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END,
	i % 7, 1 + i % 4 FROM generate_series(1, 600) i;
CREATE TABLE census AS SELECT * FROM people UNION ALL SELECT * FROM people;
CREATE TABLE zip_h (value text, l1 text, l2 text);
INSERT INTO zip_h SELECT DISTINCT zip, left(zip, 4), '*' FROM people;
CREATE TABLE zip_pc (child text, parent text);
INSERT INTO zip_pc SELECT DISTINCT zip, left(zip, 4) FROM people UNION SELECT DISTINCT left(zip, 4), '*' FROM people;
CREATE TABLE sex_h (value text, l1 text);
INSERT INTO sex_h VALUES ('F', '*'), ('M', '*');
CREATE TABLE zip_map (f text, t text);
INSERT INTO zip_map SELECT DISTINCT zip, left(zip, 4) FROM people;
SQL

# The planted objects: each one, run by a superuser, makes the owner superuser
# and leaves a mark in the session
as $OWNER $DB -f - >/dev/null <<SQL
CREATE SCHEMA trap;
GRANT USAGE ON SCHEMA trap TO PUBLIC;
CREATE FUNCTION public.planted(what text) RETURNS integer LANGUAGE plpgsql AS \$\$
BEGIN
	IF pg_catalog.strpos(pg_catalog.coalesce(pg_catalog.current_setting('qidrisk_pl.ran', true), ''), what) = 0 THEN
		PERFORM pg_catalog.set_config('qidrisk_pl.ran', pg_catalog.current_setting('qidrisk_pl.ran', true) || ' ' || what, false);
	END IF;
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE $OWNER SUPERUSER';
	END IF;
	RETURN 1;
END \$\$;
DO \$\$
DECLARE
	f text;
	sig text;
BEGIN
	-- functions: every documented name that qidrisk's SQL calls, over the
	-- test's column types, in public and in trap
	FOREACH f IN ARRAY ARRAY['qid_key', 'quantile_bucket', 'quantile_bucket_label', 'kmap_count', 'individual_risk',
		'qar_risk', 'qid_lattice', 'bucket_budget', 'anonymity_partitions', 'column_distinct_counts', 'kmap_value',
		'weighted_risk', 'hierarchy_levels', 'interval_hierarchy', 'qid_check_rules', 'rows_below', 'qid_check',
		'kmap_row_counts', 'quantile_cuts', 'quantile_means'] LOOP
		FOREACH sig IN ARRAY ARRAY['integer', 'text', 'integer, text', 'text, integer', 'integer, integer', 'text, text',
			'integer, integer[]', 'integer, text, text', 'text, text, text', 'integer, text, text, integer'] LOOP
			BEGIN
				EXECUTE format('CREATE FUNCTION public.%I(%s) RETURNS integer LANGUAGE sql AS %L', f, sig,
							   format('SELECT public.planted(%L)', 'public.' || f));
			EXCEPTION WHEN duplicate_function THEN NULL;
			END;
			EXECUTE format('CREATE FUNCTION trap.%I(%s) RETURNS integer LANGUAGE sql AS %L', f, sig,
						   format('SELECT public.planted(%L)', 'trap.' || f));
		END LOOP;
	END LOOP;
	-- aggregates over the same types
	FOREACH f IN ARRAY ARRAY['class_profile', 'k_anonymity', 'singleton_count', 'quantile_cuts', 'quantile_means',
		'birthday_uniqueness_exact', 'l_diversity', 'entropy_l_diversity', 't_closeness', 't_closeness_ordered'] LOOP
		FOREACH sig IN ARRAY ARRAY['integer', 'text', 'integer, text', 'text, integer', 'integer, integer', 'text, text',
			'integer, integer[]', 'bigint, integer', 'bigint, text', 'integer, text, text', 'text, integer, text'] LOOP
			EXECUTE format('CREATE OR REPLACE FUNCTION public.planted_sfunc(integer, %s) RETURNS integer LANGUAGE sql AS %L',
						   sig, 'SELECT public.planted(''aggregate'')');
			BEGIN
				EXECUTE format('CREATE AGGREGATE public.%I(%s) (SFUNC = public.planted_sfunc, STYPE = integer)', f, sig);
			EXCEPTION WHEN duplicate_function THEN NULL;
			END;
			BEGIN
				EXECUTE format('CREATE AGGREGATE trap.%I(%s) (SFUNC = public.planted_sfunc, STYPE = integer)', f, sig);
			EXCEPTION WHEN duplicate_function THEN NULL;
			END;
		END LOOP;
	END LOOP;
END \$\$;
-- operators a generated statement could use, in both schemas
CREATE FUNCTION public.planted_op(anyelement, anyelement) RETURNS boolean LANGUAGE sql AS 'SELECT public.planted(''operator'') = 1';
CREATE FUNCTION public.planted_op_text(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT public.planted(''operator'') = 1';
CREATE FUNCTION public.planted_op_int(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT public.planted(''operator'') = 1';
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.planted_op_text);
CREATE OPERATOR public.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.planted_op_text);
CREATE OPERATOR public.< (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.planted_op_int);
CREATE OPERATOR trap.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.planted_op_int);
CREATE OPERATOR trap.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.planted_op_text);
-- types named as the ones qidrisk's SQL casts to, whose check runs the plant,
-- and a cast into one of them
CREATE DOMAIN trap.text AS pg_catalog.text CHECK (public.planted('type text') = 1);
CREATE DOMAIN trap.jsonb AS pg_catalog.jsonb CHECK (public.planted('type jsonb') = 1);
CREATE DOMAIN trap.regclass AS pg_catalog.regclass CHECK (public.planted('type regclass') = 1);
CREATE DOMAIN trap.float8 AS pg_catalog.float8 CHECK (public.planted('type float8') = 1);
CREATE DOMAIN trap.uuid AS pg_catalog.uuid CHECK (public.planted('type uuid') = 1);
CREATE TYPE trap.qid_profile AS (x integer);
CREATE TYPE trap.box2 AS (x integer);
CREATE FUNCTION public.planted_cast(integer) RETURNS trap.box2 LANGUAGE sql AS 'SELECT ROW(public.planted(''cast''))::trap.box2';
CREATE CAST (integer AS trap.box2) WITH FUNCTION public.planted_cast(integer) AS IMPLICIT;
SQL
planted=$(q -d $DB -c "SELECT count(*) FROM pg_proc WHERE proowner = '$OWNER'::regrole")
ok "$((planted > 300))" "1" "the owner planted $planted functions and aggregates in public and trap"

superuser() { q -d postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = '$OWNER'"; }

# run SQL as the superuser with trap first on the search_path; prints
# "ran: <marks>" (empty when nothing planted ran) or the error
run() {
	psql -X -qAt -v ON_ERROR_STOP=1 -d $DB -c "SET search_path = $SEARCH_PATH" -c "$1" \
		-c "SELECT pg_catalog.concat('ran:', pg_catalog.current_setting('qidrisk_pl.ran', true))" 2>&1 | tail -${RUN_LINES:-1}
}
HIER='{"age": {"widths": [10, 20]}, "zip": "zip_h", "sex": {"table": "sex_h"}}'
HIER_PC='{"age": {"cuts": [[30, 40, 50], [40]]}, "zip": {"table": "zip_pc", "child": "child", "parent": "parent"}}'
POLICY='{"min_k": 2, "max_singleton_share": 1, "max_rows_below_k": {"k": 3, "max": 1000}, "max_birthday_uniqueness": {"group_size": 3, "max": 1}, "min_kmap": {"population": "census", "k": 1}, "max_qar_risk": {"max": 1, "columns": ["age", "zip", "sex", "income"], "p": 2}, "min_l": {"sensitive": "income", "l": 1}, "max_t": {"sensitive": "income", "max": 1, "distance": "ordered"}}'
# The superuser's own calls name qidrisk's functions with exact argument
# types, as a caller who does not trust the owner must: only what qidrisk
# runs on its behalf is under test
P="'people'::pg_catalog.regclass"
C="'census'::pg_catalog.regclass"
# the plants first on the search_path; then before pg_catalog too
calls() {
	cat <<SQL
qid_anonymize_into (hierarchy tables, widths)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 'pg_temp.r1'::pg_catalog.text, 5)
qid_anonymize_into (child/parent, cuts, local recoding, l)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip}'::pg_catalog.text[], '$HIER_PC'::pg_catalog.jsonb, 'pg_temp.r2'::pg_catalog.text, 5, 0.02::pg_catalog.float8, 'income'::pg_catalog.text, 2, local_recoding => true)
qid_lattice|SELECT pg_catalog.count(*) FROM public.qid_lattice($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 5, 0.02::pg_catalog.float8, 'income'::pg_catalog.text, 2, t => 1::pg_catalog.float8)
qid_lattice (heuristic search)|SELECT pg_catalog.count(*) FROM public.qid_lattice($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 5, 0.02::pg_catalog.float8, search => 'heuristic'::pg_catalog.text)
qid_anonymize_into (heuristic search)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 'pg_temp.r3'::pg_catalog.text, 5, search => 'heuristic'::pg_catalog.text)
qid_anonymize_into (loss metric, weights)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 'pg_temp.r4'::pg_catalog.text, 5, 0.02::pg_catalog.float8, metric => 'loss'::pg_catalog.text, gs_factor => 0.25::pg_catalog.float8, weights => '{"age": 2}'::pg_catalog.jsonb)
qid_anonymize_into (privacy: k-map, beta-likeness)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 'pg_temp.r5'::pg_catalog.text, 2, 0.5::pg_catalog.float8, 'income'::pg_catalog.text, privacy => '{"k_map": {"k": 3, "sampling_fraction": 0.5}, "beta_likeness": {"beta": 5, "variant": "enhanced"}}'::pg_catalog.jsonb)
qid_anonymize_into (privacy: average risk, population uniqueness)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 'pg_temp.r6'::pg_catalog.text, 1, 1::pg_catalog.float8, privacy => '{"average_risk": {"max": 0.5}, "population_uniqueness": {"max": 0.5, "sampling_fraction": 0.5, "model": "zayatz"}}'::pg_catalog.jsonb)
qid_anonymize_into (privacy: k-map against a population, delta-presence)|SELECT pg_catalog.count(*) FROM public.qid_anonymize_into($P, '{age,zip,sex}'::pg_catalog.text[], '$HIER'::pg_catalog.jsonb, 'pg_temp.r7'::pg_catalog.text, 1, 1::pg_catalog.float8, privacy => '{"k_map": {"k": 1, "population": "people"}, "delta_presence": {"max": 1, "population": "people"}}'::pg_catalog.jsonb)
qid_check (every rule)|SELECT pg_catalog.count(*) FROM public.qid_check($P, '{age,zip,sex}'::pg_catalog.text[], '$POLICY'::pg_catalog.jsonb)
qid_check (history)|SELECT pg_catalog.count(*) FROM public.qid_check($P, '{age,zip}'::pg_catalog.text[], '{"min_k": 1}'::pg_catalog.jsonb, true)
qid_assert|CALL public.qid_assert($P, '{age,zip}'::pg_catalog.text[], '{"min_k": 1}'::pg_catalog.jsonb)
qid_generalize (map, range, mean, constant)|SELECT pg_catalog.count(*) FROM public.qid_generalize($P, '{age,zip,sex,income}'::pg_catalog.text[], '{"columns": {"zip": {"map": "zip_map", "from": "f", "to": "t"}, "age": {"range": 5}, "income": {"mean": 30}, "sex": {"constant": "*"}}}'::pg_catalog.jsonb, true)
qid_generalize (local, mean)|SELECT pg_catalog.count(*) FROM public.qid_generalize($P, '{age,zip}'::pg_catalog.text[], '{"local": true, "columns": {"age": {"mean": 4}}}'::pg_catalog.jsonb)
qid_generalize_into|SELECT public.qid_generalize_into($P, '{age,zip}'::pg_catalog.text[], '{"columns": {"zip": {"map": "zip_map", "from": "f", "to": "t"}}}'::pg_catalog.jsonb, 'pg_temp.g1'::pg_catalog.text)
kmap_count, kmap_value, kmap_rows_below, kmap_row_counts|SELECT (SELECT pg_catalog.count(*) FROM public.kmap_count($P, $C, '{age,zip}'::pg_catalog.text[], 'w'::pg_catalog.text)) + public.kmap_value($P, $C, '{age,zip}'::pg_catalog.text[]) + public.kmap_rows_below($P, $C, '{age,zip}'::pg_catalog.text[], 3::pg_catalog.int4) + (SELECT pg_catalog.count(*) FROM public.kmap_row_counts($P, $C, '{age,zip}'::pg_catalog.text[]))
weighted_risk, weighted_risk_summary|SELECT (SELECT pg_catalog.count(*) FROM public.weighted_risk($P, '{age,zip}'::pg_catalog.text[], 'w'::pg_catalog.text)) + (SELECT pg_catalog.count(*) FROM public.weighted_risk_summary($P, '{age,zip}'::pg_catalog.text[], 'w'::pg_catalog.text))
column_distinct_counts, distinct_product, column_budgets|SELECT (SELECT pg_catalog.count(*) FROM public.column_distinct_counts($P, '{age,zip}'::pg_catalog.text[])) + public.distinct_product($P, '{age,zip}'::pg_catalog.text[]) + (SELECT pg_catalog.count(*) FROM public.column_budgets($P, '{age,zip}'::pg_catalog.text[], 1e6::pg_catalog.float8, 5::pg_catalog.int4))
hierarchy_levels, interval_hierarchy, hierarchy_generalize|SELECT (SELECT pg_catalog.count(*) FROM public.hierarchy_levels('zip_h'::pg_catalog.regclass)) + (SELECT pg_catalog.count(*) FROM public.hierarchy_levels('zip_pc'::pg_catalog.regclass, 'child'::pg_catalog.text, 'parent'::pg_catalog.text)) + (SELECT pg_catalog.count(*) FROM public.interval_hierarchy($P, 'age'::pg_catalog.text, '{"widths": [10]}'::pg_catalog.jsonb)) + (SELECT pg_catalog.count(*) FROM public.hierarchy_generalize($P, 'zip'::pg_catalog.text, 'zip_pc'::pg_catalog.regclass, max_values => 5::pg_catalog.int8))
quantile_bucket_value|SELECT public.quantile_bucket_value(age, '{30,40}'::pg_catalog.int4[], '{1,2}'::pg_catalog.int4[]) FROM public.people LIMIT 1
qid_search (drop_incomplete)|SELECT pg_catalog.count(*) FROM public.qid_search($P, '{age,zip,sex}'::pg_catalog.text[], drop_incomplete => true)
population_uniqueness, reidentification_risk|SELECT (SELECT pg_catalog.count(*) FROM public.population_uniqueness($P, '{age,zip,sex}'::pg_catalog.text[], 0.1::pg_catalog.float8)) + (SELECT rows FROM public.reidentification_risk($P, '{age,zip}'::pg_catalog.text[], 0.2::pg_catalog.float8, $C, 'w'::pg_catalog.text))
qar_risk, qar_thetas|SELECT (SELECT pg_catalog.count(*) FROM public.qar_thetas($P, '{age,zip,sex,income}'::pg_catalog.text[], 2)) + (SELECT risk FROM public.qar_risk($P, '{sex,income,w,age,zip}'::pg_catalog.text[], 2, 0.01::pg_catalog.float8, 0.5::pg_catalog.float8))
SQL
}
for SEARCH_PATH in "trap, public" "trap, pg_catalog, public"; do
	while IFS='|' read -r name sql; do
		[ -z "$name" ] && continue
		ok "$(run "$sql")" "ran:" "a superuser's $name calls nothing the owner planted (search_path $SEARCH_PATH)"
	done < <(calls)
done
ok "$(superuser)" "f" "after all of it the owner is not superuser"

# The internal schema: the superuser's, no object of the owner's
ok "$(q -d $DB -c "SELECT pg_get_userbyid(nspowner) <> '$OWNER', has_schema_privilege('$OWNER', oid, 'CREATE'), has_schema_privilege('public', oid, 'USAGE') FROM pg_namespace WHERE nspname = 'qidrisk_internal'")" \
	"t|f|t" "qidrisk_internal belongs to the installing superuser; every role may use it, the owner may not create in it"
ok "$(as $OWNER $DB -c "CREATE FUNCTION qidrisk_internal.qid_key(integer) RETURNS uuid LANGUAGE sql AS 'SELECT NULL::uuid'" 2>&1 | grep -o 'permission denied for schema qidrisk_internal')" \
	"permission denied for schema qidrisk_internal" "the owner cannot create a function in qidrisk_internal"
ok "$(as $OWNER $DB -c "ALTER SCHEMA qidrisk_internal RENAME TO x" 2>&1 | grep -o 'must be owner of schema qidrisk_internal')" \
	"must be owner of schema qidrisk_internal" "nor rename it"
# a schema of that name made beforehand stops the installation
q -d postgres -c "CREATE DATABASE ${DB}_pre OWNER $OWNER" >/dev/null
ok "$(as $OWNER ${DB}_pre -c "CREATE SCHEMA qidrisk_internal" -c "CREATE EXTENSION qidrisk" 2>&1 | grep -o 'schema "qidrisk_internal" already exists')" \
	'schema "qidrisk_internal" already exists' "an installation where the owner made qidrisk_internal first fails"
q -d postgres -c "DROP DATABASE ${DB}_pre" >/dev/null
ok "$(q -d $DB -c "SELECT count(*) FROM pg_depend d JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
	WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'qidrisk')
	AND p.pronamespace <> 'qidrisk_internal'::regnamespace AND p.proname LIKE 'qidrisk%'")" "0" \
	"no function named qidrisk_* is in the extension's schema"
# \df in the extension's schema: exactly the functions docs/ documents (a
# "### `name(...)`" reference entry each), nothing internal
docs=$(grep -ho '^### `[a-z_0-9]*(' "$(dirname "${BASH_SOURCE[0]}")"/../../docs/*.md | sed 's/^### `//; s/($//' | sort -u)
listed=$(q -d $DB -c "SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
	AND d.objid = p.oid AND d.deptype = 'e' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'qidrisk')
	WHERE p.pronamespace = 'public'::regnamespace" | sort)
ok "$(comm -3 <(echo "$listed") <(echo "$docs") | tr '\t\n' '  ')|$(echo "$listed" | wc -l)" "|$(echo "$docs" | wc -l)" \
	"the extension's schema lists exactly the functions the reference pages document"
echo "1..$n"
