#!/bin/bash
# Trusted installation, as TAP (run by test/suites.sh through prove): a
# database owner without superuser installs qidrisk and then tries to make
# the extension run its code with a caller's rights.  Nothing it can attach
# to or change on an extension object may do so: triggers, column DEFAULTs,
# policies, rules, indexes, ALTER and OWNER changes of every member object
# fail; a superuser then records checks (qid_check, qid_assert) and the owner
# never becomes superuser.  Upgrade: 0.1.0 let the installer own the history
# table; hostile objects planted there are gone after ALTER EXTENSION UPDATE
# (run by the owner, as a trusted update runs), the rows are kept, and a
# column whose type was changed stops the update.  Forged history: a role
# cannot write a history row by any means, least of all for a table it
# cannot read.
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser); roles are taken with
# SET ROLE, so they need no login.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
OWNER=qidrisk_tr_owner
NOBODY=qidrisk_tr_nobody
STEWARD=qidrisk_tr_steward
NEW=qidrisk_tr_new
OLD=qidrisk_tr_old
ALTERED=qidrisk_tr_altered

# as ROLE DB SQL: run one statement as a role; prints its output, or
# "ERROR <SQLSTATE>" when it fails
as() {
	local out
	if out=$(psql -X -qAt -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate -d "$2" -c "SET ROLE $1" -c "$3" 2>&1); then
		echo "$out"
	else
		echo "$out" | sed -n 's/^.*ERROR:  \([0-9A-Z]\{5\}\).*$/ERROR \1/p' | head -1
	fi
}
cleanup() {
	for db in $NEW $OLD $ALTERED; do
		q -d postgres -c "DROP DATABASE IF EXISTS $db" 2>/dev/null
	done
	for role in $OWNER $NOBODY $STEWARD; do
		q -d postgres -c "DROP ROLE IF EXISTS $role" 2>/dev/null
	done
	rm -f ${EARLIER_SCRIPTS:-}
}
cleanup
trap cleanup EXIT


q -d postgres -c "CREATE ROLE $OWNER" -c "CREATE ROLE $NOBODY" -c "CREATE ROLE $STEWARD" \
	-c "CREATE DATABASE $NEW OWNER $OWNER" -c "CREATE DATABASE $OLD OWNER $OWNER" \
	-c "CREATE DATABASE $ALTERED OWNER $OWNER"

# The owner's tools: functions that make it superuser when run by one
HOSTILE="
CREATE FUNCTION evil() RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE $OWNER SUPERUSER';
	END IF;
	RETURN 'x';
END \$\$;
CREATE FUNCTION evil_trigger() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM evil();
	RETURN NEW;
