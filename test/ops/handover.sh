#!/bin/bash
# Operations, as TAP (run by test/suites.sh through prove): the parallel
# hand-over of frequency states reads executor internals (the query's shared
# memory area, the Gather's current tuple), which differ between PostgreSQL
# major versions.  On the version under test, a parallel singleton_count
# must take both shortcuts, which say so at DEBUG1: a worker leaves its state
# in a temporary file of the leader's file set, which the leader's finalize
# reads and deletes (workers alone read the table, so their states are
# partitioned), and the leader deletes the file set at the end of the
# transaction, committed or not, and what a rolled-back subtransaction
# left at once, also in a temporary tablespace (which it can then drop);
# and the leader lends its own partial state (no worker may start, so the
# leader's state is the whole); each answer must equal GROUP BY's.  A version where a shortcut silently falls back to the plain
# serialized path fails here.
# Uses the server in PGHOST/PGPORT/PGUSER.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
DB=qidrisk_ops_handover
TS=qidrisk_ops_handover_tmp
cleanup() {
	q -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null
	q -d postgres -c "DROP TABLESPACE IF EXISTS $TS" 2>/dev/null
}
cleanup
trap cleanup EXIT
q -d postgres -c "CREATE DATABASE $DB"
# a temporary tablespace in a directory the server makes (pg_tblspc/OID), so
# that its owner need not be this script's user
q -d postgres -c "SET allow_in_place_tablespaces = on" -c "CREATE TABLESPACE $TS LOCATION ''"
q -d $DB >/dev/null <<'SQL'
CREATE EXTENSION qidrisk;
-- 250,000 classes over 400,000 rows: each process's partial state passes 1 MB
CREATE TABLE received AS
SELECT (i::bigint * 7919) % 250000 AS a, (i / 7) % 2 AS b FROM generate_series(1, 400000) i;
ANALYZE received;
-- an aggregate whose combine always fails: it stops the leader's finalize
-- before singleton_count has read every worker's state
CREATE FUNCTION fail_combine(integer, integer) RETURNS integer
LANGUAGE plpgsql PARALLEL SAFE AS $$ BEGIN RAISE EXCEPTION 'combine fails'; END $$;
CREATE AGGREGATE failing(integer) (sfunc = int4pl, stype = integer, initcond = '0',
	combinefunc = fail_combine, parallel = safe);
-- an aggregate whose combine waits: the leader's finalize is still running,
-- a worker's state taken, when statement_timeout cancels it
CREATE FUNCTION slow_combine(integer, integer) RETURNS integer
LANGUAGE plpgsql PARALLEL SAFE AS $$ BEGIN PERFORM pg_sleep(60); RETURN $1 + $2; END $$;
CREATE AGGREGATE sleeping(integer) (sfunc = int4pl, stype = integer, initcond = '0',
	combinefunc = slow_combine, parallel = safe);
SQL

echo "1..24"
version=$(q -d $DB -c "SHOW server_version")
expected=$(q -d $DB -c "SET max_parallel_workers_per_gather = 0" \
	-c "SELECT count(*) FILTER (WHERE n = 1) FROM (SELECT count(*) AS n FROM received GROUP BY a, b) c")
