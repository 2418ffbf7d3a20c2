#!/bin/bash
# bench/parallel.sh [ROWS [SHAPE_ROWS]] - parallel scaling of the exact and
# approximate singleton counts, next to a bare scan of the same columns.
#
# Two parts, each timed in ONE psql session at 0, 1 and 2 parallel workers
# (max_parallel_workers_per_gather; the planner's costs otherwise at their
# defaults, the leader participating): one warm-up per case, then BENCH_RUNS
# (default 3) rounds, each round running every worker count and every case,
# so the cases are interleaved.  The sampling key is fixed
# (qidrisk.sample_seed = 1, which needs a superuser), and every run of a case
# must return the same answer.
#
# Population (ROWS rows, default 10000000; 0 skips it): bench/population.sql's
# deterministic table bench_pop_ROWS (built, or reused when its comment shows
# the same generator), with
#   X  singleton_count(birth_date, sex, zip5)            (exact, near-distinct:
#      about 9.4 million classes, so the partial states are as large as the input)
#   Y  singleton_count(birth_date, sex)                  (exact, about 65,000 classes)
#   A  approx_singleton_count(birth_date, sex, zip5)     (capacity 32768)
#   C  a bare scan hashing the same columns (bench/run.sh's variant C): what
#      the machine itself gains from parallel workers
# then one fresh session per (variant, workers) reads its backend's peak
# resident memory (VmHWM, the leader only: workers are other processes).
# Written between <!-- bench:parallel --> and <!-- /bench:parallel --> of
# docs/benchmarks.md (for another ROWS, <!-- bench:parallel-ROWS -->).
#
# QID shapes (SHAPE_ROWS rows, default 4000000; 0 skips it): bench/qidshape.sql's
# table bench_qidshape_SHAPE_ROWS of a date, a 0/1 integer and a skewed integer
# ZIP (about 3.8 million of 4 million rows unique on the three) and coarser
# columns, so that four QIDs span the regimes of class counts:
#   N  (d, s, zip)    near-distinct
#   M  (m, zip3)      about 0.9 million classes (month, ZIP prefix)
#   K  (d, s)         about 65,000 classes
#   H  (y, region)    a few hundred classes (year, ZIP's first digit)
# each with E singleton_count (exact), A approx_singleton_count and C a bare
# scan hashing the same columns.  A serial GROUP BY counts each QID's classes
# and singletons once, untimed; E must return its singleton count.  The report
# gives each variant's speed-up at 1 and 2 workers and that speed-up as a share
# of C's over the same columns, round by round (the median of the rounds'
# shares and their range: a round's runs are close in time).  Written between
# <!-- bench:parallel-shapes --> and its end marker (for another SHAPE_ROWS,
# <!-- bench:parallel-shapes-N -->).
#
# First, in a session of its own, the price of starting workers: L, a parallel
# count of a one-row table (the costs that make such a plan parallel set for
# that session only), timed like the cases at 0, 1 and 2 workers; both reports
# quote it, since no query's time at 2 workers can fall below it.
#
# Uses the server in PGHOST/PGPORT/PGUSER, database $BENCH_DB (default bench,
# created when missing; the extension is re-created so the installed build is
# the one timed).  BENCH_DOC: where to write (default docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/common.sh

ROWS=${1:-10000000}
SHAPE_ROWS=${2:-4000000}
[ "$ROWS" = 0 ] || bench_check_rows parallel.sh "$ROWS"
[ "$SHAPE_ROWS" = 0 ] || bench_check_rows parallel.sh "$SHAPE_ROWS"
RUNS=${BENCH_RUNS:-3}
DOC=${BENCH_DOC:-docs/benchmarks.md}
OUT="bench/results/parallel-$(date +%Y%m%d-%H%M%S)"
COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql || echo ' (src/sql modified)')"
mkdir -p "$OUT"

bench_database "${BENCH_DB:-bench}"

declare -A QUERY

# time_cases LOG CASE...: one session timing every case at 0, 1 and 2 workers
time_cases() {
	local log=$1
	shift
	{
		echo "\\pset format unaligned"
		echo "\\pset tuples_only on"
		# approximate answers repeat only under a fixed sampling key
		echo "SET qidrisk.sample_seed = 1;"
		for w in 0 1 2; do
			echo "SET max_parallel_workers_per_gather = $w;"
			for v in "$@"; do
				echo "${QUERY[$v]};"
			done
		done
		for ((run = 0; run < RUNS; run++)); do
			for w in 0 1 2; do
				for v in "$@"; do
					# only the query is timed
					echo "SET max_parallel_workers_per_gather = $w;"
					echo "\\echo VARIANT $v $w"
					echo "\\timing on"
					echo "${QUERY[$v]};"
					echo "\\timing off"
				done
			done
		done
	} >"${log%.log}.sql"
	"${PSQL[@]}" -f "${log%.log}.sql" >"$log"
}

