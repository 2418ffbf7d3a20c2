#!/bin/bash
# Every test suite (pg_regress, pgTAP, test/ops) on each supported PostgreSQL
# major version: 15, 17 and 18.  A version this machine's distribution ships
# (or that is installed here) runs here: set up (test/setup.sh), then the
# suites against a throwaway cluster.  Any other runs in a Debian chroot that
# test/chroot.sh makes and caches (needs root).  Ends with what each version
# skipped and failed, one summary line per version ("pg15: N passed, N failed,
# N skipped") and the total in the same form, last.
#   bash test/check.sh          # 15, 17 and 18
#   bash test/check.sh 17       # one of 15, 17, 18; 15-main: bookworm's main
#                               # suite only (an older 15 minor release)
#   bash test/check.sh host     # the version installed here only
set -euo pipefail
cd "$(dirname "$0")/.."
. test/pgversion.sh

SUPPORTED="15 17 18"
targets=${1:-$SUPPORTED}
mkdir -p results

# run_here [MAJOR]: set up and run the suites on this machine; the summary
# goes to results/summary.txt
run_here() {
	local status=0
	PG_VERSION=${1:-} bash test/setup.sh
	PG_VERSION=${1:-}
	resolve_pg_version
	rm -f results/summary.txt
	NONROOT=1 pg_virtualenv -v "$PG_VERSION" bash test/suites.sh || status=$?
	if [ ! -f results/summary.txt ]; then
		printf '%s\n' "failed: test/suites.sh wrote no summary" "0 passed, 1 failed, 0 skipped" >results/summary.txt
		status=1
	fi
	return "$status"
}

if [ "$targets" = host ]; then
	status=0
	run_here || status=$?
	# the runners' summary comes last, after the throwaway cluster is gone
	cat results/summary.txt
	exit "$status"
fi

distribution=$(distribution_pg_version || true)
status=0
lines=()
notes=()
total_passed=0
total_failed=0
total_skipped=0
for target in $targets; do
	case "$target" in
	15 | 15-main | 17 | 18) ;;
	*)
		echo "test/check.sh: unknown version $target (15, 15-main, 17, 18 or host)" >&2
		exit 2
		;;
	esac
	echo "==== PostgreSQL $target"
	summary="results/summary-pg$target.txt"
	rm -f "$summary"
	run_status=0
	if [ "$target" = "$distribution" ] || [ -x "/usr/lib/postgresql/$target/bin/postgres" ]; then
		run_here "$target" || run_status=$?
		cp results/summary.txt "$summary"
	else
		bash test/chroot.sh "$target" || run_status=$?
		if [ -f "results/pg$target/summary.txt" ]; then
			cp "results/pg$target/summary.txt" "$summary"
		fi
	fi
	# "N passed, N failed" or "N passed, N failed, N skipped"; a run that
	# failed, gave no summary or passed nothing failed
	line=$(tail -1 "$summary" 2>/dev/null || true)
	if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)?$ ]]; then
		passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]} skipped=${BASH_REMATCH[4]:-0}
	else
		passed=0 failed=0 skipped=0
		notes+=("pg$target: failed: no summary line")
	fi
	if [ "$failed" -eq 0 ] && { [ "$run_status" -ne 0 ] || [ "$passed" -eq 0 ]; }; then
		failed=1
		if [ "$run_status" -ne 0 ]; then
			notes+=("pg$target: failed: the run exited with status $run_status")
		else
			notes+=("pg$target: failed: no test passed")
		fi
	fi
	if [ "$failed" -ne 0 ]; then
		status=1
	fi
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
	total_skipped=$((total_skipped + skipped))
	lines+=("pg$target: $passed passed, $failed failed, $skipped skipped")
	# what the version skipped and failed, and why
	while IFS= read -r note; do
		notes+=("pg$target: $note")
	done < <(grep -E '^(skipped|failed): ' "$summary" 2>/dev/null)
done
if [ ${#notes[@]} -gt 0 ]; then
	printf '%s\n' "${notes[@]}"
fi
printf '%s\n' "${lines[@]}"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
if [ "$total_failed" -ne 0 ] || [ "$total_passed" -eq 0 ]; then
	status=1
fi
exit "$status"