# run SETTINGS: a parallel singleton_count with DEBUG1 messages, after its plan
run() {
	psql -X -qAt -d $DB -v ON_ERROR_STOP=1 2>&1 <<SQL
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
$1
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT singleton_count(a, b) FROM received;
SET client_min_messages = debug1;
SELECT 'answer ' || singleton_count(a, b) FROM received;
SQL
}
# the workers read every row, so one of them holds at least half of them (over 1 MB)
out=$(run "SET parallel_leader_participation = off;")
ok "$(echo "$out" | grep -cE 'Workers Launched: [1-9]')" 1 "PostgreSQL $version: the plan launches workers"
ok "$(echo "$out" | grep -c 'qidrisk: a parallel worker hands over its partial state in a temporary file' | sed 's/^[1-9][0-9]*$/some/')" \
	some "PostgreSQL $version: workers leave their states in temporary files"
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: the answer read from the files equals GROUP BY's"
# under temp_file_limit, which the other temporary files of a worker share, the
# states go through the tuple queue
out=$(run "SET parallel_leader_participation = off; SET temp_file_limit = '1GB';")
ok "$(echo "$out" | grep -c 'qidrisk: a parallel worker hands over its partial state in a temporary file')" 0 \
	"PostgreSQL $version: under temp_file_limit the workers hand over no file"
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: under temp_file_limit the answer equals GROUP BY's"
# no worker may start: the leader runs the partial aggregate below its Gather alone
out=$(run "SET max_parallel_workers = 0;")
ok "$(echo "$out" | grep -cE 'Partial Aggregate')" 1 "PostgreSQL $version: the leader runs a partial aggregate"
ok "$(echo "$out" | grep -c 'qidrisk: the parallel leader keeps its own partial state')" 1 \
	"PostgreSQL $version: the leader lends its partial state to its finalize"
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: the lent state's answer equals GROUP BY's"
# both at once, as by default: the answer still equals GROUP BY's
out=$(run "")
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: with the leader and workers together the answer equals GROUP BY's"
# "no file is left" holds for a statement that wrote none too, so each such
# test first shows the files were there: the server reports each temporary
# file it deletes, with its size (log_temp_files = 0, sent to this session's
# client at client_min_messages = log), between markers the session prints
# with \warn.  deleted OUT FROM TO DIR MIN: "files deleted" when at least MIN
# written (non-empty) hand-over files in DIR were deleted between the markers
# FROM and TO of OUT
deleted() {
	local n
	n=$(echo "$1" | sed -n "/^== $2\$/,/^== $3\$/p" |
		grep -cE "temporary file: path \"$4/pgsql_tmp[0-9]+\.4043309056\.fileset/qidrisk\.[0-9]+\.[0-9]+\", size [1-9]")
	if [ "$n" -ge "$5" ]; then
		echo "files deleted"
	else
		echo "$n files deleted (at least $5 wanted)"
	fi
}
# the file set of this backend (in the default tablespace, 4043309056 = 0xF1000000):
# read files are gone at once, the directory at the end of the transaction
fileset="SELECT count(*) FILTER (WHERE f = format('pgsql_tmp%s.4043309056.fileset', pg_backend_pid()))
	|| '/' || (SELECT count(*) FROM pg_ls_dir(format('base/pgsql_tmp/pgsql_tmp%s.4043309056.fileset', pg_backend_pid()), true, false))
	FROM pg_ls_dir('base/pgsql_tmp', true, false) f"
out=$(psql -X -qAt -d $DB 2>&1 <<SQL
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET log_temp_files = 0;
SET client_min_messages = log;
BEGIN;
SELECT singleton_count(a, b) FROM received;
SELECT 'during ' || ($fileset);
COMMIT;
SELECT 'committed ' || ($fileset);
\warn == rolled back
BEGIN;
SELECT singleton_count(a, b) FROM received;
SELECT 1 / 0;
ROLLBACK;
\warn == rolled back end
SELECT 'rolled back ' || ($fileset);
\warn == unread
BEGIN;
SAVEPOINT before;
SELECT failing(b::integer), singleton_count(a, b) FROM received;
ROLLBACK TO before;
\warn == unread end
SELECT 'unread ' || ($fileset);
COMMIT;
\warn == swept end
SELECT 'swept ' || ($fileset);
BEGIN;
\warn == loop unread
DO \$\$ BEGIN FOR i IN 1..3 LOOP
	BEGIN PERFORM failing(b::integer), singleton_count(a, b) FROM received;
	EXCEPTION WHEN raise_exception THEN NULL; END;
END LOOP; END \$\$;
\warn == loop unread end
SELECT 'loop unread ' || ($fileset);
\warn == loop read
DO \$\$ BEGIN FOR i IN 1..3 LOOP
	BEGIN PERFORM singleton_count(a, b), 1 / (count(*) - count(*)) FROM received;
	EXCEPTION WHEN division_by_zero THEN NULL; END;
END LOOP; END \$\$;
\warn == loop read end
SELECT 'loop read ' || ($fileset);
COMMIT;
SQL
)
default=base/pgsql_tmp
ok "$(echo "$out" | sed -n 's/^during //p')" "1/0" "PostgreSQL $version: the workers' files are read and deleted, their directory stays to the end of the transaction"
ok "$(echo "$out" | sed -n 's/^committed //p')" "0/0" "PostgreSQL $version: the directory is gone after COMMIT"
ok "$(deleted "$out" 'rolled back' 'rolled back end' $default 1), then $(echo "$out" | sed -n 's/^rolled back //p')" \
	"files deleted, then 0/0" "PostgreSQL $version: the directory is gone after an error and ROLLBACK"
ok "$(deleted "$out" unread 'unread end' $default 1), then $(echo "$out" | sed -n 's/^unread //p')" "files deleted, then 0/0" \
	"PostgreSQL $version: ROLLBACK TO SAVEPOINT deletes the files a statement stopped before the leader read them left"
