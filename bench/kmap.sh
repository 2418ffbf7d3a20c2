#!/bin/bash
# bench/kmap.sh: kmap_count against its plain-SQL equivalent.
#
# A 1e6-row release against a 1e7-row population on a 3-column QID
# (birth year, sex, ZIP): kmap_count versus the LEFT JOIN of the release's
# GROUP BY with the population's GROUP BY, in one psql session with \timing,
# RUNS timed runs of each interleaved after a warm-up; medians, ratio, and a
# check that both give the same answer on every run (and once row by row).
# Writes its section into docs/benchmarks.md between <!-- bench:kmap --> and
# <!-- /bench:kmap -->.  Uses the server in PGHOST/PGPORT/PGUSER, database
# PGDATABASE (default postgres); creates and drops its own tables.
#
#   bash bench/kmap.sh                      # 1e6 x 1e7, 3 runs
#   RELEASE=100000 POPULATION=1000000 RUNS=5 bash bench/kmap.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RELEASE=${RELEASE:-1000000}
POPULATION=${POPULATION:-10000000}
RUNS=${RUNS:-3}
DB=${PGDATABASE:-postgres}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<SQL
CREATE EXTENSION IF NOT EXISTS qidrisk;
-- u(i, k) in [0, 1): a pure function of the row number and a seed per column
CREATE OR REPLACE FUNCTION pg_temp.u(i bigint, k bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS \$\$ SELECT (hashint8extended(i, k) & 9007199254740991)::double precision / 9007199254740992 \$\$;
DROP TABLE IF EXISTS kmap_bench_population, kmap_bench_release;
-- birth year uniform over 90 years, sex 50.5/49.5, ZIP rank 1..30000 by a power
-- law p(r) ~ r^-0.8 (rank 1 ~2% of rows), scattered onto five-digit codes
CREATE UNLOGGED TABLE kmap_bench_population AS
SELECT 1925 + floor(pg_temp.u(i, 1) * 90)::integer AS birth_year,
	   CASE WHEN pg_temp.u(i, 2) < 0.505 THEN 'F' ELSE 'M' END AS sex,
	   (10000 + (floor((1 + pg_temp.u(i, 3) * (30001 ^ 0.2 - 1)) ^ 5)::bigint * 7919) % 90000)::text AS zip
FROM generate_series(1, $POPULATION) i;
-- the release: other draws of the same law (row numbers past the population's),
-- so most of its classes occur in the population and some do not
CREATE UNLOGGED TABLE kmap_bench_release AS
SELECT 1925 + floor(pg_temp.u(i, 1) * 90)::integer AS birth_year,
	   CASE WHEN pg_temp.u(i, 2) < 0.505 THEN 'F' ELSE 'M' END AS sex,
	   (10000 + (floor((1 + pg_temp.u(i, 3) * (30001 ^ 0.2 - 1)) ^ 5)::bigint * 7919) % 90000)::text AS zip
FROM generate_series(1000000000::bigint + 1, 1000000000::bigint + $RELEASE) i;
VACUUM ANALYZE kmap_bench_population;
VACUUM ANALYZE kmap_bench_release;
SQL

{
	echo '\set ON_ERROR_STOP 1'
	echo "SELECT 'sizes', pg_size_pretty(pg_relation_size('kmap_bench_release')), pg_size_pretty(pg_relation_size('kmap_bench_population'));"
	echo '\timing on'
	for run in $(seq 0 "$RUNS"); do
		echo "\\echo RUN $run A"
		echo "SELECT 'answer', count(*), sum(release_rows), sum(population_rows), min(population_rows), sum(release_rows * population_rows)
FROM kmap_count('kmap_bench_release', 'kmap_bench_population', ARRAY['birth_year', 'sex', 'zip']);"
		echo "\\echo RUN $run B"
		echo "SELECT 'answer', count(*), sum(r.n), sum(coalesce(p.n, 0))::float8, min(coalesce(p.n, 0))::float8, sum(r.n * coalesce(p.n, 0))::float8
FROM (SELECT birth_year, sex, zip, count(*) AS n FROM kmap_bench_release GROUP BY 1, 2, 3) r
LEFT JOIN (SELECT birth_year, sex, zip, count(*) AS n FROM kmap_bench_population GROUP BY 1, 2, 3) p
USING (birth_year, sex, zip);"
	done
	echo '\timing off'
	# once, row by row: the symmetric difference of the two answers
	echo "SELECT 'rowcheck', count(*) FROM (
  (SELECT class, release_rows, population_rows FROM kmap_count('kmap_bench_release', 'kmap_bench_population', ARRAY['birth_year', 'sex', 'zip'])
   EXCEPT ALL
   SELECT jsonb_build_object('birth_year', r.birth_year, 'sex', r.sex, 'zip', r.zip), r.n, coalesce(p.n, 0)::float8
   FROM (SELECT birth_year, sex, zip, count(*) AS n FROM kmap_bench_release GROUP BY 1, 2, 3) r
   LEFT JOIN (SELECT birth_year, sex, zip, count(*) AS n FROM kmap_bench_population GROUP BY 1, 2, 3) p USING (birth_year, sex, zip))
  UNION ALL
  (SELECT jsonb_build_object('birth_year', r.birth_year, 'sex', r.sex, 'zip', r.zip), r.n, coalesce(p.n, 0)::float8
   FROM (SELECT birth_year, sex, zip, count(*) AS n FROM kmap_bench_release GROUP BY 1, 2, 3) r
   LEFT JOIN (SELECT birth_year, sex, zip, count(*) AS n FROM kmap_bench_population GROUP BY 1, 2, 3) p USING (birth_year, sex, zip)
   EXCEPT ALL
   SELECT class, release_rows, population_rows FROM kmap_count('kmap_bench_release', 'kmap_bench_population', ARRAY['birth_year', 'sex', 'zip']))) d;"
	echo "SELECT 'settings', current_setting('work_mem'), current_setting('max_parallel_workers_per_gather'), current_setting('qidrisk.max_state_memory');"
} > "$OUT/session.sql"

psql -X -A -F '|' -t -d "$DB" -f "$OUT/session.sql" > "$OUT/session.log"
psql -X -q -d "$DB" -c 'DROP TABLE kmap_bench_population, kmap_bench_release'

python3 - "$OUT/session.log" "$RELEASE" "$POPULATION" "$RUNS" <<'PY'
import re, statistics, sys
log, release, population, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
times = {'A': [], 'B': []}
answers = {'A': [], 'B': []}
current = None
sizes = rowcheck = settings = None
for line in open(log):
    line = line.strip()
    m = re.match(r'RUN (\d+) ([AB])$', line)
    if m:
        current = (int(m.group(1)), m.group(2))
        continue
    if line.startswith('answer|'):
        answers[current[1]].append((current[0], line.split('|')[1:]))
    m = re.match(r'Time: ([\d.]+) ms', line)
    if m and current is not None and current[0] > 0:
        times[current[1]].append(float(m.group(1)))
    if line.startswith('sizes|'):
        sizes = line.split('|')[1:]
    if line.startswith('rowcheck|'):
        rowcheck = int(line.split('|')[1])
    if line.startswith('settings|'):
        settings = line.split('|')[1:]
def norm(a):
    return [str(round(float(x), 6)) for x in a]
agree = all(norm(a[1]) == norm(b[1]) for a, b in zip(answers['A'], answers['B']))
if not agree or rowcheck != 0 or len(times['A']) != runs or len(times['B']) != runs:
    sys.exit('kmap bench: answers differ or runs missing: %r %r rowcheck=%r' % (answers, times, rowcheck))
ma, mb = statistics.median(times['A']), statistics.median(times['B'])
ratio = ma / mb
fmt = lambda ms: '{:,.0f}'.format(ms)
a = answers['A'][0][1]
text = f"""## k-map: `kmap_count` against a population

Generated by `bash bench/kmap.sh` (RELEASE={release} POPULATION={population} RUNS={runs}); rerun it to refresh this section.
A {release:,}-row release ({sizes[0]}) against a {population:,}-row population ({sizes[1]}) on a 3-column QID
(birth year uniform over 90 years, sex, ZIP drawn from a power law over 30,000 codes; the release's rows are
other draws of the same law, so some of its classes are absent from the population). A: `kmap_count`;
B: the plain-SQL equivalent, the release's `GROUP BY` `LEFT JOIN`ed with the population's `GROUP BY`.
Server defaults (work_mem {settings[0]}, max_parallel_workers_per_gather {settings[1]},
qidrisk.max_state_memory {settings[2]}); one warm-up run each, then {runs} timed runs, interleaved A, B, A, B, ...
The planner runs both in parallel (A's population scan is the parallel aggregate `qidrisk_kmap_probe`).
On a shared machine absolute times are noise; the ratio of the interleaved runs is the figure to read.

Goal: A/B <= 0.5. Result: A/B = **{ratio:.2f}** - **{'met' if ratio <= 0.5 else 'not met'}**.

| | median (ms) | runs (ms) |
|---|---:|---|
| A: kmap_count | {fmt(ma)} | {', '.join(fmt(t) for t in times['A'])} |
| B: LEFT JOIN of GROUP BYs | {fmt(mb)} | {', '.join(fmt(t) for t in times['B'])} |

Agreement: on every run both returned {a[0]} classes, {a[1]} release rows, population total {a[2]},
k-map value {a[3]}, and the same sum of release_rows x population_rows ({a[4]}); once, row by row,
the symmetric difference (EXCEPT ALL both ways) of the two answers was {rowcheck} rows.
"""
sys.path.insert(0, 'bench')
from section import write_section
write_section('docs/benchmarks.md', 'kmap', text)
print(text)
PY
