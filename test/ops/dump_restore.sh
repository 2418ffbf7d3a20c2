#!/bin/bash
# Operations, as TAP (run by test/suites.sh through prove): a database that
# uses qidrisk (a table, views calling its functions, a column of its type,
# check history of two roles) round-trips through a plain pg_dump /
# pg_restore with default options made by a non-superuser database owner (the
# restored history rows name it in restored_by), a dump by a member of
# pg_read_all_data, and a plain dump restored by a superuser; DROP EXTENSION refuses while a view depends on it and then leaves
# no object behind; ALTER EXTENSION UPDATE of the newest version changes nothing.
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser); it acts as the other
# roles through SET ROLE (pg_dump/pg_restore --role), so they need no login
# (pg_virtualenv's clusters ask for passwords).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
# pg_dump and pg_restore of the installation under test, when it is named
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
tmp=$(mktemp -d)
OWNER=qidrisk_ops_owner
STEWARD=qidrisk_ops_steward
SRC=qidrisk_ops_src
DST=qidrisk_ops_dst
PLAIN=qidrisk_ops_plain
LIFE=qidrisk_ops_life

cleanup() {
	for db in $SRC $DST $PLAIN $LIFE; do
		q -d postgres -c "DROP DATABASE IF EXISTS $db" 2>/dev/null
	done
	q -d postgres -c "DROP ROLE IF EXISTS $OWNER" -c "DROP ROLE IF EXISTS $STEWARD" 2>/dev/null
	rm -rf "$tmp"
}
cleanup
tmp=$(mktemp -d)
trap cleanup EXIT

echo "1..16"
q -d postgres -c "CREATE ROLE $OWNER" -c "CREATE ROLE $STEWARD" \
	-c "CREATE DATABASE $SRC OWNER $OWNER" -c "CREATE DATABASE $DST OWNER $OWNER" \
	-c "CREATE DATABASE $PLAIN" -c "CREATE DATABASE $LIFE"

q -d $SRC >/dev/null <<'SQL'
SET ROLE qidrisk_ops_owner;
CREATE EXTENSION qidrisk;
CREATE TABLE licences (birth_year integer, sex text, "ZIP code" text);
INSERT INTO licences SELECT 1950 + i % 20, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END, (1000 + i % 3)::text
FROM generate_series(1, 300) i;
INSERT INTO licences VALUES (1900, 'F', '9999');
CREATE VIEW licence_risk AS
SELECT (p).rows, (p).singletons, (p).k_anonymity, rows_below(p, 5) AS below_5
FROM (SELECT class_profile(birth_year, sex, "ZIP code") AS p FROM licences) s;
CREATE VIEW licence_policy AS
SELECT * FROM qid_check('licences', ARRAY['birth_year', 'sex', 'ZIP code'],
	'{"min_k": 2, "max_birthday_uniqueness": {"group_size": 10, "max": 0.5}}');
CREATE TABLE profiles (taken date, profile qid_profile);
INSERT INTO profiles SELECT date '2026-01-01', class_profile(birth_year, sex) FROM licences;
SELECT count(*) FROM qid_check('licences', ARRAY['sex'], '{"min_k": 2}', record_history => true);
GRANT SELECT ON licences TO qidrisk_ops_steward;
SQL
as $STEWARD $SRC -c "SELECT count(*) FROM qid_check('licences', ARRAY['birth_year'], '{\"min_k\": 5}', record_history => true)" >/dev/null

# Everything a user sees, as a role ($2, the owner by default), and what the steward sees of the history
snapshot() {
	as "${2:-$OWNER}" "$1" -c "SELECT row(r.*) FROM licence_risk r" \
		-c "SELECT string_agg(row(p.*)::text, ';' ORDER BY rule) FROM licence_policy p" \
		-c "SELECT string_agg(row(p.*)::text, ';') FROM profiles p" \
		-c "SELECT md5(string_agg(row(l.*)::text, ';' ORDER BY row(l.*)::text)) FROM licences l" \
		-c "SELECT string_agg(row(h.checked_at, h.checked_by, h.relation, h.qid, h.policy, h.results, h.passed)::text, ';' ORDER BY checked_at, checked_by) FROM qid_check_history h" \
		-c "SELECT string_agg(grantee::regrole || ':' || privilege_type, ',' ORDER BY 1) FROM aclexplode((SELECT relacl FROM pg_class WHERE oid = 'qidrisk_internal.check_history'::regclass)) WHERE grantee <> (SELECT relowner FROM pg_class WHERE oid = 'qidrisk_internal.check_history'::regclass)" \
		-c "SELECT extversion || ' ' || extowner::regrole FROM pg_extension WHERE extname = 'qidrisk'"
	as $STEWARD "$1" -c "SELECT string_agg(checked_by || ' ' || qid::text, ';') FROM qid_check_history"
}
before=$(snapshot $SRC)
ok "$(echo "$before" | wc -l)" 8 "the source database answers every snapshot query"

# 1. custom-format dump and restore by the non-superuser database owner, with
# default options.  The history is the superuser's; the extension's owner may
# read it (pg_dump) and insert into it (pg_restore), and the rows it restores
# name it in restored_by, so they cannot pass for runs recorded there.
pg_dump --role=$OWNER -Fc -f "$tmp/src.dump" $SRC 2>"$tmp/dump.err"
ok "$?" 0 "pg_dump -Fc with default options as the non-superuser database owner succeeds $(head -c 300 "$tmp/dump.err")"
pg_restore --role=$OWNER -d $DST --exit-on-error "$tmp/src.dump" 2>"$tmp/restore.err"
ok "$?" 0 "pg_restore with default options as the non-superuser database owner succeeds $(head -c 300 "$tmp/restore.err")"
ok "$(q -d $SRC -c "SELECT count(*) FILTER (WHERE restored_by IS NULL) || '/' || count(*) FROM qid_check_history"),$(q -d $DST -c "SELECT string_agg(DISTINCT restored_by, ',') || '/' || count(*) FROM qid_check_history")" \
	"2/2,$OWNER/2" "the source's two rows were recorded by qid_check; their restored copies name the owner that restored them"
