#!/bin/bash
# bench/citus.sh: kmap_count against a population distributed by Citus, and
# against the same population on one node.
#
# Starts a Citus cluster of its own (test/citus.sh: a coordinator and two
# workers on this machine, Citus built once and cached; needs root), builds
# bench/population.sql's deterministic table of POPULATION rows on the
# coordinator, a distributed copy (32 shards, distributed by a row number),
# and a release of its first RELEASE rows, on the coordinator.  Times
# kmap_count(release, population, (birth_date, sex, zip5)) against the local
# and the distributed copy, RUNS interleaved runs after a warm-up, checks the
# answers are equal row by row, and records what the coordinator received
# from the workers (Citus's "Tuple data received from nodes", logged by
# auto_explain for the statements kmap_count runs).  Writes its section into
# docs/benchmarks.md between <!-- bench:citus --> and <!-- /bench:citus -->.
#
#   bash bench/citus.sh                              # 20,000 x 1,000,000, 3 runs
#   RELEASE=5000 POPULATION=200000 RUNS=5 bash bench/citus.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RELEASE=${RELEASE:-20000}
POPULATION=${POPULATION:-1000000}
RUNS=${RUNS:-3}
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config)}
PATH="$("$PG_CONFIG" --bindir):$PATH"
. test/citus.sh
unset PGHOST PGPORT PGUSER PGPASSWORD PGDATABASE PGSERVICE PGSYSCONFDIR
citus_sources || { echo "bench/citus.sh: $CITUS_MISSING" >&2; exit 1; }
citus_install
make -s PG_CONFIG="$PG_CONFIG" >/dev/null && make -s install PG_CONFIG="$PG_CONFIG" >/dev/null

tmp=$(mktemp -d /tmp/qidrisk-bench-citus.XXXXXX)
port=$((20000 + RANDOM % 10000))
trap 'citus_stop "$tmp"; rm -rf "$tmp"' EXIT
citus_cluster "$tmp" "$port"
q() { psql -X -qAt -v ON_ERROR_STOP=1 -h "$tmp" -p "$port" -U postgres -d bench "$@"; }
for p in "$port" $((port + 1)) $((port + 2)); do
	psql -X -qAt -h "$tmp" -p "$p" -U postgres -d postgres -c "CREATE DATABASE bench" >/dev/null
	psql -X -qAt -h "$tmp" -p "$p" -U postgres -d bench -c "SET client_min_messages = warning" -c "CREATE EXTENSION citus"
done
q -c "SELECT citus_set_coordinator_host('$tmp', $port)" -c "SELECT citus_add_node('$tmp', $((port + 1)))" \
	-c "SELECT citus_add_node('$tmp', $((port + 2)))" -c "CREATE EXTENSION qidrisk" >/dev/null
q -v tab=kmap_pop -v rows="$POPULATION" -c "SET client_min_messages = warning" -f bench/population.sql >/dev/null
q -v tab=kmap_rel -v rows="$RELEASE" -c "SET client_min_messages = warning" -f bench/population.sql >/dev/null
q >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE kmap_pop_dist AS SELECT row_number() OVER () AS id, * FROM kmap_pop WITH NO DATA;
SELECT create_distributed_table('kmap_pop_dist', 'id', shard_count => 32);
INSERT INTO kmap_pop_dist SELECT row_number() OVER (), * FROM kmap_pop;
VACUUM ANALYZE kmap_pop_dist;
SQL

KMAP="kmap_count('kmap_rel', '%s', ARRAY['birth_date', 'sex', 'zip5'])"
local_q=$(printf "$KMAP" kmap_pop)
dist_q=$(printf "$KMAP" kmap_pop_dist)
{
	echo "SELECT 'sizes', pg_size_pretty(pg_relation_size('kmap_rel')), pg_size_pretty(pg_relation_size('kmap_pop')), pg_size_pretty(citus_table_size('kmap_pop_dist'));"
	echo '\timing on'
	for run in $(seq 0 "$RUNS"); do
		echo "\\echo RUN $run L"
		echo "SELECT 'answer', count(*), sum(release_rows), sum(population_rows), min(population_rows), sum(release_rows * population_rows) FROM $local_q;"
		echo "\\echo RUN $run D"
		echo "SELECT 'answer', count(*), sum(release_rows), sum(population_rows), min(population_rows), sum(release_rows * population_rows) FROM $dist_q;"
	done
	echo '\timing off'
	echo "SELECT 'rowcheck', count(*) FROM ((SELECT * FROM $local_q EXCEPT ALL SELECT * FROM $dist_q) UNION ALL (SELECT * FROM $dist_q EXCEPT ALL SELECT * FROM $local_q)) d;"
	echo "SELECT 'settings', current_setting('max_parallel_workers_per_gather'), (SELECT extversion FROM pg_extension WHERE extname = 'citus'), version();"
} >"$tmp/session.sql"
q -F '|' -f "$tmp/session.sql" >"$tmp/session.log"
# what the coordinator received, statement by statement
q -c "LOAD 'auto_explain'" -c "SET auto_explain.log_min_duration = 0" -c "SET auto_explain.log_analyze = on" \
	-c "SET auto_explain.log_timing = off" -c "SET auto_explain.log_verbose = on" \
	-c "SET auto_explain.log_nested_statements = on" -c "SET auto_explain.log_level = notice" \
	-c "SELECT count(*) FROM $dist_q" 2>"$tmp/explain.log" >/dev/null
