#!/bin/bash
# bench/lattice.sh - classify the full-domain generalization lattice of UCI Adult
# (8 quasi-identifiers, data/adult/hierarchies, 4,320 nodes) for k = 5 with
# qid_lattice, against one GROUP BY ... HAVING query per node.
#
# Uses the server in PGHOST/PGPORT/PGUSER (database $BENCH_DB, default "bench",
# created when missing; the extension is re-created there).  In ONE psql session:
#   A  qid_lattice(..., k => 5, evaluate => 'tagged'): the classification
#   A2 qid_lattice(..., k => 5) (default: every anonymous node evaluated too)
#   B  a plpgsql loop running, for each of the 4,320 nodes,
#        SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM adult_levels
#        GROUP BY <the node's level columns> HAVING count(*) < 5) s
#      over adult_levels, Adult with every level of every column materialized
#      beforehand (so the baseline does no joins; its build is not timed).
#      Its anonymous flags must equal A's.
#   C1, C  qid_lattice (tagged, then default) on 1e6 rows whose eight columns (and income) are drawn
#      independently from Adult's rows by a fixed hash (so every value is in the
#      hierarchies, and combinations are far more varied than Adult's), k = 5,
#      2% suppression
#   D  qid_anonymize_into on Adult: k = 5, 2% suppression, l = 2 on income
# A and A2 run $BENCH_RUNS times (default 3; the median counts), B once.
# Prints the times and the ratio B / A.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh

RUNS=${BENCH_RUNS:-3}
ROWS=${BENCH_LATTICE_ROWS:-1000000}
bench_check_rows lattice "$ROWS"
bench_database "${BENCH_DB:-bench}"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

QID="ARRAY['age', 'workclass', 'education', 'marital_status', 'occupation', 'race', 'sex', 'native_country']"
H="jsonb_build_object('age', 'adult_hierarchy_age', 'workclass', 'adult_hierarchy_workclass', 'education', 'adult_hierarchy_education', 'marital_status', 'adult_hierarchy_marital_status', 'occupation', 'adult_hierarchy_occupation', 'race', 'adult_hierarchy_race', 'sex', 'adult_hierarchy_sex', 'native_country', 'adult_hierarchy_native_country')"

