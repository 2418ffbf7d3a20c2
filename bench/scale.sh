#!/bin/bash
# bench/scale.sh [ROWS] - time the approximate estimators.
#
# Builds bench/population.sql's deterministic population table with ROWS rows
# (default 10000000) as bench_scale_ROWS, then in ONE psql session (\timing,
# server defaults, parallel plans allowed) one warm-up of each variant and
# BENCH_RUNS (default 5) timed runs, the variants interleaved and rotated:
#   A  approx_singleton_count(birth_date, sex, zip5)     (capacity 32768)
#   K  approx_singleton_count_key(qid_key(birth_date, sex, zip5))
#   C  a bare scan hashing the same columns (bench/run.sh's variant C)
#   X  singleton_count(birth_date, sex, zip5)             (exact)
# A and K must return the same estimate on every run, X the same count; the
# relative errors of A's singleton estimate and of approx_class_count against
# the exact figures are reported with the standard errors from
# approx_class_profile.  Writes its section between the markers
# <!-- bench:scale --> and <!-- /bench:scale --> of docs/benchmarks.md and
# drops the table unless BENCH_KEEP=1.
#
# Uses the server in PGHOST/PGPORT/PGUSER, database $BENCH_DB (default
# bench_scale, created when missing; the extension is re-created in it so the
# installed build is the one timed).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/common.sh

ROWS=${1:-10000000}
bench_check_rows scale.sh "$ROWS"
RUNS=${BENCH_RUNS:-5}
DOC=${BENCH_DOC:-docs/benchmarks.md}
TAB="bench_scale_$ROWS"
OUT="bench/results/scale-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"

bench_database "${BENCH_DB:-bench_scale}"
bench_population scale "$TAB" "$ROWS"

declare -A QUERY
VARIANTS=(A K C X)
QUERY[A]="SELECT approx_singleton_count(birth_date, sex, zip5) FROM $TAB"
QUERY[K]="SELECT approx_singleton_count_key(qid_key(birth_date, sex, zip5)) FROM $TAB"
QUERY[C]="SELECT sum(hashint4(birth_date - date '1900-01-01')::bigint + hashtext(sex) + hashtext(zip5)) FROM $TAB"
QUERY[X]="SELECT singleton_count(birth_date, sex, zip5) FROM $TAB"

