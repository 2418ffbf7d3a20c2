#!/bin/bash
# bench/spill.sh [ROWS] - exact counting past the memory budget.
#
# Builds bench/population.sql's deterministic population table with ROWS rows
# (default 30000000) as bench_spill_ROWS, then in ONE psql session, serial plans
# (max_parallel_workers_per_gather = 0, so that one backend holds the whole
# state), one warm-up of each variant and BENCH_RUNS (default 3) timed runs,
# the variants interleaved and rotated:
#   M  singleton_count(birth_date, sex, zip5), qidrisk.max_state_memory = 8GB
#      (in memory, unbounded in practice)
#   S  the same with qidrisk.max_state_memory = 256MB (spills to temporary files)
#   C  a bare scan hashing the same columns (bench/run.sh's variant C)
# M and S must return the same count on every run.  For every run it records
# the time (\timing), the backend's peak resident memory (VmHWM of
# /proc/<backend pid>/status, reset before each query by writing 5 to
# /proc/<pid>/clear_refs; it includes the shared buffers the backend touched,
# which variant C shows alone) and the temporary bytes written
# (pg_stat_database.temp_bytes before and after, flushed with
# pg_stat_force_next_flush()).  Writes its section between the markers
# <!-- bench:spill --> and <!-- /bench:spill --> of docs/benchmarks.md and drops
# the table unless BENCH_KEEP=1.
#
# Uses the server in PGHOST/PGPORT/PGUSER, database $BENCH_DB (default
# bench_spill, created when missing; the extension is re-created in it so the
# installed build is the one timed).  The /proc files must be readable and
# writable by this script's user (root or the server's user, same machine).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/common.sh

ROWS=${1:-30000000}
bench_check_rows spill.sh "$ROWS"
RUNS=${BENCH_RUNS:-3}
DOC=${BENCH_DOC:-docs/benchmarks.md}
TAB="bench_spill_$ROWS"
OUT="bench/results/spill-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"

bench_database "${BENCH_DB:-bench_spill}"
bench_population spill "$TAB" "$ROWS"

declare -A QUERY SETTING
VARIANTS=(M S C)
QUERY[M]="SELECT singleton_count(birth_date, sex, zip5) FROM $TAB"
QUERY[S]="${QUERY[M]}"
QUERY[C]="SELECT sum(hashint4(birth_date - date '1900-01-01')::bigint + hashtext(sex) + hashtext(zip5)) FROM $TAB"
SETTING[M]="SET qidrisk.max_state_memory = '8GB'"
SETTING[S]="SET qidrisk.max_state_memory = '256MB'"
SETTING[C]="RESET qidrisk.max_state_memory"