# launch_cost: what starting workers costs this server, the part of every
# parallel run that does not shrink with workers: a parallel count of a
# one-row table, timed like the cases (the costs that make it parallel set
# for that session only), after checking that it really starts 2 workers
LAUNCH_COSTS="-c parallel_setup_cost=0 -c parallel_tuple_cost=0 -c min_parallel_table_scan_size=0"
launch_cost() {
	local launched
	"${PSQL[@]}" -c "DROP TABLE IF EXISTS bench_launch" -c "CREATE TABLE bench_launch AS SELECT 1 AS one"
	QUERY[L]="SELECT count(*) FROM bench_launch"
	launched=$(PGOPTIONS="${PGOPTIONS:-} $LAUNCH_COSTS" "${PSQL[@]}" -At -c "SET max_parallel_workers_per_gather = 2" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${QUERY[L]}" | sed -n 's/.*Workers Launched: //p')
	if [ "$launched" != 2 ]; then
		echo "parallel.sh: the launch probe started '$launched' workers, not 2 (max_worker_processes, max_parallel_workers?)" >&2
		exit 1
	fi
	PGOPTIONS="${PGOPTIONS:-} $LAUNCH_COSTS" time_cases "$OUT/launch.log" L
}

# report PART ARGS...: bench/parallel.py writes the part's section and prints it
report() {
	python3 bench/parallel.py "$@" --doc "$DOC" --runs "$RUNS" --commit "$COMMIT" \
		--launch "$OUT/launch.log" --load-start "$load_start" --load-end "$(cut -d' ' -f1-3 /proc/loadavg)"
}

launch_cost

if [ "$ROWS" != 0 ]; then
	TAB="bench_pop_$ROWS"
	bench_population parallel "$TAB" "$ROWS"
	QUERY[X]="SELECT singleton_count(birth_date, sex, zip5) FROM $TAB"
	QUERY[Y]="SELECT singleton_count(birth_date, sex) FROM $TAB"
	QUERY[A]="SELECT approx_singleton_count(birth_date, sex, zip5) FROM $TAB"
	QUERY[C]="SELECT sum(hashint4(birth_date - date '1900-01-01')::bigint + hashtext(sex) + hashtext(zip5)) FROM $TAB"
	load_start=$(cut -d' ' -f1-3 /proc/loadavg)
	time_cases "$OUT/session.log" X Y A C
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
	report population --log "$OUT/session.log" --memory "$OUT/memory.log" --rows "$ROWS"
fi

if [ "$SHAPE_ROWS" != 0 ]; then
	TAB="bench_qidshape_$SHAPE_ROWS"
	bench_population parallel "$TAB" "$SHAPE_ROWS" bench/qidshape.sql
	declare -A COLUMNS=([N]="d, s, zip" [M]="m, zip3" [K]="d, s" [H]="y, region")
	declare -A HASHED=(
		[N]="hashint4(d - date '1925-01-01')::bigint + hashint4(s) + hashint4(zip)"
		[M]="hashint4(m - date '1925-01-01')::bigint + hashint4(zip3)"
		[K]="hashint4(d - date '1925-01-01')::bigint + hashint4(s)"
		[H]="hashint4(y)::bigint + hashint4(region)")
	cases=()
	: >"$OUT/shapes.txt"
	for r in N M K H; do
		QUERY[$r.E]="SELECT singleton_count(${COLUMNS[$r]}) FROM $TAB"
		QUERY[$r.A]="SELECT approx_singleton_count(${COLUMNS[$r]}) FROM $TAB"
		QUERY[$r.C]="SELECT sum(${HASHED[$r]}) FROM $TAB"
		cases+=("$r.E" "$r.A" "$r.C")
		# the plain-SQL classes and singletons, serially and untimed
		echo "$r|${COLUMNS[$r]}|$("${PSQL[@]}" -At -c "SET max_parallel_workers_per_gather = 0" \
			-c "SELECT count(*), count(*) FILTER (WHERE n = 1) FROM (SELECT count(*) AS n FROM $TAB GROUP BY ${COLUMNS[$r]}) c")" \
			>>"$OUT/shapes.txt"
	done
	load_start=$(cut -d' ' -f1-3 /proc/loadavg)
	time_cases "$OUT/shapes.log" "${cases[@]}"
	report shapes --log "$OUT/shapes.log" --shapes "$OUT/shapes.txt" --rows "$SHAPE_ROWS"
fi
