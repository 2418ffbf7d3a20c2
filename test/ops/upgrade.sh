#!/bin/bash
# Operations, as TAP (run by test/suites.sh through prove): upgrades.  For
# every earlier version of qidrisk this PostgreSQL offers, a database installs
# it (CREATE EXTENSION qidrisk VERSION ...), fills what users keep (a table,
# views calling qidrisk's functions, a column of type qid_profile, check
# history of two roles), runs ALTER EXTENSION qidrisk UPDATE as the
# non-superuser database owner, and then
#   * the extension is at the default version and the rows, views and
#     column answer as before;
#   * its catalog entries equal those of a fresh installation of the default
#     version, object by object (functions with their definitions,
#     aggregates, types, tables with columns, constraints, policies, indexes
#     and triggers, privileges, comments, the extension's dump
#     configuration): the upgrade path and the fresh path give one extension.
# Before that, a view on a function whose arguments or result columns 1.0.0
# renames (qid_search) makes the update fail with PostgreSQL's dependency
# error and leaves the version as it was; it is dropped, as CHANGELOG.md says.
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser); acts as the other
# roles through SET ROLE.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
OWNER=qidrisk_upg_owner
STEWARD=qidrisk_upg_steward
FRESH=qidrisk_upg_fresh


default=$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'qidrisk'")
# the earlier versions, oldest first, each one's path to the default version
earlier=$(q -d postgres -c "
	SELECT string_agg(source, ' ' ORDER BY string_to_array(source, '.')::int[])
	FROM pg_extension_update_paths('qidrisk')
	WHERE target = '$default' AND path IS NOT NULL")

cleanup() {
	for v in $earlier; do
		q -d postgres -c "DROP DATABASE IF EXISTS qidrisk_upg_${v//./_}" 2>/dev/null
	done
	q -d postgres -c "DROP DATABASE IF EXISTS $FRESH" 2>/dev/null
	q -d postgres -c "DROP ROLE IF EXISTS $OWNER" -c "DROP ROLE IF EXISTS $STEWARD" 2>/dev/null
	rm -f ${EARLIER_SCRIPTS:-}
}
cleanup
trap cleanup EXIT
# only the current release installs from scratch; the earlier ones this
# script installs are built from sql/ for its run
for v in $earlier; do
	earlier_release "$v"
done
q -d postgres -c "CREATE ROLE $OWNER" -c "CREATE ROLE $STEWARD" -c "CREATE DATABASE $FRESH OWNER $OWNER"
as $OWNER $FRESH -c "CREATE EXTENSION qidrisk" >/dev/null

# The extension's catalog entries, without OIDs: one line per fact, sorted
catalog() {
	q -d "$1" <<'SQL'
WITH ext AS (SELECT * FROM pg_extension WHERE extname = 'qidrisk'),
member AS (
	SELECT d.classid, d.objid, d.objsubid
	FROM pg_depend d, ext
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
),
facts AS (
	-- every member object, and its comment
	SELECT 'member ' || pg_describe_object(classid, objid, objsubid) AS f FROM member
	UNION ALL
	SELECT 'comment ' || pg_describe_object(classid, objid, objsubid) || ': ' || obj_description(objid, classid::regclass::text)
	FROM member WHERE obj_description(objid, classid::regclass::text) IS NOT NULL
	-- functions: the whole definition; aggregates: their parts
	UNION ALL
	SELECT 'function ' || p.oid::regprocedure || ' ' || pg_get_functiondef(p.oid) || ' owner ' || pg_get_userbyid(p.proowner)
		|| ' acl ' || coalesce(p.proacl::text, '-')
	FROM member m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid WHERE p.prokind <> 'a'
	UNION ALL
	SELECT 'aggregate ' || p.oid::regprocedure || ' returns ' || p.prorettype::regtype || ' parallel ' || p.proparallel::text
		|| ' strict ' || p.proisstrict || ' volatile ' || p.provolatile::text || ' kind ' || a.aggkind::text
		|| ' direct ' || a.aggnumdirectargs || ' trans ' || a.aggtransfn::regprocedure
		|| ' final ' || a.aggfinalfn::regprocedure || ' extra ' || a.aggfinalextra || ' modify ' || a.aggfinalmodify::text
		|| ' combine ' || a.aggcombinefn::regprocedure || ' serial ' || a.aggserialfn::regprocedure
		|| ' deserial ' || a.aggdeserialfn::regprocedure || ' mtrans ' || a.aggmtransfn::regprocedure
		|| ' minvtrans ' || a.aggminvtransfn::regprocedure || ' mfinal ' || a.aggmfinalfn::regprocedure
		|| ' sort ' || a.aggsortop::regoperator || ' stype ' || a.aggtranstype::regtype
		|| ' space ' || a.aggtransspace || ' init ' || coalesce(a.agginitval, '-')
		|| ' owner ' || pg_get_userbyid(p.proowner) || ' acl ' || coalesce(p.proacl::text, '-')
	FROM member m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
	JOIN pg_aggregate a ON a.aggfnoid = p.oid
	-- types, and the attributes of composite types and tables
	UNION ALL
	SELECT 'type ' || t.oid::regtype || ' ' || t.typtype::text || ' len ' || t.typlen || ' byval ' || t.typbyval
		|| ' in ' || t.typinput::regproc || ' out ' || t.typoutput::regproc || ' recv ' || t.typreceive::regproc
		|| ' send ' || t.typsend::regproc || ' align ' || t.typalign::text || ' storage ' || t.typstorage::text
		|| ' owner ' || pg_get_userbyid(t.typowner) || ' acl ' || coalesce(t.typacl::text, '-')
	FROM member m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
	UNION ALL
	SELECT 'attribute ' || c.oid::regclass || ' ' || a.attnum || ' ' || a.attname || ' '
		|| format_type(a.atttypid, a.atttypmod) || ' notnull ' || a.attnotnull || ' identity ' || a.attidentity::text
		|| ' generated ' || a.attgenerated::text || ' collation ' || a.attcollation::regcollation
		|| ' default ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '-') || ' acl ' || coalesce(a.attacl::text, '-')
	FROM member m JOIN pg_class c ON c.oid = m.objid AND m.classid = 'pg_class'::regclass
		OR m.classid = 'pg_type'::regclass AND c.oid = (SELECT typrelid FROM pg_type WHERE oid = m.objid)
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
	-- relations: kind, row-level security, privileges, owner, views' queries
	UNION ALL
	SELECT 'relation ' || c.oid::regclass || ' ' || c.relkind::text || ' persistence ' || c.relpersistence::text
		|| ' rls ' || c.relrowsecurity || ' force ' || c.relforcerowsecurity
		|| ' owner ' || pg_get_userbyid(c.relowner) || ' acl ' || coalesce(c.relacl::text, '-')
		|| ' options ' || coalesce(c.reloptions::text, '-')
		|| CASE WHEN c.relkind IN ('v', 'm') THEN ' view ' || pg_get_viewdef(c.oid) ELSE '' END
	FROM member m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
	UNION ALL
	SELECT 'constraint ' || c.conrelid::regclass || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid)
	FROM member m JOIN pg_constraint c ON m.classid = 'pg_class'::regclass AND c.conrelid = m.objid
	UNION ALL
	SELECT 'index ' || pg_get_indexdef(i.indexrelid)
	FROM member m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
	UNION ALL
	SELECT 'trigger ' || pg_get_triggerdef(t.oid)
	FROM member m JOIN pg_trigger t ON m.classid = 'pg_class'::regclass AND t.tgrelid = m.objid
	UNION ALL
	SELECT 'policy ' || p.polrelid::regclass || ' ' || p.polname || ' ' || p.polcmd::text || ' permissive ' || p.polpermissive
		|| ' roles ' || (SELECT string_agg(CASE r WHEN 0 THEN 'public' ELSE pg_get_userbyid(r) END, ',' ORDER BY 1)
						 FROM unnest(p.polroles) r)
		|| ' using ' || coalesce(pg_get_expr(p.polqual, p.polrelid), '-')
		|| ' check ' || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '-')
	FROM member m JOIN pg_policy p ON m.classid = 'pg_class'::regclass AND p.polrelid = m.objid
	UNION ALL
	SELECT 'sequence ' || s.seqrelid::regclass || ' ' || s.seqtypid::regtype || ' ' || s.seqstart || ' '
		|| s.seqincrement || ' ' || s.seqmax || ' ' || s.seqmin || ' ' || s.seqcache || ' ' || s.seqcycle
	FROM member m JOIN pg_sequence s ON m.classid = 'pg_class'::regclass AND s.seqrelid = m.objid
	-- the privileges pg_dump restores as the extension's own
	UNION ALL
	SELECT 'init_privs ' || pg_describe_object(i.classoid, i.objoid, i.objsubid) || ' ' || i.privtype::text || ' '
		|| i.initprivs::text
	FROM pg_init_privs i JOIN member m ON m.classid = i.classoid AND m.objid = i.objoid
	-- the extension itself
	UNION ALL
	SELECT 'extension ' || extname || ' ' || extversion || ' owner ' || pg_get_userbyid(extowner)
		|| ' schema ' || extnamespace::regnamespace || ' relocatable ' || extrelocatable
		|| ' config ' || coalesce(extconfig::regclass[]::text, '-') || ' condition ' || coalesce(extcondition::text, '-')
	FROM ext
)
SELECT f FROM facts ORDER BY f COLLATE "C";
SQL
	[ $? -eq 0 ] || echo "the catalog query failed in $1"
}
fresh=$(catalog $FRESH)
functions=$(q -d $FRESH -c "SELECT count(*) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
	WHERE e.extname = 'qidrisk' AND d.deptype = 'e' AND d.classid = 'pg_proc'::regclass")

count=$(echo $earlier | wc -w)
echo "1..$((2 + 9 * count))"
ok "$([ "$count" -ge 1 ] && echo yes)" yes "an earlier version updates to $default (earlier: ${earlier:-none})"
ok "$([ "$functions" -gt 100 ] && echo yes)" yes "a fresh installation of $default has over a hundred functions ($functions)"

for version in $earlier; do
	db=qidrisk_upg_${version//./_}
	q -d postgres -c "CREATE DATABASE $db OWNER $OWNER"
	q -d $db >/dev/null <<SQL
SET ROLE $OWNER;
CREATE EXTENSION qidrisk VERSION '$version';
CREATE TABLE licences (birth_year integer, sex text, "ZIP code" text);
INSERT INTO licences SELECT 1950 + i % 20, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END, (1000 + i % 3)::text
FROM generate_series(1, 300) i;
INSERT INTO licences VALUES (1900, 'F', '9999');
GRANT SELECT ON licences TO $STEWARD;
CREATE VIEW licence_risk AS
SELECT (p).rows, (p).singletons, (p).k_anonymity, rows_below(p, 5) AS below_5
FROM (SELECT class_profile(birth_year, sex, "ZIP code") AS p FROM licences) s;
CREATE VIEW licence_policy AS
SELECT rule, passed FROM qid_check('licences', ARRAY['birth_year', 'sex', 'ZIP code'], '{"min_k": 2}');
CREATE TABLE profiles (taken date, profile qid_profile);
INSERT INTO profiles SELECT date '2026-01-01', class_profile(birth_year, sex) FROM licences;
SELECT count(*) FROM qid_check('licences', ARRAY['sex'], '{"min_k": 2}', record_history => true);
CREATE VIEW licence_search AS SELECT columns, singletons FROM qid_search('licences', ARRAY['sex', 'birth_year']);
SQL
	as $STEWARD $db -c "SELECT count(*) FROM qid_check('licences', ARRAY['birth_year'], '{\"min_k\": 5}', record_history => true)" >/dev/null
	# where a version keeps its history for reading (0.1.0: a table in the
	# extension's schema; from 0.2.0 the view qid_check_history)
	history() { q -d $db -c "SELECT coalesce(to_regclass('qid_check_history'), to_regclass('qidrisk_check_history'))"; }
	# the history's columns as they were: a later version may add others
	columns=$(q -d $db -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
		WHERE attrelid = '$(history)'::regclass AND attnum > 0 AND NOT attisdropped")
	user_data() {
		as $OWNER $db -c "SELECT row(r.*) FROM licence_risk r" \
			-c "SELECT string_agg(row(p.*)::text, ';' ORDER BY rule) FROM licence_policy p" \
			-c "SELECT string_agg(row(p.*)::text, ';') FROM profiles p" \
			-c "SELECT string_agg(row($1)::text, ';' ORDER BY checked_at, checked_by) FROM $(history)"
	}
	before=$(user_data "$columns")
	ok "$(q -d $db -c "SELECT extversion || ' ' || (SELECT count(*) FROM $(history))
		FROM pg_extension WHERE extname = 'qidrisk'")" "$version 2" \
		"$version: installed, with two roles' check history"

	# 1.0.0 renamed qid_search's arguments; an update from 1.0.0 on keeps it
	if [ "$(printf '%s\n' "$version" 1.0.0 | sort -V | head -1)" != 1.0.0 ]; then
		out=$(as $OWNER $db -v VERBOSITY=sqlstate -c "ALTER EXTENSION qidrisk UPDATE" 2>&1)
		ok "$out|$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" "ERROR:  2BP01|$version" \
			"$version: a view on qid_search stops the update (2BP01) and leaves $version in place"
	else
		ok "$(q -d $db -c "SELECT count(*) FROM licence_search")" "$(q -d $db -c "SELECT count(*) FROM qid_search('licences', ARRAY['sex', 'birth_year'])")" \
			"$version: a view on qid_search reads before the update, which keeps qid_search"
	fi
	q -d $db -c "DROP VIEW licence_search"
	out=$(as $OWNER $db -c "ALTER EXTENSION qidrisk UPDATE" 2>&1)
	ok "$?" 0 "$version: ALTER EXTENSION qidrisk UPDATE as the database owner succeeds $(echo $out | head -c 300)"
	ok "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" "$default" \
		"$version: the extension is now at $default"
	# columns that the update dropped cannot be compared; the rest must be
	kept=$(q -d $db -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
		WHERE attrelid = '$(history)'::regclass AND attnum > 0 AND NOT attisdropped
		AND quote_ident(attname) = ANY (string_to_array('$columns', ', '))")
	ok "$kept" "$columns" "$version: the history keeps its columns ($columns)"
	ok "$(user_data "$columns")" "$before" \
		"$version: the history rows, views and qid_profile column read as before the update"
	ok "$(as $STEWARD $db -c "SELECT count(*) > 0 FROM qid_check('licences', ARRAY['sex'], '{\"min_k\": 2}', record_history => true)" \
		-c "SELECT count(*) FROM qid_check_history")" "$(printf 't\n2')" \
		"$version: after the update a steward records checks and sees only its own history"
	updated=$(catalog $db)
	ok "$(echo "$updated" | grep -c '^function \|^aggregate ')" "$functions" \
		"$version: the updated extension has the $functions functions of a fresh installation"
	ok "$updated" "$fresh" \
		"$version: every catalog entry of the updated extension equals the fresh installation's (functions, aggregates, types, tables, policies, privileges, comments)"
done