ok "$(deleted "$out" unread 'swept end' $default 1), then $(echo "$out" | sed -n 's/^swept //p')" "files deleted, then 0/0" \
	"PostgreSQL $version: nothing is left after COMMIT"
ok "$(deleted "$out" 'loop unread' 'loop unread end' $default 3), then $(echo "$out" | sed -n 's/^loop unread //p')" \
	"files deleted, then 0/0" \
	"PostgreSQL $version: three failing exception blocks leave no unread files until the end of the transaction"
ok "$(deleted "$out" 'loop read' 'loop read end' $default 3), then $(echo "$out" | sed -n 's/^loop read //p')" \
	"files deleted, then 0/0" \
	"PostgreSQL $version: three exception blocks failing after the leader read the files leave none either"

# the same with the workers' files in a temporary tablespace, which the leader
# (not participating) never prepares itself: what is in its pgsql_tmp, and in
# the file set's directory there
intablespace="SELECT (SELECT count(*) FROM pg_ls_dir(d, true, false))
	|| '/' || (SELECT count(*) FROM pg_ls_dir(d || format('/pgsql_tmp%s.4043309056.fileset', pg_backend_pid()), true, false))
	FROM (SELECT format('pg_tblspc/%s/%s/pgsql_tmp', t.oid, v) AS d
		FROM pg_tablespace t, pg_ls_dir('pg_tblspc/' || t.oid) v WHERE t.spcname = '$TS') s"
out=$(psql -X -qAt -d $DB 2>&1 <<SQL
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET temp_tablespaces = $TS;
SET log_temp_files = 0;
SET client_min_messages = log;
BEGIN;
SELECT 'answer ' || singleton_count(a, b) FROM received;
SELECT 'during ' || ($intablespace);
COMMIT;
SELECT 'committed ' || ($intablespace);
\warn == read, error
BEGIN;
SELECT singleton_count(a, b), 1 / (count(*) - count(*)) FROM received;
ROLLBACK;
\warn == read, error end
SELECT 'read, error ' || ($intablespace);
\warn == unread, error
SELECT failing(b::integer), singleton_count(a, b) FROM received;
\warn == unread, error end
SELECT 'unread, error ' || ($intablespace);
-- the workers hand over in tens of milliseconds; the leader then waits in
-- the combine of sleeping, after taking a worker's state
SET statement_timeout = '2s';
\warn == canceled
SELECT singleton_count(a, b), sleeping(b::integer) FROM received;
\warn == canceled end
RESET statement_timeout;
SELECT 'canceled ' || ($intablespace);
\warn == rolled back to
BEGIN;
SAVEPOINT before;
SELECT failing(b::integer), singleton_count(a, b) FROM received;
ROLLBACK TO before;
\warn == rolled back to end
SELECT 'rolled back to ' || ($intablespace);
COMMIT;
SQL
)
intmp="pg_tblspc/[0-9]+/[^/]+/pgsql_tmp"
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: through a temporary tablespace the answer equals GROUP BY's"
ok "$(echo "$out" | sed -n 's/^during //p')" "1/0" "PostgreSQL $version: the workers' files went to the temporary tablespace and are deleted once read"
ok "$(echo "$out" | sed -n 's/^committed //p')" "0/0" "PostgreSQL $version: nothing is left in the temporary tablespace after COMMIT"
ok "$(deleted "$out" 'read, error' 'read, error end' "$intmp" 1), then $(echo "$out" | sed -n 's/^read, error //p')" \
	"files deleted, then 0/0" "PostgreSQL $version: nor after an error once the files were read, and ROLLBACK"
ok "$(deleted "$out" 'unread, error' 'unread, error end' "$intmp" 1), then $(echo "$out" | sed -n 's/^unread, error //p')" \
	"files deleted, then 0/0" "PostgreSQL $version: nor after an error before the leader read them"
ok "$(echo "$out" | sed -n '/^== canceled$/,/^== canceled end$/p' | grep -c 'canceling statement due to statement timeout') canceled, $(deleted "$out" canceled 'canceled end' "$intmp" 1), then $(echo "$out" | sed -n 's/^canceled //p')" \
	"1 canceled, files deleted, then 0/0" "PostgreSQL $version: nor after a statement canceled by statement_timeout"
ok "$(deleted "$out" 'rolled back to' 'rolled back to end' "$intmp" 1), then $(echo "$out" | sed -n 's/^rolled back to //p')" \
	"files deleted, then 0/0" "PostgreSQL $version: nor after ROLLBACK TO SAVEPOINT"
ok "$(q -d postgres -c "DROP TABLESPACE $TS" 2>&1 && echo dropped)" "dropped" \
	"PostgreSQL $version: the temporary tablespace can be dropped"
