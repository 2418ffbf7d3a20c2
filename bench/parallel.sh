#!/bin/bash
# bench/parallel.sh [ROWS] - parallel scaling of the exact and approximate
# singleton counts.
#
# Builds (or reuses, when its comment shows the same generator) bench/population.sql's
# deterministic population with ROWS rows (default 10000000) as bench_pop_ROWS, then for 0, 1 and 2 parallel
# workers (max_parallel_workers_per_gather; the planner's costs otherwise at
# their defaults) times, in ONE psql session, one warm-up and BENCH_RUNS
# (default 3) runs of
#   X  singleton_count(birth_date, sex, zip5)            (exact, near-distinct:
#      about 9.4 million classes, so the partial states are as large as the input)
#   Y  singleton_count(birth_date, sex)                  (exact, about 65,000 classes)
#   A  approx_singleton_count(birth_date, sex, zip5)     (capacity 32768)
#   C  a bare scan hashing the same columns (bench/run.sh's variant C): what
#      the machine itself gains from parallel workers
# with the worker counts interleaved run by run.  Every run of X must return
# the same count, every run of A the same estimate.  Then one fresh session per
# (variant, workers) reads its backend's peak resident memory (VmHWM, the
# leader only: workers are other processes).  Writes its section between
# <!-- bench:parallel --> and <!-- /bench:parallel --> of docs/benchmarks.md
# (for another ROWS, <!-- bench:parallel-ROWS -->).
#
# Uses the server in PGHOST/PGPORT/PGUSER, database $BENCH_DB (default bench,
# created when missing; the extension is re-created so the installed build is
# the one timed).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/common.sh

ROWS=${1:-10000000}
bench_check_rows parallel.sh "$ROWS"
RUNS=${BENCH_RUNS:-3}
DOC=${BENCH_DOC:-docs/benchmarks.md}
TAB="bench_pop_$ROWS"
OUT="bench/results/parallel-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"

bench_database "${BENCH_DB:-bench}"
bench_population parallel "$TAB" "$ROWS"

declare -A QUERY
QUERY[X]="SELECT singleton_count(birth_date, sex, zip5) FROM $TAB"
QUERY[Y]="SELECT singleton_count(birth_date, sex) FROM $TAB"
QUERY[A]="SELECT approx_singleton_count(birth_date, sex, zip5) FROM $TAB"
QUERY[C]="SELECT sum(hashint4(birth_date - date '1900-01-01')::bigint + hashtext(sex) + hashtext(zip5)) FROM $TAB"

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "\\pset format unaligned"
	echo "\\pset tuples_only on"
	for w in 0 1 2; do
		echo "SET max_parallel_workers_per_gather = $w;"
		echo "${QUERY[X]};"
		echo "${QUERY[Y]};"
		echo "${QUERY[A]};"
		echo "${QUERY[C]};"
	done
	for ((run = 0; run < RUNS; run++)); do
		for w in 0 1 2; do
			for v in X Y A C; do
				# only the query is timed
				echo "SET max_parallel_workers_per_gather = $w;"
				echo "\\echo VARIANT $v $w"
				echo "\\timing on"
				echo "${QUERY[$v]};"
				echo "\\timing off"
			done
		done
	done
} >"$OUT/session.sql"
"${PSQL[@]}" -f "$OUT/session.sql" >"$OUT/session.log"

# peak resident memory of the leader backend, one fresh session per case
# (read by the backend itself from /proc/self/status: needs a superuser)
: >"$OUT/memory.log"
for v in X A; do
	for w in 0 1 2; do
		hwm=$("${PSQL[@]}" -At -c "SET max_parallel_workers_per_gather = $w" -c "${QUERY[$v]}" \
			-c "SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s*(\\d+)')" | tail -1)
		echo "$v $w $hwm" >>"$OUT/memory.log"
	done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$OUT/session.log" "$OUT/memory.log" "$DOC" "$ROWS" "$RUNS" "$load_start" "$load_end" \
	"$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql || echo ' (src/sql modified)')" <<'PY'
import re, statistics, sys

log, memlog, doc, rows, runs, load_start, load_end, commit = sys.argv[1:]
times, answers, key = {}, {}, None
for line in open(log).read().splitlines():
    m = re.match(r'VARIANT (\w) (\d)', line)
    if m:
        key = (m.group(1), int(m.group(2)))
        continue
    m = re.match(r'Time: ([0-9.]+) ms', line)
    if m and key:
        times.setdefault(key, []).append(float(m.group(1)))
        continue
    if key and line.strip() and not line.startswith('Timing is'):
        answers.setdefault(key[0], set()).add(line.strip())
for k, t in times.items():
    if len(t) != int(runs):
        sys.exit(f'parallel: expected {runs} timings of {k}, got {t}')
for v in 'XYAC':
    if len(answers.get(v, ())) != 1:
        sys.exit(f'parallel: {v} gave different answers: {answers.get(v)}')
mem = {}
for line in open(memlog):
    v, w, kb = line.split()
    mem[(v, int(w))] = int(kb)
med = {k: statistics.median(t) for k, t in times.items()}
names = {'X': 'singleton_count (exact)', 'Y': 'singleton_count(birth_date, sex) (exact)',
         'A': 'approx_singleton_count', 'C': 'bare hashing scan'}
title = 'Parallel scaling' if rows == '10000000' else f'Parallel scaling at {int(rows):,} rows'
out = ['## ' + title, '',
       f'Produced by `bash bench/parallel.sh {rows}` on the server in PGHOST/PGPORT; qidrisk at commit '
       f'{commit}; load average (1, 5, 15 min) {load_start} at the start, {load_end} at the end '
       '(two shared cores). Table `bench_pop_' + rows + '`; workers set by '
       '`max_parallel_workers_per_gather`, the leader participating; one session, one warm-up each, '
       f'then {runs} runs per case, interleaved; medians in ms. Peak memory: VmHWM of the leader '
       'backend in a fresh session (resident pages, shared buffers it touched included; workers are '
       'separate processes and not included).', '',
       '| variant | workers | median ms | runs (ms) | speed-up vs 0 workers | leader peak memory |',
       '|---|---:|---:|---|---:|---:|']
for v in 'XYAC':
    for w in (0, 1, 2):
        t = times[(v, w)]
        peak = f'{mem[(v, w)] / 1024:,.0f} MB' if (v, w) in mem else ''
        out.append(f'| {names[v]} | {w} | {med[(v, w)]:,.0f} | {", ".join(f"{x:,.0f}" for x in t)} | '
                   f'{med[(v, 0)] / med[(v, w)]:.2f} | {peak} |')
out.append('')
out.append(f'Answers: X = {next(iter(answers["X"]))}, Y = {next(iter(answers["Y"]))} and '
           f'A = {next(iter(answers["A"]))} on every run.')
for v, what in (('X', 'near-distinct QID'), ('Y', 'QID of about 65,000 classes')):
    goal = med[(v, 0)] / med[(v, 2)]
    out.append(f'Goal "2 workers at least 1.6x faster than 0", {what}: {goal:.2f}x - '
               f'**{"met" if goal >= 1.6 else "not met"}**.')
out.append(f'The bare scan itself gains {med[("C", 0)] / med[("C", 2)]:.2f}x from 2 workers on this machine.')
section = '\n'.join(out) + '\n'
sys.path.insert(0, 'bench')
from section import write_section
write_section(doc, 'parallel' if rows == '10000000' else f'parallel-{rows}', section)
print(section)
PY
