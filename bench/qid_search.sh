#!/bin/bash
# bench/qid_search.sh - time qid_search against one GROUP BY per column subset.
#
# Uses the server in PGHOST/PGPORT/PGUSER (database $BENCH_DB, default "bench",
# created when missing) with qidrisk installed.  In ONE psql session:
#   1. UCI Adult (data/load_adult.sql), its ten public columns, all 1023 subsets:
#      A  SELECT ... FROM qid_search('bench_qid_adult', <ten columns>)
#      B  a plpgsql DO block running the 1023 queries
#         SELECT count(*) FROM (SELECT 1 FROM t GROUP BY <subset> HAVING count(*) = 1) s
#      interleaved (A B A B ...), $BENCH_RUNS runs each (default 3).  After the
#      timed runs, every subset's singletons from A must equal B's.
#   2. a synthetic 1e6-row table of ten columns (a pure function of the row
#      number through hashint8extended: fixed, identical on every machine):
#      C  qid_search over all 1023 subsets, $BENCH_RUNS runs
#      D  one GROUP BY ... HAVING count(*) = 1 for ten subsets (one of each
#         size): their median per query times 1023 estimates the loop, and
#         their figures must equal C's.
# Wall times come from \timing; the backend's CPU seconds (from /proc, the
# server must run on this machine) are reported too, because other work on
# shared cores inflates wall times.  Writes its section into docs/benchmarks.md
# between <!-- bench:qid_search --> and <!-- /bench:qid_search -->.
set -euo pipefail
cd "$(dirname "$0")/.."

DB=${BENCH_DB:-bench}
RUNS=${BENCH_RUNS:-3}
DOC=${BENCH_DOC:-docs/benchmarks.md}
ROWS=${BENCH_QID_ROWS:-1000000}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

if ! psql -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
	createdb "$DB"
fi
psql -d "$DB" -qc 'CREATE EXTENSION IF NOT EXISTS qidrisk'

ADULT_COLS="'age', 'workclass', 'education', 'marital_status', 'occupation', 'relationship', 'race', 'sex', 'hours_per_week', 'native_country'"
BIG_COLS="'birth_year', 'sex', 'zip', 'education', 'occupation', 'race', 'hours_per_week', 'country', 'marital_status', 'children'"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# psql lines timing one statement, with the backend's CPU seconds before and after
timed() {
	cat <<EOF
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK $1
\\timing on
$2
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
EOF
}

{
	cat <<EOF
\\set ON_ERROR_STOP 1
\\pset pager off
SET client_min_messages = warning;
-- Adult, loaded under its own name
DROP TABLE IF EXISTS adult, bench_qid_adult;
\\i data/load_adult.sql
ALTER TABLE adult RENAME TO bench_qid_adult;
-- the synthetic table: ten columns with skewed, realistic distributions
CREATE OR REPLACE FUNCTION pg_temp.u(i bigint, k bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE AS \$\$ SELECT (hashint8extended(i, k) & 9007199254740991)::double precision / 9007199254740992 \$\$;
DROP TABLE IF EXISTS bench_qid_1e6;
CREATE UNLOGGED TABLE bench_qid_1e6 AS
SELECT 1925 + floor(pg_temp.u(i, 1) * 90)::int AS birth_year,
	CASE WHEN pg_temp.u(i, 2) < 0.505 THEN 'F' ELSE 'M' END AS sex,
	((floor(power(1 + pg_temp.u(i, 3) * (power(30001, 0.2) - 1), 5))::bigint * 7919) % 90000 + 10000)::text AS zip,
	'edu' || floor(16 * power(pg_temp.u(i, 4), 2))::int AS education,
	'occ' || floor(15 * power(pg_temp.u(i, 5), 1.5))::int AS occupation,
	'race' || floor(5 * power(pg_temp.u(i, 6), 6))::int AS race,
	CASE WHEN pg_temp.u(i, 7) < 0.47 THEN 40 ELSE 1 + floor(pg_temp.u(i, 8) * 99)::int END AS hours_per_week,
	'c' || floor(40 * power(pg_temp.u(i, 9), 8))::int AS country,
	'm' || floor(7 * power(pg_temp.u(i, 10), 2))::int AS marital_status,
	floor(6 * power(pg_temp.u(i, 11), 3))::int AS children
FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE bench_qid_adult, bench_qid_1e6;
-- the loop of the baseline: one GROUP BY per subset, in one DO block
CREATE TEMP TABLE loop_result (cols text[], singletons bigint);
CREATE OR REPLACE FUNCTION pg_temp.loop(rel text, cols text[], subsets integer[]) RETURNS void
LANGUAGE plpgsql AS \$\$
DECLARE
	s integer;
	sub text[];
	n bigint;
BEGIN
	TRUNCATE loop_result;
	FOREACH s IN ARRAY subsets LOOP
		sub := ARRAY(SELECT cols[i] FROM generate_series(1, cardinality(cols)) i WHERE s & (1 << (i - 1)) <> 0);
		EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %I GROUP BY %s HAVING count(*) = 1) s', rel,
					   (SELECT string_agg(quote_ident(c), ', ') FROM unnest(sub) c)) INTO n;
		INSERT INTO loop_result VALUES (sub, n);
	END LOOP;