ok "$(snapshot $DST)" "$before" "restored views, qid_profile column, table, history rows, history privileges and owner equal the source"
ok "$(as $STEWARD $DST -c "SELECT count(*) FROM qid_check('licences', ARRAY['sex'], '{\"min_k\": 2}', record_history => true)" \
	-c "SELECT count(*) FROM qid_check_history")" "$(printf '1\n2')" \
	"after the restore a steward records checks and sees only its own history"

# a member of pg_read_all_data dumps the database too, history included
q -d postgres -c "GRANT pg_read_all_data TO $STEWARD" >/dev/null
pg_dump --role=$STEWARD -Fp -f "$tmp/reader.sql" $SRC 2>"$tmp/reader.err"
ok "$?" 0 "pg_dump with default options as a member of pg_read_all_data succeeds $(head -c 300 "$tmp/reader.err")"
ok "$(grep -c "^COPY qidrisk_internal.check_history" "$tmp/reader.sql")" 1 "its dump holds the history's rows"
q -d postgres -c "REVOKE pg_read_all_data FROM $STEWARD" >/dev/null

# 2. plain dump restored by a superuser
pg_dump -Fp -f "$tmp/src.sql" $SRC
q -d $PLAIN -f "$tmp/src.sql" >/dev/null 2>"$tmp/plain.err"
ok "$?" 0 "a plain-format dump restores through psql with ON_ERROR_STOP $(head -c 300 "$tmp/plain.err")"
ok "$(snapshot $PLAIN none | head -5)" "$(snapshot $SRC none | head -5)" "the plain restore equals the source too, as seen by a superuser"

# 3. DROP EXTENSION refuses while user objects depend on it
out=$(psql -X -q -d $SRC -c "SET ROLE $OWNER" -c '\set VERBOSITY verbose' -c 'DROP EXTENSION qidrisk' 2>&1)
ok "$(echo "$out" | grep -o 'ERROR:  2BP01')" "ERROR:  2BP01" "DROP EXTENSION without CASCADE refuses while views and a column depend on it"

# 4. DROP EXTENSION leaves nothing: every catalog row created since is gone
catalog() {
	q -d $LIFE -c "
	SELECT string_agg(c || ':' || n, ' ' ORDER BY c) FROM (
		SELECT 'pg_class' c, count(*) n FROM pg_class UNION ALL
		SELECT 'pg_proc', count(*) FROM pg_proc UNION ALL
		SELECT 'pg_type', count(*) FROM pg_type UNION ALL
		SELECT 'pg_policy', count(*) FROM pg_policy UNION ALL
		SELECT 'pg_depend', count(*) FROM pg_depend UNION ALL
		SELECT 'pg_shdepend', count(*) FROM pg_shdepend WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) UNION ALL
		SELECT 'pg_description', count(*) FROM pg_description UNION ALL
		SELECT 'pg_init_privs', count(*) FROM pg_init_privs UNION ALL
		SELECT 'pg_aggregate', count(*) FROM pg_aggregate UNION ALL
		SELECT 'pg_attribute', count(*) FROM pg_attribute UNION ALL
		SELECT 'pg_rewrite', count(*) FROM pg_rewrite UNION ALL
		SELECT 'pg_extension', count(*) FROM pg_extension) s"
}
empty=$(catalog)
q -d $LIFE -c "CREATE EXTENSION qidrisk" \
	-c "SELECT count(*) FROM qid_check('pg_class', ARRAY['relkind'], '{\"min_k\": 1}', record_history => true)" >/dev/null
ok "$(q -d $LIFE -c "SELECT count(*) > 100 FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid WHERE e.extname = 'qidrisk' AND d.deptype = 'e'")" \
	"t" "the extension installs over a hundred member objects"
q -d $LIFE -c "DROP EXTENSION qidrisk"
ok "$(catalog)" "$empty" "after DROP EXTENSION the catalogs hold exactly what they held before CREATE EXTENSION"
ok "$(q -d $LIFE -c "SELECT count(*) FROM pg_proc WHERE proname LIKE 'qid%' OR proname IN ('singleton_count', 'class_profile', 'kl_uniform')")" \
	"0" "no qidrisk function is left"

# 5. upgrades (test/ops/upgrade.sh updates each earlier version): the default
# version is the newest, and ALTER EXTENSION UPDATE of an up-to-date
# installation changes nothing
default=$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'qidrisk'")
ok "$(q -d postgres -c "SELECT max(string_to_array(version, '.')::int[]) = string_to_array('$default', '.')::int[]
	FROM pg_available_extension_versions WHERE name = 'qidrisk'")" \
	"t" "the default version $default is the newest available"
ok "$(psql -X -d $DST -c "SET ROLE $OWNER" -c 'ALTER EXTENSION qidrisk UPDATE' 2>&1)" \
	"SET
NOTICE:  version \"$default\" of extension \"qidrisk\" is already installed
ALTER EXTENSION" "ALTER EXTENSION qidrisk UPDATE reports the installed version"
