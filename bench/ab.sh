#!/bin/bash
# bench/ab.sh REV_BEFORE REV_AFTER - bench/run.sh's ratios (and, optionally,
# bench/parallel.sh's speed-ups) of two revisions of qidrisk on this machine,
# in one run, interleaved.
#
# Each revision is exported (git archive) into a scratch folder and built
# there; REV_BEFORE's build is installed into one PostgreSQL server and
# REV_AFTER's into another, so both stay installed side by side.  Then, for
# BENCH_AB_ROUNDS rounds, bench/run.sh (and bench/parallel.sh) of THIS
# checkout run against each server in turn, the order swapped every round
# (before-after, after-before, ...), so that a change in the machine's load
# falls on both.  Only the extension differs between the two sides: the
# harness, the population tables and the server settings are the same.
# bench/ab.py prints, for every ratio bench/report.py computes (and every
# speed-up and share of the bare scan bench/parallel.py computes), the median
# over rounds BEFORE, AFTER and AFTER/BEFORE, with each side's smallest and
# largest round (the run-to-run spread), and the load average.  The ratios,
# not the absolute times, are comparable: each is measured within one session.
#
# The two servers (each needs its own PG_CONFIG, i.e. its own installation
# directory, so that the two builds do not overwrite each other):
#   AB_BEFORE_PG_CONFIG, AB_BEFORE_PGPORT   the server REV_BEFORE goes into
#   AB_AFTER_PG_CONFIG, AB_AFTER_PGPORT     the server REV_AFTER goes into
#   PGHOST (default /tmp), PGUSER (default postgres) for both
# When these are unset and /opt/privpg.sh exists, the private servers numbered
# AB_PRIVPG (default "8 9": before, after) are started and used; otherwise the
# script says it needs two servers and exits 0 ("skipped").
#
# Environment:
#   BENCH_AB_ROWS      population sizes for bench/run.sh (default 1000000)
#   BENCH_AB_ROUNDS    rounds (default 3)
#   BENCH_AB_PARALLEL  rows for bench/parallel.sh ROWS 0 in every round
#                      (default 0: skipped)
#   BENCH_RUNS         timed runs per variant (the scripts' defaults otherwise)
#   BENCH_DB           database on both servers (default bench)
#   AB_SCRATCH         scratch folder (default a new one under /tmp, removed
#                      at the end unless AB_KEEP=1)
# Writes nothing under docs/: the table goes to standard output (and to
# $AB_SCRATCH/ab.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
	echo "usage: bench/ab.sh REV_BEFORE REV_AFTER" >&2
	exit 2
fi
before_rev=$(git rev-parse --short "$1^{commit}")
after_rev=$(git rev-parse --short "$2^{commit}")
rows=${BENCH_AB_ROWS:-1000000}
rounds=${BENCH_AB_ROUNDS:-3}
parallel_rows=${BENCH_AB_PARALLEL:-0}
for n in $rows; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: not a row count: $n" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: not a round count: $rounds" >&2; exit 2; }
[[ "$parallel_rows" =~ ^[0-9]+$ ]] || { echo "ab.sh: not a row count: $parallel_rows" >&2; exit 2; }

# --- the two servers ---
declare -A CONFIG PORT
if [ -n "${AB_BEFORE_PG_CONFIG:-}" ] && [ -n "${AB_AFTER_PG_CONFIG:-}" ]; then
	CONFIG[before]=$AB_BEFORE_PG_CONFIG PORT[before]=${AB_BEFORE_PGPORT:?}
	CONFIG[after]=$AB_AFTER_PG_CONFIG PORT[after]=${AB_AFTER_PGPORT:?}
elif [ -x /opt/privpg.sh ] || [ -f /opt/privpg.sh ]; then
	read -r n_before n_after <<<"${AB_PRIVPG:-8 9}"
	for side in before after; do
		n=$([ "$side" = before ] && echo "$n_before" || echo "$n_after")
		# privpg.sh starts the server unless it runs (pg_ctl's complaint then is noise)
		exports=$(bash /opt/privpg.sh "$n" 2>/dev/null | tail -1)
		CONFIG[$side]=$(sed -n 's/.*PG_CONFIG=\([^ ]*\).*/\1/p' <<<"$exports")
		PORT[$side]=$(sed -n 's/.*PGPORT=\([^ ]*\).*/\1/p' <<<"$exports")
	done
else
	echo "ab.sh: needs two PostgreSQL servers (AB_BEFORE_PG_CONFIG/AB_BEFORE_PGPORT and AB_AFTER_...): skipped"
	exit 0
fi
if [ "$("${CONFIG[before]}" --pkglibdir)" = "$("${CONFIG[after]}" --pkglibdir)" ]; then
	echo "ab.sh: both servers install into $("${CONFIG[before]}" --pkglibdir): they need separate installations" >&2
	exit 2
fi
export PGHOST=${PGHOST:-/tmp} PGUSER=${PGUSER:-postgres}
DB=${BENCH_DB:-bench}

SCRATCH=${AB_SCRATCH:-$(mktemp -d /tmp/qidrisk-ab.XXXXXX)}
mkdir -p "$SCRATCH"
if [ "${AB_KEEP:-0}" != 1 ] && [ -z "${AB_SCRATCH:-}" ]; then
	trap 'rm -rf "$SCRATCH"' EXIT
