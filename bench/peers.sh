#!/bin/bash
# bench/peers.sh [ROWS] - qidrisk's singleton_count against DuckDB, the peer
# engine, and against PostgreSQL's own floor, on three QID shapes.
#
# bench/peers.sql builds ROWS (default 10000000) rows of integer columns (a
# birth day, sex, a skewed ZIP, the birth year, ZIP / 10), deterministic, in
# the database $BENCH_DB (default bench).  The table is copied once into a
# DuckDB file, and DuckDB (npm @duckdb/node-api, installed with node-postgres
# into $BENCH_SCRATCH, default /var/tmp/qidrisk-peers) runs with one thread.
# One node process (bench/peers.mjs) drives one PostgreSQL session (jit off,
# no parallel workers) and one DuckDB connection; for each shape
#   near-distinct  (d, s, zip)     medium  (y, s, zip4)     low  (y, s)
# it times
#   qidrisk    SELECT singleton_count(cols) FROM t
#   plain_sql  SELECT count(*) FROM (SELECT 1 FROM t GROUP BY cols HAVING count(*) = 1)
#   scan       SELECT bit_xor(hashint4(c1) # hashint4(c2) # ...) FROM t
#              (a bare scan hashing the same values: PostgreSQL's floor)
#   duckdb     DuckDB's GROUP BY ... HAVING count(*) = 1 over its copy
# with a warm-up and then BENCH_RUNS (default 6) rounds, every round running
# every shape's four variants back to back: qidrisk, scan and duckdb first (in
# the opposite order every other round), plain_sql last.  Every answer must
# equal the singleton count DuckDB's own GROUP BY gives, or the script fails.
# Prints the medians and, per shape, the median over rounds of each round's
# qidrisk / scan and qidrisk / DuckDB with their range (a shared machine's
# speed drifts between rounds; times taken back to back drift together), the
# machine's load, and
# writes them between <!-- bench:peers --> and <!-- /bench:peers --> of
# docs/benchmarks.md (for another ROWS, <!-- bench:peers-ROWS -->).
#
# Uses the server in PGHOST/PGPORT/PGUSER; the extension is re-created so the
# installed build is the one timed.  BENCH_DOC: where to write.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

ROWS=${1:-10000000}
bench_check_rows peers.sh "$ROWS"
RUNS=${BENCH_RUNS:-6}
DOC=${BENCH_DOC:-docs/benchmarks.md}
SCRATCH=${BENCH_SCRATCH:-/var/tmp/qidrisk-peers}
TAB=bench_peers_$ROWS

command -v node >/dev/null && command -v npm >/dev/null || {
	echo "peers.sh: needs node and npm (apt-get install nodejs npm)" >&2
	exit 2
}
mkdir -p "$SCRATCH"
if [ ! -d "$SCRATCH/node_modules/@duckdb/node-api" ] || [ ! -d "$SCRATCH/node_modules/pg" ]; then
	echo "peers.sh: installing @duckdb/node-api and pg into $SCRATCH"
	(cd "$SCRATCH" && npm install --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1 pg@8) >&2
fi

bench_database "${BENCH_DB:-bench}"
bench_population peers.sh "$TAB" "$ROWS" bench/peers.sql
signature=$("${PSQL[@]}" -At -c "SELECT obj_description('$TAB'::regclass, 'pg_class')" | md5sum | cut -c1-12)
DUCK=$SCRATCH/peers_${ROWS}_$signature.duckdb
CSV=$SCRATCH/peers_$ROWS.csv
if [ ! -f "$DUCK" ]; then
	"${PSQL[@]}" -c "\\copy $TAB TO '$CSV' CSV"
fi
cp bench/peers.mjs "$SCRATCH/peers.mjs"
OUT=$(mktemp)
trap 'rm -f "$OUT" "$CSV"' EXIT
node "$SCRATCH/peers.mjs" "$TAB" "$CSV" "$DUCK" "$RUNS" "$OUT"
rm -f "$CSV"
SECTION=peers
[ "$ROWS" = 10000000 ] || SECTION=peers-$ROWS
python3 bench/peers.py "$OUT" "$DOC" "$SECTION"
