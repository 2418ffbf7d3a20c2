#!/bin/bash
# bench/hierarchy.sh - hierarchy_generalize on many distinct values.
#
# A table of $BENCH_HIERARCHY_VALUES (default 1,000,000) distinct six-digit
# codes, one row each, in random order, and a three-level hierarchy over them
# (a code -> its first four digits -> its first two -> '*': 1,010,100 edges,
# in random order).  In one psql session, after a warm-up, $BENCH_RUNS
# (default 5) timed runs of
#   SELECT min(level), max(level), count(*), sum(rows)
#   FROM hierarchy_generalize('hierarchy_bench_values', 'code',
#                             'hierarchy_bench_tree', max_values => 100)
# each checked to answer the expected level (2 beyond 10,000 values) for
# every value, and, once, untimed, the number of classes.  Prints
# the times and their median, and fails when the median is above
# $BENCH_HIERARCHY_LIMIT seconds (default 10).
#
# Uses the server in PGHOST/PGPORT/PGUSER, database $BENCH_DB (default
# "bench", created when missing; the extension is re-created there, so the
# installed build is the one timed).  The tables are kept for the next run.
#   bash bench/hierarchy.sh
#   BENCH_HIERARCHY_VALUES=40000 BENCH_RUNS=3 bash bench/hierarchy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

VALUES=${BENCH_HIERARCHY_VALUES:-1000000}
RUNS=${BENCH_RUNS:-5}
LIMIT=${BENCH_HIERARCHY_LIMIT:-10}
bench_check_rows hierarchy "$VALUES"
bench_check_rows hierarchy "$RUNS"
bench_database "${BENCH_DB:-bench}"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

signature="qidrisk bench hierarchy values=$VALUES"
if ! bench_population_current hierarchy_bench_values "$signature"; then
	echo "hierarchy: generating $VALUES values and their hierarchy"
	"${PSQL[@]}" -v values="$VALUES" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS hierarchy_bench_values, hierarchy_bench_tree;
CREATE UNLOGGED TABLE hierarchy_bench_values AS
SELECT lpad(i::text, 6, '0') AS code FROM generate_series(0, :values - 1) i ORDER BY hashint4(i);
CREATE UNLOGGED TABLE hierarchy_bench_tree AS
SELECT child, parent FROM (
	SELECT lpad(i::text, 6, '0') AS child, lpad((i / 100)::text, 4, '0') AS parent
	FROM generate_series(0, 999999) i
	UNION ALL SELECT lpad(i::text, 4, '0'), lpad((i / 100)::text, 2, '0') FROM generate_series(0, 9999) i
	UNION ALL SELECT lpad(i::text, 2, '0'), '*' FROM generate_series(0, 99) i) e
ORDER BY hashtext(child);
VACUUM ANALYZE hierarchy_bench_values;
VACUUM ANALYZE hierarchy_bench_tree;
SQL
	"${PSQL[@]}" -c "COMMENT ON TABLE hierarchy_bench_values IS '$signature'"
fi

{
	echo '\set ON_ERROR_STOP 1'
	echo '\timing on'
	for run in $(seq 0 "$RUNS"); do
		echo "\\echo RUN $run"
		echo "SELECT 'answer', min(level), max(level), count(*), sum(rows)
FROM hierarchy_generalize('hierarchy_bench_values', 'code', 'hierarchy_bench_tree', max_values => 100);"
	done
	echo '\timing off'
	echo "SELECT 'classes', count(DISTINCT generalized)
FROM hierarchy_generalize('hierarchy_bench_values', 'code', 'hierarchy_bench_tree', max_values => 100);"
	echo "SELECT 'settings', current_setting('work_mem'), current_setting('qidrisk.max_state_memory'), version();"
} | psql -X -A -F '|' -t -v ON_ERROR_STOP=1 -f - >"$LOG"

python3 - "$LOG" "$VALUES" "$RUNS" "$LIMIT" <<'PY'
import re, statistics, sys
log, values, runs, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
run = None
times, answers, settings, nclasses = [], [], None, None
for line in open(log):
    line = line.strip()
    m = re.match(r'RUN (\d+)$', line)
    if m:
        run = int(m.group(1))
    elif line.startswith('answer|'):
        answers.append(line.split('|')[1:])
    elif line.startswith('classes|'):
        nclasses = int(line.split('|')[1])
    elif line.startswith('settings|'):
        settings = line.split('|')[1:]
    else:
        m = re.match(r'Time: ([\d.]+) ms', line)
        if m and run:
            times.append(float(m.group(1)) / 1000)
# the lowest level with at most 100 classes: the codes, their first 4 digits, their first 2
classes = [values, (values + 99) // 100, (values + 9999) // 10000]
level = min(l for l in range(3) if classes[l] <= 100)
expected = [str(level), str(level), str(values), str(values)]
if (len(times) != runs or any(a != expected for a in answers) or len(answers) != runs + 1
        or nclasses != classes[level]):
    sys.exit('hierarchy bench: wrong answers or runs missing: %r %r %r' % (answers, nclasses, times))
median = statistics.median(times)
print('hierarchy_generalize, %d distinct values (work_mem %s, qidrisk.max_state_memory %s)'
      % (values, settings[0], settings[1]))
print('runs: ' + ', '.join('%.2f s' % t for t in times))
print('median: %.2f s (limit %g s)' % (median, limit))
if median > limit:
    sys.exit('hierarchy bench: the median is above the limit')
PY
