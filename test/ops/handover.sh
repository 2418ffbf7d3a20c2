#!/bin/bash
# Operations, as TAP (run by test/suites.sh through prove): the parallel
# hand-over of frequency states reads executor internals (the query's shared
# memory area, the Gather's current tuple), which differ between PostgreSQL
# major versions.  On the version under test, a parallel singleton_count
# must take both shortcuts, which say so at DEBUG1: a worker leaves its state
# in shared memory, which the leader's finalize finds through its Gather
# (workers alone read the table, so their states pass the 1 MB threshold);
# and the leader lends its own partial state (no worker may start, so the
# leader's state is the whole); each answer must equal GROUP BY's.  A version where a shortcut silently falls back to the plain
# serialized path fails here.
# Uses the server in PGHOST/PGPORT/PGUSER.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
DB=qidrisk_ops_handover
cleanup() { q -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null; }
cleanup
trap cleanup EXIT
q -d postgres -c "CREATE DATABASE $DB"
q -d $DB >/dev/null <<'SQL'
CREATE EXTENSION qidrisk;
-- 250,000 classes over 400,000 rows: each process's partial state passes 1 MB
CREATE TABLE received AS
SELECT (i::bigint * 7919) % 250000 AS a, (i / 7) % 2 AS b FROM generate_series(1, 400000) i;
ANALYZE received;
SQL

echo "1..7"
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
ok "$(echo "$out" | grep -c 'qidrisk: a parallel worker hands over its partial state in shared memory' | sed 's/^[1-9][0-9]*$/some/')" \
	some "PostgreSQL $version: workers leave their states in shared memory"
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: the answer read from shared memory equals GROUP BY's"
# no worker may start: the leader runs the partial aggregate below its Gather alone
out=$(run "SET max_parallel_workers = 0;")
ok "$(echo "$out" | grep -cE 'Partial Aggregate')" 1 "PostgreSQL $version: the leader runs a partial aggregate"
ok "$(echo "$out" | grep -c 'qidrisk: the parallel leader keeps its own partial state')" 1 \
	"PostgreSQL $version: the leader lends its partial state to its finalize"
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: the lent state's answer equals GROUP BY's"
# both at once, as by default: the answer still equals GROUP BY's
out=$(run "")
ok "$(echo "$out" | sed -n 's/^answer //p')" "$expected" "PostgreSQL $version: with the leader and workers together the answer equals GROUP BY's"
