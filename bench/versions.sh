#!/bin/bash
# bench/versions.sh [VERSION...] - bench/run.sh on several PostgreSQL major
# versions (default 15 17) on this machine, one after the other in the same
# session, each in its Debian chroot (test/chroot.sh, so every version runs
# the same way), and a table of each version's ratios beside the first
# version's in docs/benchmarks.md (section "versions").  The ratios, not the
# absolute times, are comparable: every ratio is measured within one session.
# The versions alternate, round after round, so that a change in the
# machine's load falls on each of them; each ratio reported is the median of
# its rounds.
# Environment:
#   BENCH_VERSION_ROWS    population sizes for bench/run.sh (default 1000000)
#   BENCH_VERSION_ROUNDS  rounds (default 3)
#   BENCH_RUNS            timed runs per variant (bench/run.sh's default otherwise)
#   BENCH_DOC             page to write (default docs/benchmarks.md)
# Needs root (chroots).
set -euo pipefail
cd "$(dirname "$0")/.."
versions=${*:-15 17}
rows=${BENCH_VERSION_ROWS:-1000000}
rounds=${BENCH_VERSION_ROUNDS:-3}
rm -rf results/versions
mkdir -p results/versions
for ((round = 1; round <= rounds; round++)); do
	for version in $versions; do
		echo "bench: round $round, PostgreSQL $version"
		bash test/chroot.sh "$version" env BENCH_RUNS="${BENCH_RUNS:-}" BENCH_MEMORY=0 \
			BENCH_DOC=results/bench.md BENCH_COMMAND="bash bench/versions.sh $versions" \
			bash bench/run.sh $rows
		cp "results/pg$version/bench.md" "results/versions/pg$version-round$round.md"
	done
done
python3 bench/versions.py "${BENCH_DOC:-docs/benchmarks.md}" "$rows" "${BENCH_RUNS:-}" "$rounds" $versions