# --- one session: warm-up, then interleaved timed runs ---------------------
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "\\pset format unaligned"
	echo "\\pset tuples_only on"
	for v in "${VARIANTS[@]}"; do
		echo "${QUERY[$v]};"
	done
	echo "\\timing on"
	for ((run = 0; run < RUNS; run++)); do
		for ((i = 0; i < ${#VARIANTS[@]}; i++)); do
			v=${VARIANTS[$(((i + run) % ${#VARIANTS[@]}))]}
			echo "\\echo VARIANT $v"
			echo "${QUERY[$v]};"
		done
	done
	echo "\\timing off"
	echo "\\echo FIGURES"
	echo "SELECT p.rows, p.classes, p.classes_se, p.singletons, p.singletons_se, p.sampling_rate, p.sampled_classes,"
	echo "  e.classes, e.singletons, a.classes"
	echo "FROM (SELECT (approx_class_profile(32768, birth_date, sex, zip5)).* FROM $TAB) p,"
	echo "  (SELECT (class_profile(birth_date, sex, zip5)).* FROM $TAB) e,"
	echo "  (SELECT approx_class_count(birth_date, sex, zip5) AS classes FROM $TAB) a;"
} >"$OUT/session.sql"
"${PSQL[@]}" -f "$OUT/session.sql" >"$OUT/session.log"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
settings=$("${PSQL[@]}" -At -c "SELECT string_agg(name || ' = ' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('max_parallel_workers_per_gather', 'work_mem', 'jit', 'shared_buffers')")
version=$("${PSQL[@]}" -At -c "SELECT version()")

python3 - "$OUT/session.log" "$DOC" "$ROWS" "$RUNS" "$load_start" "$load_end" "$settings" "$version" \
	"$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql || echo ' (src/sql modified)')" <<'PY'
import re, statistics, sys

log, doc, rows, runs, load_start, load_end, settings, version, commit = sys.argv[1:]
rows = int(rows)
times = {}
answers = {}
variant = None
lines = open(log).read().splitlines()
figures = None
for i, line in enumerate(lines):
    m = re.match(r'VARIANT (\w)', line)
    if m:
        variant = m.group(1)
        continue
    if line == 'FIGURES':
        figures = lines[i + 1].split('|')
        variant = None
        continue
    m = re.match(r'Time: ([0-9.]+) ms', line)
    if m and variant:
        times.setdefault(variant, []).append(float(m.group(1)))
        continue
    if variant and line.strip():
        answers.setdefault(variant, set()).add(line.strip())

for v in 'AKCX':
    if len(times.get(v, [])) != int(runs):
        sys.exit(f'scale: expected {runs} timings of {v}, got {times.get(v)}')
for v in 'AKX':
    if len(answers[v]) != 1:
        sys.exit(f'scale: {v} returned different answers: {answers[v]}')
if answers['A'] != answers['K']:
    sys.exit(f'scale: A and K differ: {answers["A"]} {answers["K"]}')

med = {v: statistics.median(t) for v, t in times.items()}
approx = float(next(iter(answers['A'])))
exact = int(next(iter(answers['X'])))
(p_rows, p_classes, p_classes_se, p_single, p_single_se, rate, kept,
 e_classes, e_single, a_classes) = figures
rel_single = (approx - exact) / exact
rel_classes = (float(a_classes) - int(e_classes)) / int(e_classes)
if abs(float(p_single) - approx) > 0:
    sys.exit('scale: approx_class_profile and approx_singleton_count disagree')

def ms(x):
    return f'{x:,.0f}' if x >= 100 else f'{x:,.1f}'

out = []
out.append('## Approximate estimators at scale')
out.append('')
out.append(f'Produced by `bash bench/scale.sh {rows}` (from the repository root) on the server in PGHOST/PGPORT; '
           f'{version}; qidrisk at commit {commit}; settings: {settings}; load average (1, 5, 15 min) '
           f'{load_start} at the start, {load_end} at the end (two shared cores: other work ran beside it).')
out.append('')
out.append(f'Table: `bench/population.sql`\'s deterministic population with {rows:,} rows; '
           'quasi-identifier (birth_date, sex, zip5). One psql session, one warm-up of each variant, '
           f'then {runs} timed runs per variant, interleaved and rotated; medians in ms.')
out.append('')
out.append('| variant | query | median ms | runs (ms) | / C |')
out.append('|---|---|---:|---|---:|')
names = {'A': 'approx_singleton_count(birth_date, sex, zip5)',
         'K': 'approx_singleton_count_key(qid_key(birth_date, sex, zip5))',
         'C': 'bare hashing scan: sum(hashint4(...) + hashtext(sex) + hashtext(zip5))',
         'X': 'singleton_count(birth_date, sex, zip5) (exact)'}
for v in 'AKCX':
    out.append(f'| {v} | `{names[v]}` | {ms(med[v])} | {", ".join(ms(t) for t in times[v])} | {med[v] / med["C"]:.2f} |')
out.append('')
out.append(f'- Exact: {exact:,} singletons, {int(e_classes):,} classes.')
out.append(f'- Approximate (capacity 32768): sampling rate {float(rate):g}, {int(kept):,} classes kept; '
           f'singletons {approx:,.0f} (standard error {float(p_single_se):,.0f}), relative error {rel_single:+.2%}; '
           f'classes {float(a_classes):,.0f} (standard error {float(p_classes_se):,.0f}), relative error {rel_classes:+.2%}.')
out.append(f'- A and K returned the same estimate on every run; X the same count.')
goal_speed = med['A'] <= 2 * med['C']
goal_err = abs(rel_single) <= 0.02
out.append(f'- Goal "within 2x a bare scan": A/C = {med["A"] / med["C"]:.2f} - **{"met" if goal_speed else "not met"}**. '
           f'Goal "within 2% relative error of the exact count": {rel_single:+.2%} - **{"met" if goal_err else "not met"}**.')
out.append(f'- Exact versus approximate: X/A = {med["X"] / med["A"]:.2f}.')
section = '\n'.join(out) + '\n'

sys.path.insert(0, 'bench')
from section import write_section
write_section(doc, 'scale', section)
print(section)
PY

if [ "${BENCH_KEEP:-0}" != 1 ]; then
	"${PSQL[@]}" -c "DROP TABLE $TAB"
fi