fi
echo "ab: scratch $SCRATCH; before $before_rev on port ${PORT[before]}, after $after_rev on port ${PORT[after]}"

# on_side SIDE CMD...: CMD against SIDE's server
on_side() {
	local side=$1
	shift
	env PG_CONFIG="${CONFIG[$side]}" PGPORT="${PORT[$side]}" PATH="$("${CONFIG[$side]}" --bindir):$PATH" "$@"
}

# --- build and install each revision into its server ---
declare -A REV=([before]=$before_rev [after]=$after_rev)
for side in before after; do
	src="$SCRATCH/src-$side"
	rm -rf "$src"
	mkdir -p "$src"
	git archive "${REV[$side]}" | tar -x -C "$src"
	echo "ab: building ${REV[$side]} ($side)"
	on_side "$side" make -s -C "$src" PG_CONFIG="${CONFIG[$side]}" >"$SCRATCH/build-$side.log" 2>&1 ||
		{ cat "$SCRATCH/build-$side.log" >&2; exit 1; }
	on_side "$side" make -s -C "$src" install PG_CONFIG="${CONFIG[$side]}" >>"$SCRATCH/build-$side.log" 2>&1 ||
		{ cat "$SCRATCH/build-$side.log" >&2; exit 1; }
	lib="$("${CONFIG[$side]}" --pkglibdir)/qidrisk.so"
	if ! cmp -s "$src/qidrisk.so" "$lib"; then
		echo "ab: $lib is not the library built from ${REV[$side]}" >&2
		exit 1
	fi
	# the extension re-created, so the installed SQL is the one timed
	if [ "$(on_side "$side" psql -X -At -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
		on_side "$side" psql -X -q -d postgres -c "CREATE DATABASE \"$DB\""
	fi
	on_side "$side" psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "SET client_min_messages = warning" \
		-c "DROP EXTENSION IF EXISTS qidrisk CASCADE" -c "CREATE EXTENSION qidrisk"
	# a backend of this server maps this very file once the library is loaded
	mapped=$(on_side "$side" psql -X -At -d "$DB" -c "SELECT singleton_count(g) FROM generate_series(1, 3) g" \
		-c "SELECT count(*) FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\\n') AS l WHERE l LIKE '% $lib'" | tail -1)
	if [ "${mapped:-0}" -lt 1 ]; then
		echo "ab: the server on port ${PORT[$side]} did not load $lib" >&2
		exit 1
	fi
	echo "$side|${REV[$side]}|${PORT[$side]}|$lib|$(md5sum "$lib" | cut -c1-12)|$(date -u -r "$lib" '+%Y-%m-%d %H:%M:%S UTC')|$(on_side "$side" psql -X -At -d "$DB" \
		-c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" \
		>"$SCRATCH/build-$side.txt"
	echo "ab: $(cat "$SCRATCH/build-$side.txt")"
done

# --- the rounds, the order swapped every round ---
echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)" >"$SCRATCH/load.txt"
echo "uptime_start=$(uptime)" >>"$SCRATCH/load.txt"
for ((round = 1; round <= rounds; round++)); do
	order=$([ $((round % 2)) = 1 ] && echo "before after" || echo "after before")
	for side in $order; do
		echo "ab: round $round, $side (${REV[$side]}), bench/run.sh $rows"
		on_side "$side" env BENCH_DB="$DB" BENCH_MEMORY=0 BENCH_DOC="$SCRATCH/doc-$side-$round.md" \
			BENCH_COMMAND="bash bench/ab.sh $1 $2" bash bench/run.sh $rows >"$SCRATCH/run-$side-$round.log" 2>&1 ||
			{ tail -30 "$SCRATCH/run-$side-$round.log" >&2; exit 1; }
		sed -n 's/^bench: results in //p' "$SCRATCH/run-$side-$round.log" >"$SCRATCH/run-$side-$round.dir"
		if [ "$parallel_rows" != 0 ]; then
			echo "ab: round $round, $side (${REV[$side]}), bench/parallel.sh $parallel_rows 0"
			marker="$SCRATCH/parallel-$side-$round.start"
			touch "$marker"
			on_side "$side" env BENCH_DB="$DB" BENCH_DOC="$SCRATCH/doc-parallel-$side-$round.md" \
				bash bench/parallel.sh "$parallel_rows" 0 >"$SCRATCH/parallel-$side-$round.log" 2>&1 ||
				{ tail -30 "$SCRATCH/parallel-$side-$round.log" >&2; exit 1; }
			# parallel.sh does not print its folder: the newest one it made
			find bench/results -maxdepth 1 -name 'parallel-*' -newer "$marker" | sort | tail -1 \
				>"$SCRATCH/parallel-$side-$round.dir"
		fi
	done
done
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$SCRATCH/load.txt"
echo "uptime_end=$(uptime)" >>"$SCRATCH/load.txt"

python3 bench/ab.py "$SCRATCH" "$rounds" "$parallel_rows" "bash bench/ab.sh $*" | tee "$SCRATCH/ab.md"