END \$\$;
CREATE FUNCTION evil_bool() RETURNS boolean LANGUAGE sql AS 'SELECT public.evil() IS NOT NULL';
-- (index expressions must be immutable; a lie costs nothing; 17 runs them under a
-- pinned search_path, hence public.)
CREATE FUNCTION evil_text(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS 'BEGIN PERFORM public.evil(); RETURN \$1; END';
CREATE TABLE t (a integer, b text);
INSERT INTO t SELECT i % 5, 'x' FROM generate_series(1, 20) i;"
superuser() { q -d postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = '$OWNER'"; }

# 1. a fresh installation by the database owner
as $OWNER $NEW "CREATE EXTENSION qidrisk" >/dev/null
as $OWNER $NEW "$HOSTILE" >/dev/null
ok "$(q -d $NEW -c "SELECT extowner::regrole FROM pg_extension WHERE extname = 'qidrisk'")" "$OWNER" \
	"the non-superuser database owner installed qidrisk and owns the extension"
ok "$(q -d $NEW -c "SELECT count(*) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'qidrisk'
	WHERE d.deptype = 'e' AND pg_identify_object(d.classid, d.objid, 0) IS NULL")" "0" \
	"every member object can be identified"
# every member: ALTER ... OWNER TO the installer fails with 42501
members=$(q -d $NEW -c "SELECT i.type || '|' || i.identity FROM pg_depend d
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'qidrisk',
	pg_identify_object(d.classid, d.objid, 0) AS i WHERE d.deptype = 'e'
	-- array types and a table's row type go with their type or table (17 lists them as members)
	AND NOT EXISTS (SELECT 1 FROM pg_type t WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
		AND (t.typcategory = 'A' OR (t.typrelid <> 0 AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) <> 'c')))
	ORDER BY 1")
failed=0
total=0
unexpected=
while IFS='|' read -r type identity; do
	case "$type" in
		'composite type') type=type ;;
	esac
	total=$((total + 1))
	got=$(as $OWNER $NEW "ALTER ${type^^} $identity OWNER TO $OWNER")
	if [ "$got" = "ERROR 42501" ]; then
		failed=$((failed + 1))
	else
		unexpected="$unexpected $type $identity: $got;"
	fi
done <<<"$members"
ok "$failed of $total${unexpected}" "$total of $total" "ALTER ... OWNER TO the installer fails on every member object"
ok "$((total > 100))" "1" "(there are $total member objects: functions, aggregates, procedures, types, the table)"
ok "$(q -d $NEW -c "SELECT count(*) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'qidrisk'
	WHERE d.deptype = 'e' AND d.classid = 'pg_proc'::regclass
	AND has_function_privilege('$OWNER', d.objid, 'EXECUTE') AND (SELECT proowner FROM pg_proc WHERE oid = d.objid) = '$OWNER'::regrole")" \
	"0" "the installer owns no function of the extension"
# attachments to the history table (the only member table) and changes of functions and types
for stmt in \
	"CREATE TRIGGER x BEFORE INSERT ON qidrisk_internal.check_history FOR EACH ROW EXECUTE FUNCTION evil_trigger()" \
	"ALTER TABLE qidrisk_internal.check_history ALTER COLUMN relation SET DEFAULT evil()" \
	"ALTER TABLE qidrisk_internal.check_history ADD COLUMN extra text DEFAULT evil()" \
	"CREATE POLICY x ON qidrisk_internal.check_history FOR INSERT WITH CHECK (evil_bool())" \
	"CREATE RULE x AS ON INSERT TO qidrisk_internal.check_history DO ALSO SELECT evil()" \
	"CREATE INDEX x ON qidrisk_internal.check_history (evil_text(relation))" \
	"ALTER TABLE qidrisk_internal.check_history ADD CONSTRAINT x CHECK (evil_bool())" \
	"ALTER TABLE qidrisk_internal.check_history ALTER COLUMN relation TYPE text USING relation || evil()" \
	"ALTER TABLE qidrisk_internal.check_history DISABLE ROW LEVEL SECURITY" \
	"ALTER TABLE qidrisk_internal.check_history ENABLE ROW LEVEL SECURITY" \
	"ALTER TABLE qidrisk_internal.check_history DISABLE TRIGGER provenance" \
	"DROP TRIGGER provenance ON qidrisk_internal.check_history" \
	"CREATE OR REPLACE VIEW qid_check_history AS SELECT * FROM qidrisk_internal.check_history" \
	"ALTER TABLE qidrisk_internal.check_history RENAME TO x" \
	"ALTER EXTENSION qidrisk DROP TABLE qidrisk_internal.check_history" \
	"CREATE OR REPLACE FUNCTION qidrisk_internal.qidrisk_check_evaluate(rel regclass, qid text[], policy jsonb) RETURNS TABLE (rule text, setting jsonb, measured double precision, threshold double precision, passed boolean) LANGUAGE sql AS 'SELECT evil(), NULL::jsonb, 1::float8, 1::float8, true'" \
	"ALTER FUNCTION qid_check(regclass, text[], jsonb, boolean) SECURITY DEFINER" \
	"ALTER FUNCTION qidrisk_internal.qidrisk_check_evaluate(regclass, text[], jsonb) SET search_path = public" \
	"ALTER TYPE qid_profile ADD ATTRIBUTE x text" \
	"ALTER AGGREGATE class_profile(VARIADIC \"any\") RENAME TO x"; do
	ok "$(as $OWNER $NEW "$stmt")" "ERROR 42501" "the installer cannot: ${stmt:0:90}"
done
as $OWNER $NEW "GRANT UPDATE, DELETE ON qidrisk_internal.check_history TO $OWNER" >/dev/null 2>&1
ok "$(q -d $NEW -c "SELECT has_table_privilege('$OWNER', 'qidrisk_internal.check_history', 'UPDATE, DELETE, TRUNCATE, TRIGGER')")" \
	"f" "nor grant itself a right to change or delete history (it may read and insert, to dump and restore it)"
# a superuser records checks: nothing of the owner's runs
q -d $NEW -c "SELECT count(*) FROM qid_check('t', ARRAY['a'], '{\"min_k\": 2}', record_history => true)" >/dev/null
q -d $NEW -c "CALL qid_assert('t', ARRAY['a', 'b'], '{\"min_k\": 2}', record_history => true)" >/dev/null
ok "$(q -d $NEW -c "SELECT string_agg(checked_by || ':' || passed, ',' ORDER BY checked_at) FROM qid_check_history")" \
	"$(q -d postgres -c "SELECT current_user || ':true,' || current_user || ':true'")" \
	"a superuser records qid_check and qid_assert runs"
ok "$(superuser)" "f" "and the installer did not become superuser"

# 2. forged history: a role without SELECT on t
ok "$(as $NOBODY $NEW "INSERT INTO qidrisk_internal.check_history VALUES (now(), '$NOBODY', 'public.t', '{a}', '{\"min_k\": 2}', '[]', true)")" \
	"ERROR 42501" "a role cannot INSERT a history row"
ok "$(as $NOBODY $NEW "SELECT count(*) FROM qid_check('t', ARRAY['a'], '{\"min_k\": 2}', record_history => true)")" \
	"ERROR 42501" "nor record a check of a table it cannot read"
ok "$(as $NOBODY $NEW "SELECT count(*) FROM qidrisk_internal.qidrisk_check_evaluate('t', ARRAY['a'], '{\"min_k\": 2}')")" \
	"ERROR 42501" "nor evaluate one through the internal function (which records nothing anyway)"
ok "$(as $OWNER $NEW "UPDATE qidrisk_internal.check_history SET passed = false RETURNING 1")$(as $OWNER $NEW "DELETE FROM qid_check_history RETURNING 1")" \
	"ERROR 42501ERROR 42501" "the installer can neither change nor delete history rows"
ok "$(q -d $NEW -c "SELECT count(*) FROM qid_check_history WHERE checked_by IN ('$NOBODY', '$OWNER')")" "0" \
	"no history row was written in their names"
ok "$(as $OWNER $NEW "INSERT INTO qidrisk_internal.check_history VALUES (now(), 'postgres', 'public.t', '{a}', '{\"min_k\": 2}', '[]', true, NULL) RETURNING restored_by")" \
	"$OWNER" "a row the installer inserts (as pg_restore does) names it in restored_by, whatever it gives"
ok "$(q -d $NEW -c "SELECT count(*) FROM qid_check_history WHERE restored_by IS NULL AND checked_by NOT IN (SELECT current_user)")" "0" \
	"so every row with restored_by NULL was recorded by qid_check"
ok "$(q -d $NEW -c "SELECT string_agg(p.proname, ',') FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'qidrisk' WHERE p.prosecdef")" "" \
	"no function of the extension is SECURITY DEFINER"

# 3. upgrade from 0.1.0, where the installer owned the history table.  Only
# the current release installs from scratch: an installer cannot choose 0.1.0
# (whose history table it owned) to plant a trigger for the next superuser
ok "$(as $OWNER $OLD "CREATE EXTENSION qidrisk VERSION '0.1.0'")|$(ls "$("${PG_CONFIG:-pg_config}" --sharedir)/extension" | grep -c '^qidrisk--[0-9.]*\.sql$')" \
	"ERROR 22023|1" "0.1.0 cannot be installed from scratch: only the current release has an install script"
# an installation of 0.1.0 made before it was superseded
earlier_release 0.1.0
as $OWNER $OLD "CREATE EXTENSION qidrisk VERSION '0.1.0'" >/dev/null
as $OWNER $OLD "$HOSTILE
GRANT SELECT ON t TO $STEWARD;
SELECT count(*) FROM qid_check('t', ARRAY['a'], '{\"min_k\": 2}', record_history => true);" >/dev/null
as $STEWARD $OLD "SELECT count(*) FROM qid_check('t', ARRAY['a', 'b'], '{\"min_k\": 5}', record_history => true)" >/dev/null
rows_before=$(q -d $OLD -c "SELECT md5(string_agg(row(checked_at, checked_by, relation, qid, policy, results, passed)::text, ';' ORDER BY checked_at, checked_by)) || ' ' || count(*) FROM qidrisk_check_history")
ok "$(as $OWNER $OLD "CREATE TRIGGER x BEFORE INSERT ON qidrisk_check_history FOR EACH ROW EXECUTE FUNCTION evil_trigger();
ALTER TABLE qidrisk_check_history ALTER COLUMN relation SET DEFAULT evil();
ALTER TABLE qidrisk_check_history ADD COLUMN extra text DEFAULT evil();
CREATE POLICY x ON qidrisk_check_history FOR INSERT WITH CHECK (evil_bool());
CREATE RULE x AS ON INSERT TO qidrisk_check_history DO ALSO SELECT evil();
CREATE INDEX x ON qidrisk_check_history (evil_text(relation));
SELECT 'planted'")" "planted" "0.1.0: the installer owns the history and plants a trigger, defaults, a policy, a rule and an index"
ok "$(as $OWNER $OLD "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" >/dev/null; q -d $OLD -c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" \
	"0.2.0" "the owner updates the extension to 0.2.0"
ok "$(q -d $OLD -c "SELECT md5(string_agg(row(checked_at, checked_by, relation, qid, policy, results, passed)::text, ';' ORDER BY checked_at, checked_by)) || ' ' || count(*) FROM qid_check_history")" \
	"$rows_before" "the history rows of both roles are kept exactly"
ok "$(q -d $OLD -c "SELECT c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND c.relowner <> '$OWNER'::regrole,
	(SELECT string_agg(tgname, ',') FROM pg_trigger WHERE tgrelid = c.oid), (SELECT count(*) FROM pg_rewrite WHERE ev_class = c.oid),
	(SELECT string_agg(polname, ',') FROM pg_policy WHERE polrelid = c.oid), (SELECT count(*) FROM pg_attrdef WHERE adrelid = c.oid),
	(SELECT count(*) FROM pg_index WHERE indrelid = c.oid), (SELECT count(*) FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0)
	FROM pg_class c WHERE c.oid = 'qidrisk_internal.check_history'::regclass")" \
	"t|provenance|0||0|0|8" \
	"afterwards the superuser owns the history; no trigger but qidrisk's, no rule, policy, default, index or added column is left"
ok "$(q -d $OLD -c "SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relname LIKE '%check_history%'"),$(q -d $OLD -c "SELECT array_length(extconfig, 1) || ':' || extconfig[1]::regclass::text FROM pg_extension WHERE extname = 'qidrisk'")" \
	"1,1:qidrisk_internal.check_history" "the old table is gone and the new one is the extension's only configuration table"
q -d $OLD -c "SELECT count(*) FROM qid_check('t', ARRAY['a'], '{\"min_k\": 2}', record_history => true)" >/dev/null
q -d $OLD -c "CALL qid_assert('t', ARRAY['a'], '{\"min_k\": 2}', record_history => true)" >/dev/null
ok "$(q -d $OLD -c "SELECT count(*) FROM qid_check_history")|$(superuser)" "4|f" \
	"a superuser records two more checks and the installer does not become superuser"
ok "$(as $STEWARD $OLD "SELECT string_agg(checked_by, ',') FROM qid_check_history")|$(as $OWNER $OLD "SELECT count(*) FROM qid_check_history")" \
	"$STEWARD|4" "the steward still sees its own rows only, the extension's owner all of them"

# 4. a column whose type the installer changed stops the update (its values are not read)
as $OWNER $ALTERED "CREATE EXTENSION qidrisk VERSION '0.1.0'" >/dev/null
as $OWNER $ALTERED "ALTER TABLE qidrisk_check_history ALTER COLUMN passed TYPE text" >/dev/null
ok "$(as $OWNER $ALTERED "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'")|$(q -d $ALTERED -c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" \
	"ERROR 55000|0.1.0" "an update over a history column of another type fails (55000) and leaves 0.1.0 in place"
ok "$(superuser)" "f" "at the end the installer is still not superuser"
echo "1..$n"
