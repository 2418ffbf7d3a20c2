#!/bin/bash
# bench/run.sh [ROWS...] - time qidrisk's aggregates against plain SQL.
#
# For each size (default 100000 1000000 10000000) build a deterministic
# synthetic population table, then in ONE psql session time, with \timing and
# the server's default settings, one warm-up run (EXPLAIN ANALYZE, which also
# records the plan, its timings and JIT use) and then several runs of each variant, interleaved:
#   A  singleton_count(birth_date, sex, zip5)
#   B  the same with GROUP BY ... HAVING count(*) = 1
#   C  a bare scan hashing the same three columns
#   D  class_profile(birth_date, sex, zip5)
#   E  the same numbers in plain SQL
#   F  kl_uniform(birth_date)
#   G  the same number in plain SQL
# Every run's result of A must equal B's, D's must equal E's, and F's must
# agree with G's to a relative 1e-9, or the script fails.  After the sizes, one
# more session times the exact birthday aggregate, which does not depend on the
# population:
#   H  birthday_uniqueness_exact(1000, v, w) over bench_census_100000
#      (100,000 values weighted 1 + i % 7, rebuilt by every run of this script)
# with a warm-up and several runs; every run must return the same value, and it
# must agree with an independent computation in bench/report.py.  Then a
# session on the largest population table times 1-D generalization of
# birth_date with k = 100, interleaved:
#   Q  quantile_cuts(birth_date, 100)
#   R  plain SQL: GROUP BY birth_date, running sum(count(*)) OVER (ORDER BY),
#      a cut where the running sum crosses a multiple of k
#   S  sum(quantile_bucket(birth_date, cuts)) with the cuts read from a table
#   T  a bare scan of the column, max(birth_date)
#   U  quantile_cuts_approx(birth_date, 100)
# Q must return the same cuts every run, every bucket of them must hold at
# least k rows, and S must equal the sum that PostgreSQL's width_bucket gives
# (both checked once, outside the timed runs).  Then
# bench/report.py prints medians and ratios and writes docs/benchmarks.md.
#
# Uses the server named by PGHOST/PGPORT/PGUSER when PGHOST is set (database
# $BENCH_DB, default "bench", created when missing); otherwise builds and
# installs the extension (test/setup.sh) and reruns itself inside a throwaway
# cluster (pg_virtualenv).
#
# Environment:
#   BENCH_DB            database to use (default bench)
#   BENCH_RUNS          timed runs per variant (default 5 up to 1e6 rows, 3 above)
#   BENCH_BIRTHDAY_RUNS timed runs of H (default 7)
#   BENCH_STATE_MEMORY  if set, SET qidrisk.max_state_memory to it (e.g. 2GB)
#   BENCH_MEMORY        0 skips the peak-memory pass (default 1)
#   BENCH_REBUILD       1 rebuilds population tables even if an identical one exists
#   BENCH_DOC           where to write the report (default docs/benchmarks.md)
#   BENCH_SKIP_SETUP    1: do not run test/setup.sh, time the installed build
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
	set -- 100000 1000000 10000000
fi
for rows in "$@"; do
	if ! [[ "$rows" =~ ^[1-9][0-9]*$ ]]; then
		echo "run.sh: not a row count: $rows" >&2
		exit 2
	fi
done

# The command as the user typed it, for the report
export BENCH_COMMAND="${BENCH_COMMAND:-bash bench/run.sh $*}"

if [ -z "${PGHOST:-}" ]; then
	if [ "${BENCH_SKIP_SETUP:-0}" != 1 ]; then
		bash test/setup.sh
	fi
	# the PostgreSQL test/setup.sh chose (PG_VERSION=NN for another)
	. test/pgversion.sh
	resolve_pg_version
	export BENCH_CLUSTER="throwaway cluster (pg_virtualenv -v $PG_VERSION, default postgresql.conf, fsync=off)"
	exec env NONROOT=1 pg_virtualenv -v "$PG_VERSION" bash bench/run.sh "$@"
fi
export BENCH_CLUSTER="${BENCH_CLUSTER:-existing server (PGHOST=$PGHOST PGPORT=${PGPORT:-default})}"

DB="${BENCH_DB:-bench}"
OUT="bench/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
echo "bench: results in $OUT"