END
\$\$;
CREATE TEMP TABLE big_loop (cols text[], singletons bigint);
CREATE TEMP TABLE search_result AS SELECT columns AS cols, singletons FROM qid_search('bench_qid_adult', ARRAY[$ADULT_COLS]) LIMIT 0;
SELECT pg_backend_pid() AS pid \\gset
\\setenv BENCH_PID :pid
-- warm-up
SELECT count(*) FROM qid_search('bench_qid_adult', ARRAY[$ADULT_COLS]);
EOF
	for run in $(seq 1 "$RUNS"); do
		timed "A $run" "SELECT count(*) FROM qid_search('bench_qid_adult', ARRAY[$ADULT_COLS]);"
		timed "B $run" "DO \$\$ BEGIN PERFORM pg_temp.loop('bench_qid_adult', ARRAY[$ADULT_COLS], ARRAY(SELECT generate_series(1, 1023))); END \$\$;"
	done
	cat <<EOF
\\echo MARK END
TRUNCATE search_result;
INSERT INTO search_result SELECT columns, singletons FROM qid_search('bench_qid_adult', ARRAY[$ADULT_COLS]);
SELECT 'CHECK adult ' || count(*) || ' subsets, ' || count(*) FILTER (WHERE s.singletons IS DISTINCT FROM l.singletons) || ' differ'
FROM search_result s FULL JOIN loop_result l USING (cols);
SELECT 'FIG adult_all_ten ' || singletons FROM search_result WHERE cardinality(cols) = 10;
SELECT 'FIG adult_age_hours ' || singletons FROM search_result WHERE cols = ARRAY['age', 'hours_per_week'];
EOF
	for run in $(seq 1 "$RUNS"); do
		timed "C $run" "SELECT count(*) FROM qid_search('bench_qid_1e6', ARRAY[$BIG_COLS]);"
	done
	# ten subsets, one of each size, each timed on its own
	for s in 1 6 112 15 31 1008 127 1020 511 1023; do
		cat <<EOF
\\echo MARK D $s
\\timing on
DO \$\$ BEGIN PERFORM pg_temp.loop('bench_qid_1e6', ARRAY[$BIG_COLS], ARRAY[$s]); END \$\$;
\\timing off
INSERT INTO big_loop SELECT * FROM loop_result;
EOF
	done
	cat <<EOF
\\echo MARK END
SELECT 'CHECK big ' || count(*) || ' subsets, ' || count(*) FILTER (WHERE s.singletons IS DISTINCT FROM b.singletons) || ' differ'
FROM big_loop b LEFT JOIN qid_search('bench_qid_1e6', ARRAY[$BIG_COLS]) s ON s.columns = b.cols;
SELECT 'FIG big_best ' || array_to_string(columns, ',') || ' ' || singletons FROM qid_search('bench_qid_1e6', ARRAY[$BIG_COLS], summary => true) WHERE best;
DROP TABLE bench_qid_1e6, bench_qid_adult;
EOF
} | psql -d "$DB" -X -At 2>&1 | tee "$LOG" | grep -E '^(MARK|CHECK|FIG)' || true

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$LOG" "$DOC" "$RUNS" "$ROWS" "$load_start" "$load_end" <<'PY'
import re, statistics, subprocess, sys, datetime
log, doc, runs, rows, load_start, load_end = sys.argv[1:7]
lines = open(log).read().splitlines()
wall = {}
cpu = {}
checks = []
figs = {}
mark = None
pending = None
cpu_before = None
for line in lines:
    m = re.match(r'MARK (\w+)(?: (\d+))?', line)
    if m:
        mark = m.group(1) if m.group(1) != 'END' else None
        continue
    m = re.match(r'CPU ([\d.]+)', line)
    if m:
        # the CPU read after a timed statement closes it
        value = float(m.group(1))
        if pending and cpu_before is not None:
            cpu.setdefault(pending, []).append(value - cpu_before)
        pending = None
        cpu_before = value
        continue
    m = re.match(r'Time: ([\d.]+) ms', line)
    if m and mark:
        wall.setdefault(mark, []).append(float(m.group(1)) / 1000)
        pending = mark
        continue
    if line.startswith('CHECK'):
        checks.append(line[6:])
    if line.startswith('FIG'):
        k, v = line[4:].split(' ', 1)
        figs[k] = v
    if line.startswith('ERROR') or line.startswith('psql:'):
        sys.exit('qid_search.sh: ' + line)