load=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$tmp/session.log" "$tmp/explain.log" "$RELEASE" "$POPULATION" "$RUNS" "$load" <<'PY'
import re, statistics, sys
log, explain, release, population, runs, load = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
times = {'L': [], 'D': []}
answers = {'L': [], 'D': []}
current = None
sizes = rowcheck = settings = None
for line in open(log):
    line = line.strip()
    m = re.match(r'RUN (\d+) ([LD])$', line)
    if m:
        current = (int(m.group(1)), m.group(2))
        continue
    if line.startswith('answer|'):
        answers[current[1]].append(line.split('|')[1:])
    m = re.match(r'Time: ([\d.]+) ms', line)
    if m and current is not None and current[0] > 0:
        times[current[1]].append(float(m.group(1)))
    if line.startswith('sizes|'):
        sizes = line.split('|')[1:]
    if line.startswith('rowcheck|'):
        rowcheck = int(line.split('|')[1])
    if line.startswith('settings|'):
        settings = line.split('|')[1:]
units = {'bytes': 1, 'kB': 1024, 'MB': 1024 ** 2, 'GB': 1024 ** 3}
received = []
query = None
for line in open(explain):
    m = re.match(r'Query Text: (.*)', line)
    if m:
        query = m.group(1)
    m = re.search(r'Tuple data received from nodes: (\d+) (bytes|kB|MB|GB)', line)
    if m:
        received.append((query, int(m.group(1)) * units[m.group(2)]))
total = sum(b for _, b in received)
if len(set(map(tuple, answers['L'] + answers['D']))) != 1 or rowcheck != 0 or len(times['L']) != runs:
    sys.exit('bench/citus.sh: answers differ or runs missing: %r %r rowcheck=%r' % (answers, times, rowcheck))
ml, md = statistics.median(times['L']), statistics.median(times['D'])
ratio = md / ml
fmt = lambda ms: '{:,.0f}'.format(ms)
a = answers['L'][0]
lines = '\n'.join('| `%s` | %s |' % (q if len(q) < 110 else q[:107] + '...', '{:,}'.format(b)) for q, b in received)
met = ratio <= 2 and total < 100 * 1024 ** 2
text = f"""## k-map against a population distributed by Citus

Generated by `bash bench/citus.sh` (RELEASE={release} POPULATION={population} RUNS={runs}, as root: it starts
its own Citus cluster, a coordinator and two workers on this machine); rerun it to refresh this section.
{settings[2]}; Citus {settings[1]}; max_parallel_workers_per_gather {settings[0]}; 2 CPUs shared with other
work, load average {load} at the end.
bench/population.sql's table of {population:,} rows ({sizes[1]}) on the coordinator (L), and a copy distributed
over 32 shards by a row number ({sizes[2]} in all; D); the release is the first {release:,} rows of the same
generator ({sizes[0]}), a table on the coordinator. QID (birth_date, sex, zip5): nearly every population row
is its own class, so without the release's key filter nearly every row would travel as a class of its own.
One warm-up run each, then {runs} timed runs, interleaved L, D, L, D, ...

Goal: D within 2x L, under 100 MB received at the coordinator. Result: D/L = **{ratio:.2f}**,
received **{total / 1024 ** 2:.1f} MB** - **{'met' if met else 'not met'}**.

| | median (ms) | runs (ms) |
|---|---:|---|
| L: kmap_count, population on the coordinator | {fmt(ml)} | {', '.join(fmt(t) for t in times['L'])} |
| D: kmap_count, population distributed | {fmt(md)} | {', '.join(fmt(t) for t in times['D'])} |

Received at the coordinator during one run of D, per distributed statement kmap_count ran:

| statement | bytes |
|---|---:|
{lines}

Agreement: every run of both returned {a[0]} classes, {a[1]} release rows, population total {a[2]},
k-map value {a[3]} and the same sum of release_rows x population_rows ({a[4]}); once, row by row, the
symmetric difference (EXCEPT ALL both ways) of the two answers was {rowcheck} rows.
"""
sys.path.insert(0, 'bench')
from section import write_section
write_section('docs/benchmarks.md', 'citus', text)
print(text)
PY