# One measured query: settings, reset the peak, temp_bytes before, the timed
# query, temp_bytes after, the peak
measured() {
	local v=$1
	echo "${SETTING[$v]};"
	echo "SELECT pg_stat_force_next_flush();"
	echo "SELECT temp_bytes AS tb0 FROM pg_stat_database WHERE datname = current_database() \\gset"
	echo "\\! echo 5 > /proc/\$QID_BACKEND/clear_refs"
	echo "\\echo VARIANT $v"
	echo "\\timing on"
	echo "${QUERY[$v]};"
	echo "\\timing off"
	echo "\\! grep VmHWM /proc/\$QID_BACKEND/status"
	echo "SELECT pg_stat_force_next_flush();"
	echo "SELECT 'TEMPBYTES ' || (temp_bytes - :tb0) FROM pg_stat_database WHERE datname = current_database();"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "\\pset format unaligned"
	echo "\\pset tuples_only on"
	echo "SET max_parallel_workers_per_gather = 0;"
	echo "SELECT pg_backend_pid() AS pid \\gset"
	echo "\\setenv QID_BACKEND :pid"
	for v in "${VARIANTS[@]}"; do
		echo "${SETTING[$v]};"
		echo "${QUERY[$v]};"
	done
	for ((run = 0; run < RUNS; run++)); do
		for ((i = 0; i < ${#VARIANTS[@]}; i++)); do
			measured "${VARIANTS[$(((i + run) % ${#VARIANTS[@]}))]}"
		done
	done
	echo "SELECT 'CLASSES ' || class_count(birth_date, sex, zip5) FROM $TAB;"
	echo "SELECT 'TABLESIZE ' || pg_size_pretty(pg_table_size('$TAB'));"
} | "${PSQL[@]}" 2>&1 | tee "$OUT/session.log" >/dev/null
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- medians and checks ----------------------------------------------------
python3 - "$OUT/session.log" "$ROWS" "$DOC" "$load_start" "$load_end" <<'EOF'
import re, statistics, sys
log, rows, doc, load_start, load_end = sys.argv[1:6]
runs = {}
current = None
classes = tablesize = None
lines = open(log).read().splitlines()
for line in lines:
    m = re.match(r'VARIANT (\w)', line)
    if m:
        current = {'v': m.group(1)}
        runs.setdefault(m.group(1), []).append(current)
        continue
    if current is None:
        if line.startswith('CLASSES '):
            classes = int(line.split()[1])
        continue
    m = re.match(r'Time: ([0-9.]+) ms', line)
    if m:
        current['ms'] = float(m.group(1))
        continue
    m = re.match(r'VmHWM:\s+(\d+) kB', line)
    if m:
        current['hwm_kb'] = int(m.group(1))
        continue
    if line.startswith('TEMPBYTES '):
        current['temp'] = int(line.split()[1])
        continue
    if line.startswith('CLASSES '):
        classes = int(line.split()[1])
        continue
    if line.startswith('TABLESIZE '):
        tablesize = line.split(' ', 1)[1]
        continue
    if re.fullmatch(r'-?\d+', line) and 'answer' not in current:
        current['answer'] = int(line)
for v in 'MSC':
    for r in runs.get(v, []):
        for k in ('ms', 'hwm_kb', 'temp', 'answer'):
            if k not in r:
                sys.exit(f'spill.sh: run of {v} without {k}; see {log}')
answers = {r['answer'] for v in 'MS' for r in runs[v]}
if len(answers) != 1:
    sys.exit(f'spill.sh: in-memory and spilled counts differ: {sorted(answers)}')
singletons = answers.pop()
def med(v, k):
    return statistics.median(r[k] for r in runs[v])
M, S, C = ({k: med(v, k) for k in ('ms', 'hwm_kb', 'temp')} for v in 'MSC')
n = len(runs['M'])
block = f'''<!-- spill:{rows} -->
### {int(rows):,} rows

Command: `bash bench/spill.sh {rows}` (BENCH_RUNS={n}). Table `bench_spill_{rows}` from
`bench/population.sql` ({int(rows):,} rows, {tablesize}), `singleton_count(birth_date, sex, zip5)`:
{singletons:,} singletons among {classes:,} classes. Medians of {n} timed runs after a warm-up.
Load average {load_start} at the start, {load_end} at the end (2 shared cores, other work running).

| variant | time (s) | peak RSS of the backend (MB) | temporary bytes written (MB) |
|---|---:|---:|---:|
| M: in memory (`qidrisk.max_state_memory = 8GB`) | {M['ms']/1000:.1f} | {M['hwm_kb']/1024:.0f} | {M['temp']/1048576:.0f} |
| S: 256 MB budget, spilling | {S['ms']/1000:.1f} | {S['hwm_kb']/1024:.0f} | {S['temp']/1048576:.0f} |
| C: bare scan hashing the columns | {C['ms']/1000:.1f} | {C['hwm_kb']/1024:.0f} | {C['temp']/1048576:.0f} |

S/M time ratio {S['ms']/M['ms']:.2f}, S/C {S['ms']/C['ms']:.2f}; M and S returned {singletons:,} on every run.
<!-- /spill:{rows} -->'''
header = '''## Exact counting past the memory budget

`bash bench/spill.sh ROWS` against a private PostgreSQL 15 server: serial plans
(`max_parallel_workers_per_gather = 0`, so one backend holds the whole state), one psql session,
the variants interleaved and rotated after a warm-up. Peak RSS is VmHWM of the backend, reset
before each query (`/proc/<pid>/clear_refs`); it includes the shared buffers the backend touched
(up to `shared_buffers`, 128 MB here; C shows a scan alone). S's frequency state is held to
its 256 MB budget; the rest of S's peak above C is the temporary files' and the final merge's
buffers and the executor's own memory. Temporary bytes are the `pg_stat_database.temp_bytes`
delta around each query. One subsection per table size; each run of the script replaces its own.
'''
sys.path.insert(0, 'bench')
from section import read_section, write_section
# one subsection per table size: keep the other sizes' subsections
blocks = {int(m.group(1)): m.group(0)
          for m in re.finditer(r'<!-- spill:(\d+) -->.*?<!-- /spill:\1 -->', read_section(doc, 'spill') or '', re.S)}
blocks[int(rows)] = block
write_section(doc, 'spill', header + '\n' + '\n\n'.join(blocks[k] for k in sorted(blocks)))
print(block)
EOF

if [ "${BENCH_KEEP:-0}" != 1 ]; then
	"${PSQL[@]}" -c "DROP TABLE $TAB"
fi