{
	cat <<EOF
\\set ON_ERROR_STOP 1
\\pset pager off
SELECT pg_backend_pid() AS bench_pid \\gset
\\setenv BENCH_PID :bench_pid
SET client_min_messages = warning;
DROP TABLE IF EXISTS adult, adult_levels, adult_1e6, adult_release CASCADE;
DROP TABLE IF EXISTS adult_hierarchy_age, adult_hierarchy_workclass, adult_hierarchy_education,
	adult_hierarchy_marital_status, adult_hierarchy_occupation, adult_hierarchy_race,
	adult_hierarchy_sex, adult_hierarchy_native_country;
\\i data/load_adult.sql
\\i data/load_adult_hierarchies.sql
-- every level of every column, materialized for the baseline
CREATE TABLE adult_levels AS
SELECT a.age::text AS age_0, ha.level1 AS age_1, ha.level2 AS age_2, ha.level3 AS age_3, ha.level4 AS age_4,
	a.workclass AS workclass_0, hw.level1 AS workclass_1, hw.level2 AS workclass_2,
	a.education AS education_0, he.level1 AS education_1, he.level2 AS education_2, he.level3 AS education_3,
	a.marital_status AS marital_status_0, hm.level1 AS marital_status_1, hm.level2 AS marital_status_2,
	a.occupation AS occupation_0, ho.level1 AS occupation_1,
	a.race AS race_0, hr.level1 AS race_1,
	a.sex AS sex_0, hs.level1 AS sex_1,
	a.native_country AS native_country_0, hn.level1 AS native_country_1, hn.level2 AS native_country_2
FROM adult a
JOIN adult_hierarchy_age ha ON ha.value = a.age::text
JOIN adult_hierarchy_workclass hw ON hw.value = a.workclass
JOIN adult_hierarchy_education he ON he.value = a.education
JOIN adult_hierarchy_marital_status hm ON hm.value = a.marital_status
JOIN adult_hierarchy_occupation ho ON ho.value = a.occupation
JOIN adult_hierarchy_race hr ON hr.value = a.race
JOIN adult_hierarchy_sex hs ON hs.value = a.sex
JOIN adult_hierarchy_native_country hn ON hn.value = a.native_country;
\\set rows $ROWS
\\i bench/adult_large.sql
VACUUM ANALYZE adult, adult_levels, adult_1e6;
SET jit = off;
CREATE TEMP TABLE loop_result (levels integer[], suppressed bigint);
CREATE FUNCTION pg_temp.loop(k integer) RETURNS void
LANGUAGE plpgsql AS \$\$
DECLARE
	cols text[] := ARRAY['age', 'workclass', 'education', 'marital_status', 'occupation', 'race', 'sex', 'native_country'];
	node integer[];
	s bigint;
BEGIN
	FOR node IN SELECT ARRAY[a, b, c, d, e, f, g, h]
				FROM generate_series(0, 4) a, generate_series(0, 2) b, generate_series(0, 3) c,
					 generate_series(0, 2) d, generate_series(0, 1) e, generate_series(0, 1) f,
					 generate_series(0, 1) g, generate_series(0, 2) h LOOP
		EXECUTE format('SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM adult_levels GROUP BY %s HAVING count(*) < %s) s',
					   (SELECT string_agg(format('%I', cols[i] || '_' || node[i]), ', ') FROM generate_series(1, 8) i), k)
		INTO s;
		INSERT INTO loop_result VALUES (node, s);
	END LOOP;
END
\$\$;
CREATE TEMP TABLE lattice_result AS
SELECT levels, anonymous FROM qid_lattice('adult', $QID, $H, 5, evaluate => 'tagged');
EOF
	for _ in $(seq "$RUNS"); do
		cat <<EOF
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK A
\\timing on
SELECT count(*) FILTER (WHERE anonymous) AS anonymous, count(*) FILTER (WHERE minimal) AS minimal, count(*) FILTER (WHERE evaluated) AS evaluated, count(*) AS nodes FROM qid_lattice('adult', $QID, $H, 5, evaluate => 'tagged');
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK A2
\\timing on
SELECT count(*) FILTER (WHERE anonymous) AS anonymous, count(*) FILTER (WHERE evaluated) AS evaluated FROM qid_lattice('adult', $QID, $H, 5);
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
EOF
	done
	cat <<EOF
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK B
\\timing on
SELECT pg_temp.loop(5);
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
SELECT count(*) AS disagreements FROM loop_result r JOIN lattice_result l ON l.levels = r.levels
WHERE l.anonymous <> (r.suppressed = 0);
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK C1
\\timing on
SELECT count(*) FILTER (WHERE anonymous) AS anonymous, count(*) FILTER (WHERE evaluated) AS evaluated, max(rows) AS rows FROM qid_lattice('adult_1e6', $QID, $H, 5, 0.02, evaluate => 'tagged');
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK C
\\timing on
SELECT count(*) FILTER (WHERE anonymous) AS anonymous, count(*) FILTER (WHERE evaluated) AS evaluated, max(rows) AS rows FROM qid_lattice('adult_1e6', $QID, $H, 5, 0.02);
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
EOF
	if psql -X -Atc "SELECT 1 FROM pg_proc WHERE proname = 'qid_anonymize_into'" | grep -q 1; then
		cat <<EOF
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
\\echo MARK D
\\timing on
SELECT node, rows_suppressed, k_anonymity, l_diversity FROM qid_anonymize_into('adult', $QID, $H, 'adult_release', 5, 0.02, 'income', 2);
\\timing off
\\! awk '{ print "CPU", (\$14 + \$15) / 100 }' /proc/\$BENCH_PID/stat
DROP TABLE adult_release;
EOF
	fi
} | psql -X 2>&1 | tee "$LOG"

python3 - "$LOG" <<'EOF'
import re, statistics, sys
marks = {}
cpu = {}
mark = None
last_cpu = None
open_mark = None
for line in open(sys.argv[1]):
	m = re.match(r'CPU ([0-9.]+)', line)
	if m:
		value = float(m.group(1))
		if open_mark is not None:
			cpu.setdefault(open_mark, []).append(value - last_cpu)
			open_mark = None
		last_cpu = value
	m = re.match(r'MARK (\w+)', line)
	if m:
		mark = m.group(1)
	m = re.match(r'Time: ([0-9.]+) ms', line)
	if m and mark:
		marks.setdefault(mark, []).append(float(m.group(1)))
		open_mark = mark
		mark = None
for k in sorted(cpu):
	print(f"{k}: backend CPU seconds {', '.join(f'{v:.2f}' for v in cpu[k])}")
a = statistics.median(marks['A'])
a2 = statistics.median(marks['A2'])
b = marks['B'][0]
print(f"A  qid_lattice tagged (median of {len(marks['A'])}): {a:.1f} ms")
print(f"A2 qid_lattice default (median of {len(marks['A2'])}): {a2:.1f} ms")
print(f"B  4,320 GROUP BY queries: {b:.1f} ms")
print(f"ratio B/A = {b / a:.0f}x, B/A2 = {b / a2:.0f}x")
if 'C1' in marks:
	print(f"C1 qid_lattice tagged on the large table: {marks['C1'][0]:.1f} ms")
if 'C' in marks:
	print(f"C  qid_lattice default on the large table: {marks['C'][0]:.1f} ms")
if 'D' in marks:
	print(f"D  qid_anonymize_into on Adult: {marks['D'][0]:.1f} ms")
EOF