. bench/common.sh

# --- database and extension ------------------------------------------------
if [ "$("${PSQL[@]}" -At -d "${PGDATABASE:-postgres}" \
	-c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
	"${PSQL[@]}" -d "${PGDATABASE:-postgres}" -c "CREATE DATABASE \"$DB\""
fi
export PGDATABASE="$DB"
"${PSQL[@]}" -c "SET client_min_messages = warning" \
	-c "CREATE EXTENSION IF NOT EXISTS qidrisk"

# --- machine -------------------------------------------------------------------
{
	echo "nproc=$(nproc)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "memory=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "kernel=$(uname -sr)"
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cluster=$BENCH_CLUSTER"
	echo "command=$BENCH_COMMAND"
	echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src sql 2>/dev/null || echo ' (src/sql modified)')"
	lib="$("${PG_CONFIG:-pg_config}" --pkglibdir 2>/dev/null)/qidrisk.so"
	if [ -f "$lib" ]; then
		echo "library=$lib, installed $(date -u -r "$lib" '+%Y-%m-%d %H:%M:%S UTC'), md5 $(md5sum "$lib" | cut -c1-12)"
	fi
	echo "state_memory=${BENCH_STATE_MEMORY:-}"
	echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

# --- the variants ----------------------------------------------------------------
# :tab is the population table (a psql variable).  Query texts also go to
# $OUT/queries/ for the report.
declare -A QUERY
VARIANTS=(A B C D E F G)
QUERY[A]="SELECT singleton_count(birth_date, sex, zip5) FROM :tab"
QUERY[B]="SELECT count(*) FROM (SELECT 1 FROM :tab GROUP BY birth_date, sex, zip5 HAVING count(*) = 1) s"
QUERY[C]="SELECT sum(hashint4(birth_date - date '1900-01-01')::bigint + hashtext(sex) + hashtext(zip5)) FROM :tab"
QUERY[D]="SELECT class_profile(birth_date, sex, zip5) FROM :tab"
# Plain SQL for class_profile: one grouping pass to the class sizes, a second
# (small) one to the class-size histogram, and every figure from the histogram.
# The ROW(...)::qid_profile cast only makes the output text comparable to D's.
QUERY[E]="WITH c AS (SELECT count(*) AS n FROM :tab GROUP BY birth_date, sex, zip5),
h AS (SELECT n, count(*) AS k FROM c GROUP BY n)
SELECT ROW(sum(n * k)::bigint, sum(k)::bigint,
           coalesce(sum(k) FILTER (WHERE n = 1), 0)::bigint,
           coalesce(sum(k) FILTER (WHERE n = 1), 0)::double precision / sum(n * k),
           min(n), max(n), array_agg(n ORDER BY n), array_agg(k ORDER BY n))::qid_profile
FROM h"
# Heterogeneity: KL distance of birth_date's distribution to uniform over the
# observed dates, and the same sum over the date counts in plain SQL.
QUERY[F]="SELECT kl_uniform(birth_date) FROM :tab"
QUERY[G]="SELECT sum(p * ln(p * m)) FROM (SELECT count(*)::float8 / sum(count(*)) OVER () AS p, count(*) OVER () AS m FROM :tab GROUP BY birth_date) s"
# Birthday: exact probability that 1000 draws from a weighted census of
# 100,000 values are all distinct (its own session, after the sizes).
CENSUS_ROWS=100000
BIRTHDAY_K=1000
CENSUS_TAB="bench_census_$CENSUS_ROWS"
QUERY[H]="SELECT birthday_uniqueness_exact($BIRTHDAY_K, v, w) FROM $CENSUS_TAB"
CENSUS_SQL="CREATE TABLE $CENSUS_TAB (v integer, w float8);
INSERT INTO $CENSUS_TAB SELECT i, (1 + (i % 7))::float8 FROM generate_series(1, $CENSUS_ROWS) i;"
mkdir -p "$OUT/queries"
printf '%s\n' "$CENSUS_SQL" >"$OUT/queries/census.sql"
for v in "${VARIANTS[@]}" H; do
	printf '%s;\n' "${QUERY[$v]}" >"$OUT/queries/$v.sql"
done

GENERATOR_SIGNATURE=$(md5sum bench/population.sql | cut -c1-32)

for rows in "$@"; do
	tab="bench_pop_$rows"
	log="$OUT/session-$rows.log"
	runs="${BENCH_RUNS:-}"
	if [ -z "$runs" ]; then
		runs=$([ "$rows" -le 1000000 ] && echo 5 || echo 3)
	fi

	# --- population table (reused when built by this very generator) ---
	signature="qidrisk bench population rows=$rows generator=$GENERATOR_SIGNATURE"
	if [ "${BENCH_REBUILD:-0}" = 1 ] || ! bench_population_current "$tab" "$signature"; then
		echo "bench: generating $tab"
		start=$(date +%s.%N)
		"${PSQL[@]}" -v tab="$tab" -v rows="$rows" \
			-c "SET client_min_messages = warning" -f bench/population.sql
		"${PSQL[@]}" -c "COMMENT ON TABLE $tab IS '$signature'"
		end=$(date +%s.%N)
		gen_seconds=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
	else
		echo "bench: reusing $tab"
		gen_seconds=reused
	fi

	# --- one session: settings, warm-up with plans, interleaved timed runs ---
	echo "bench: timing $rows rows, $runs runs per variant"
	{
		echo "\\set tab $tab"
		echo "\\pset pager off"
		echo "\\pset format unaligned"
		echo "\\pset tuples_only on"
		if [ -n "${BENCH_STATE_MEMORY:-}" ]; then
			echo "SET qidrisk.max_state_memory = '$BENCH_STATE_MEMORY';"
		fi
		echo "\\echo @@meta rows $rows"
		echo "\\echo @@meta runs $runs"
		echo "\\echo @@meta generate_seconds $gen_seconds"
		echo "SELECT '@@meta version ' || version();"
		echo "SELECT '@@meta table_size ' || pg_size_pretty(pg_table_size('$tab'));"
		echo "SELECT '@@meta count ' || count(*) FROM $tab;"
		for v in "${VARIANTS[@]}"; do
			echo "\\echo @@explain $v"
			echo "EXPLAIN (ANALYZE) ${QUERY[$v]};"
		done
		# after the warm-up: qidrisk's setting exists once its library is loaded
		echo "SELECT '@@setting ' || name || ' ' || current_setting(name) FROM unnest(ARRAY["
		echo "  'work_mem', 'hash_mem_multiplier', 'max_parallel_workers_per_gather',"
		echo "  'max_parallel_workers', 'max_worker_processes', 'shared_buffers',"
		echo "  'jit', 'qidrisk.max_state_memory']) AS name;"
		echo "\\timing on"
		for ((r = 1; r <= runs; r++)); do
			# rotate the order run by run so no variant always follows another
			for ((j = 0; j < ${#VARIANTS[@]}; j++)); do
				v=${VARIANTS[$(((r - 1 + j) % ${#VARIANTS[@]}))]}
				echo "\\echo @@run $v $r"
				echo "${QUERY[$v]};"
			done
		done
	} >"$OUT/session-$rows.sql"
	"${PSQL[@]}" -f "$OUT/session-$rows.sql" >"$log" 2>&1 || {
		cat "$log" >&2
		echo "bench: session for $rows rows failed" >&2
		exit 1
	}

	# --- results must agree, run by run ---
	python3 bench/report.py check "$log"

	# --- peak memory (and one serial time): one fresh connection per
	# variant, serial plan so one process builds the whole state ---
	# Linux keeps only the peak of the whole resident set (VmHWM), which also
	# counts shared buffers and mapped files.  So warm up first (the query over
	# 1000 rows, then a bare scan of the table, mapping the shared buffers a
	# scan touches), then take the query's peak minus the file and shared pages
	# resident after it minus the private pages resident before it: the peak
	# private memory the query added (an estimate, low by at most the shared
	# pages first touched after the peak).
	if [ "${BENCH_MEMORY:-1}" != 0 ]; then
		echo "bench: peak memory at $rows rows (serial plans)"
		status="regexp_split_to_table(pg_read_file('/proc/' || pg_backend_pid() || '/status'), E'\\n') AS line
			WHERE line ~ '^(VmHWM|VmRSS|RssAnon|RssFile|RssShmem):'"
		for v in A B D E; do
			{
				echo "\\set tab $tab"
				echo "\\pset format unaligned"
				echo "\\pset tuples_only on"
				echo "SET max_parallel_workers_per_gather = 0;"
				if [ -n "${BENCH_STATE_MEMORY:-}" ]; then
					echo "SET qidrisk.max_state_memory = '$BENCH_STATE_MEMORY';"
				fi
				echo "\\o /dev/null"
				# warm up: the query over 1000 rows (loads the library, fills
				# caches), then the bare scan over all rows (maps the buffers)
				echo "\\set tab '(SELECT * FROM $tab LIMIT 1000) AS w'"
				echo "${QUERY[$v]};"
				echo "\\set tab $tab"
				echo "${QUERY[C]};"
				echo "\\o"
				echo "SELECT '@@before ' || line FROM $status;"
				echo "\\o /dev/null"
				echo "\\timing on"
				echo "${QUERY[$v]};"
				echo "\\timing off"
				echo "\\o"
				echo "SELECT '@@after ' || line FROM $status;"
			} >"$OUT/memory-$rows-$v.sql"
			if "${PSQL[@]}" -f "$OUT/memory-$rows-$v.sql" >"$OUT/memory-$rows-$v.log" 2>&1; then
				awk -v v="$v" '
					/^@@before/ { sub(":", "", $2); before[$2] = $3 }
					/^@@after/ { sub(":", "", $2); after[$2] = $3 }
					/^Time:/ { ms = $2 }
					END {
						if (ms != "")
							printf "@@serial %s %s\n", v, ms
						if ("VmHWM" in after && "RssAnon" in before)
							printf "@@memory %s %d\n", v,
								after["VmHWM"] - after["RssFile"] - after["RssShmem"] - before["RssAnon"]
					}' "$OUT/memory-$rows-$v.log" >>"$log"
			else
				echo "bench: memory pass for $v failed (see $OUT/memory-$rows-$v.log)" >&2
			fi
		done
	fi
done

# --- the birthday aggregate: its own session, independent of the sizes ---
# The census table is rebuilt by every run of this script (it is small), then
# one session times H like the variants above: settings, a warm-up with its
# plan, then the timed runs.
birthday_runs="${BENCH_BIRTHDAY_RUNS:-7}"
log="$OUT/session-birthday.log"
echo "bench: building $CENSUS_TAB"
start=$(date +%s.%N)
"${PSQL[@]}" -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS $CENSUS_TAB" \
	-c "$CENSUS_SQL" -c "VACUUM ANALYZE $CENSUS_TAB"
end=$(date +%s.%N)
census_seconds=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
echo "bench: timing the birthday aggregate, $birthday_runs runs"
{
	echo "\\pset pager off"
	echo "\\pset format unaligned"
	echo "\\pset tuples_only on"
	if [ -n "${BENCH_STATE_MEMORY:-}" ]; then
		echo "SET qidrisk.max_state_memory = '$BENCH_STATE_MEMORY';"
	fi
	echo "\\echo @@meta census_rows $CENSUS_ROWS"
	echo "\\echo @@meta k $BIRTHDAY_K"
	echo "\\echo @@meta runs $birthday_runs"
	echo "\\echo @@meta generate_seconds $census_seconds"
	echo "SELECT '@@meta table_size ' || pg_size_pretty(pg_table_size('$CENSUS_TAB'));"
	echo "SELECT '@@meta count ' || count(*) FROM $CENSUS_TAB;"
	echo "\\echo @@explain H"
	echo "EXPLAIN (ANALYZE) ${QUERY[H]};"
	echo "\\timing on"
	for ((r = 1; r <= birthday_runs; r++)); do
		echo "\\echo @@run H $r"
		echo "${QUERY[H]};"
	done
} >"$OUT/session-birthday.sql"
"${PSQL[@]}" -f "$OUT/session-birthday.sql" >"$log" 2>&1 || {
	cat "$log" >&2
	echo "bench: birthday session failed" >&2
	exit 1
}
python3 bench/report.py check "$log"

# --- 1-D generalization: its own session on the largest table ---
QUANTILE_K=100
qrows="${@: -1}"
qtab="bench_pop_$qrows"
QUERY[Q]="SELECT quantile_cuts(birth_date, $QUANTILE_K) FROM $qtab"
QUERY[R]="SELECT array_agg(v ORDER BY v) FROM (
  SELECT v, before, lag(before) OVER (ORDER BY v) AS previous
  FROM (SELECT v, sum(c) OVER (ORDER BY v) - c AS before
        FROM (SELECT birth_date AS v, count(*) AS c FROM $qtab GROUP BY birth_date) g) w) x
WHERE previous IS NULL OR before / $QUANTILE_K > previous / $QUANTILE_K"
QUERY[S]="SELECT sum(quantile_bucket(birth_date, (SELECT cuts FROM bench_quantile_cuts))) FROM $qtab"
QUERY[T]="SELECT max(birth_date) FROM $qtab"
QUERY[U]="SELECT quantile_cuts_approx(birth_date, $QUANTILE_K) FROM $qtab"
QUANTILE_VARIANTS=(Q R S T U)
for v in "${QUANTILE_VARIANTS[@]}"; do
	printf '%s;\n' "${QUERY[$v]}" >"$OUT/queries/$v.sql"
done
quantile_runs="${BENCH_QUANTILE_RUNS:-5}"
log="$OUT/session-quantile.log"
echo "bench: timing 1-D generalization on $qtab, $quantile_runs runs"
"${PSQL[@]}" -c "SET client_min_messages = warning" \
	-c "DROP TABLE IF EXISTS bench_quantile_cuts" \
	-c "CREATE TABLE bench_quantile_cuts AS SELECT quantile_cuts(birth_date, $QUANTILE_K) AS cuts FROM $qtab"
{
	echo "\\pset pager off"
	echo "\\pset format unaligned"
	echo "\\pset tuples_only on"
	echo "\\echo @@meta rows $qrows"
	echo "\\echo @@meta k $QUANTILE_K"
	echo "\\echo @@meta runs $quantile_runs"
	echo "SELECT '@@meta cuts ' || cardinality(cuts) FROM bench_quantile_cuts;"
	echo "SELECT '@@meta cuts_text ' || md5(cuts::text) FROM bench_quantile_cuts;"
	# the checks: bucket sizes and the mapping's sum by width_bucket, over the
	# grouped dates (width_bucket would detoast the cuts on every row)
	echo "SELECT '@@meta smallest_bucket ' || min(rows) FROM (SELECT width_bucket(v, (SELECT cuts || '{}'::date[] FROM bench_quantile_cuts)) AS b, sum(c) AS rows FROM (SELECT birth_date AS v, count(*) AS c FROM $qtab GROUP BY 1) g GROUP BY 1) s;"
	echo "SELECT '@@meta width_bucket_sum ' || sum(width_bucket(v, (SELECT cuts || '{}'::date[] FROM bench_quantile_cuts)) * c) FROM (SELECT birth_date AS v, count(*) AS c FROM $qtab GROUP BY 1) g;"
	for v in "${QUANTILE_VARIANTS[@]}"; do
		echo "\\echo @@explain $v"
		echo "EXPLAIN (ANALYZE) ${QUERY[$v]};"
	done
	echo "\\timing on"
	for ((r = 1; r <= quantile_runs; r++)); do
		for ((j = 0; j < ${#QUANTILE_VARIANTS[@]}; j++)); do
			v=${QUANTILE_VARIANTS[$(((r - 1 + j) % ${#QUANTILE_VARIANTS[@]}))]}
			echo "\\echo @@run $v $r"
			if [ "$v" = Q ] || [ "$v" = R ] || [ "$v" = U ]; then
				# arrays of thousands of dates: compare digests, count cuts
				echo "SELECT md5(c::text) || ' ' || cardinality(c) FROM (${QUERY[$v]}) AS q(c);"
			else
				echo "${QUERY[$v]};"
			fi
		done
	done
} >"$OUT/session-quantile.sql"
"${PSQL[@]}" -f "$OUT/session-quantile.sql" >"$log" 2>&1 || {
	cat "$log" >&2
	echo "bench: quantile session failed" >&2
	exit 1
}
python3 bench/report.py check "$log"

echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
python3 bench/report.py report "$OUT" "${BENCH_DOC:-docs/benchmarks.md}"
