#!/bin/bash
# bench/count_model.sh [ROWS] - what counting classes costs per row outside
# PostgreSQL, on the rows of bench/peers.sh's three QID shapes.
#
# Builds (or reuses) bench/peers.sql's table of ROWS (default 10000000) rows
# in $BENCH_DB (default bench), compiles bench/count_model.c with cc -O2, and
# pipes each shape's columns (COPY ... TO STDOUT) into it:
#   near-distinct  (d, s, zip)     medium  (y, s, zip4)     low  (y, s)
# The program fingerprints every row as qidrisk folds int4 columns and times
# four ways of counting the fingerprints (the frequency state's layout, a
# prefetching hash table, radix partitioning of every row, radix partitioning
# with bounded memory) in BENCH_RUNS (default 5) interleaved rounds after a
# warm-up.  Every structure's singleton count must equal PostgreSQL's own
# GROUP BY ... HAVING count(*) = 1, or the script fails.  Prints the medians
# (ns per row) and the peak memory each structure held, and writes them between
# <!-- bench:count-model --> and <!-- /bench:count-model --> of
# docs/benchmarks.md (for another ROWS, <!-- bench:count-model-ROWS -->).
#
# Uses the server in PGHOST/PGPORT/PGUSER.  BENCH_DOC: where to write.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

ROWS=${1:-10000000}
bench_check_rows count_model.sh "$ROWS"
RUNS=${BENCH_RUNS:-5}
DOC=${BENCH_DOC:-docs/benchmarks.md}
TAB=bench_peers_$ROWS
CC=${CC:-cc}

command -v "$CC" >/dev/null || {
	echo "count_model.sh: needs a C compiler ($CC; apt-get install gcc)" >&2
	exit 2
}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$CC" -O2 -o "$WORK/count_model" bench/count_model.c

bench_database "${BENCH_DB:-bench}"
bench_population count_model.sh "$TAB" "$ROWS" bench/peers.sql

load_before=$(cut -d' ' -f1 /proc/loadavg)
for shape in "near-distinct:d, s, zip" "medium:y, s, zip4" "low:y, s"; do
	name=${shape%%:*}
	cols=${shape#*:}
	echo "count_model.sh: $name ($cols)" >&2
	"${PSQL[@]}" -c "COPY (SELECT $cols FROM $TAB) TO STDOUT" |
		"$WORK/count_model" "$RUNS" | sed "s/^/$name\t/" >>"$WORK/result"
	expected=$("${PSQL[@]}" -At -c "SET jit = off" \
		-c "SELECT count(*) FROM (SELECT 1 FROM $TAB GROUP BY $cols HAVING count(*) = 1) g")
	awk -F'\t' -v s="$name" -v e="$expected" '$1 == s && $8 != e {
		print "count_model.sh: " s ": " $2 " found " $8 " singletons, GROUP BY " e; bad = 1 }
		END { exit bad }' "$WORK/result"
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

SECTION=count-model
[ "$ROWS" = 10000000 ] || SECTION=count-model-$ROWS
CPU=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
CACHES=$(lscpu | sed -n 's/^\(L2\|L3\) cache: *//p' | paste -sd/ -)
python3 - "$WORK/result" "$DOC" "$SECTION" "$ROWS" "$RUNS" "$(nproc)" "$CPU" "$CACHES" \
	"$load_before" "$load_after" <<'EOF'
import sys
sys.path.insert(0, "bench")
from section import write_section

result, doc, section, rows, runs, cpus, cpu, caches, before, after = sys.argv[1:11]
lines = [l.rstrip("\n").split("\t") for l in open(result, encoding="utf-8") if l.strip()]
shapes = list(dict.fromkeys(l[0] for l in lines))
structs = list(dict.fromkeys(l[1] for l in lines))
cell = {(l[0], l[1]): l for l in lines}
out = [
    "## Counting classes outside PostgreSQL",
    "",
    f"Measured by `bench/count_model.sh {rows}`: the rows of `bench/peers.sh`'s table "
    f"({int(rows):,} rows), fingerprinted as qidrisk folds int4 columns and counted by "
    f"`bench/count_model.c` outside PostgreSQL; medians of {runs} interleaved rounds after a "
    f"warm-up, every structure's singleton count equal to PostgreSQL's GROUP BY. Machine: "
    f"{cpus} cores ({cpu}, L2/L3 cache {caches}), load average {float(before):.2f} before and "
    f"{float(after):.2f} after.",
    "",
    "`lsm` is the frequency state's layout (four partitions, each a sorted array and a buffer of a quarter of its classes, merged into it when full), `hash` one open-addressing table whose slots are prefetched sixteen rows ahead, `radix` every row's fingerprint scattered into partitions of about 32,768 rows, each counted in a table that fits the cache, and `compact` the same with the rows held at most as many as the classes counted; in parentheses, the most memory each held.",
    "",
    "| QID shape | classes | singletons | "
    + " | ".join(f"{s}: ns/row (MB)" for s in structs) + " |",
    "|---|---|---|" + "---|" * len(structs),
]
for sh in shapes:
    first = cell[(sh, structs[0])]
    out.append(f"| {sh} | {int(first[6]):,} | {int(first[7]):,} | "
               + " | ".join(f"{float(cell[(sh, s)][3]):.1f} ({float(cell[(sh, s)][4]):,.0f})"
                            for s in structs) + " |")
text = "\n".join(out)
print(text)
write_section(doc, section, "\n" + text + "\n")
EOF