for c in checks:
    if not c.endswith(' 0 differ'):
        sys.exit('qid_search.sh: results differ: ' + c)
med = {k: statistics.median(v) for k, v in wall.items()}
cmed = {k: statistics.median(v) for k, v in cpu.items() if v}
loop_estimate = statistics.median(wall['D']) * 1023
ratio = med['B'] / med['A']
cpu_ratio = cmed['B'] / cmed['A'] if 'A' in cmed and 'B' in cmed else float('nan')
fmt = lambda xs: ', '.join('%.3f' % x for x in xs)
commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
version = subprocess.run(['psql', '-d', 'postgres', '-Atc', 'SELECT version()'], capture_output=True, text=True).stdout.strip()
now = datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')
section = f"""
## Quasi-identifier search (`qid_search`)

Command: `bash bench/qid_search.sh` (from the repository root; server in PGHOST/PGPORT/PGUSER).
{version}; qidrisk at commit {commit}; {now}. Load average (1, 5, 15 min) at the start: {load_start};
at the end: {load_end} (two cores shared with other work: wall times are inflated, the backend's
CPU seconds, read from `/proc`, are not).

**UCI Adult, its ten public columns, all 1023 subsets**, {runs} runs each, interleaved, one psql session:

| variant | wall median (s) | wall runs (s) | backend CPU median (s) |
|---|---|---|---|
| A `qid_search('adult', <ten columns>)` | {med['A']:.3f} | {fmt(wall['A'])} | {cmed.get('A', float('nan')):.3f} |
| B DO block: 1023 × `SELECT count(*) FROM (SELECT 1 FROM adult GROUP BY <subset> HAVING count(*) = 1) s` | {med['B']:.3f} | {fmt(wall['B'])} | {cmed.get('B', float('nan')):.3f} |

Ratio B / A: **{ratio:.0f}×** on wall medians ({cpu_ratio:.0f}× on CPU medians); goal ≥ 50×.
Check: {checks[0]} (every subset's singletons equal); {{age, hours_per_week}} = {figs.get('adult_age_hours')},
all ten = {figs.get('adult_all_ten')} (Lodha & Thomas 2008, Fig. 3: 986 and 24,802).

**Synthetic {int(rows):,} rows × 10 columns, all 1023 subsets** (birth year, sex, a power-law ZIP of 30,000
codes, education, occupation, race, hours per week, country, marital status, children; skewed marginals,
a pure function of the row number):

| variant | wall median (s) | wall runs (s) | backend CPU median (s) |
|---|---|---|---|
| C `qid_search(<ten columns>)` | {med['C']:.3f} | {fmt(wall['C'])} | {cmed.get('C', float('nan')):.3f} |
| D one `GROUP BY ... HAVING count(*) = 1` per subset, ten subsets (one per size) | {statistics.median(wall['D']):.3f} per query | {fmt(wall['D'])} | |

Goal: C under 30 s. The loop of 1023 GROUP BY queries is estimated at 1023 × the median of D =
{loop_estimate:.0f} s, {loop_estimate / med['C']:.0f}× C. Check: {checks[1] if len(checks) > 1 else 'missing'} (D's figures equal C's);
best QID: {figs.get('big_best')}.
"""
sys.path.insert(0, 'bench')
from section import write_section
write_section(doc, 'qid_search', section)
print(section)
PY
