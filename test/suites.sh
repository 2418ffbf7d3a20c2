#!/bin/bash
# Run the pg_regress and pgTAP suites against the server in PG* variables
# (test/check.sh starts a throwaway one), then print one summary line.
set -uo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=${PG_CONFIG:?test/suites.sh: PG_CONFIG names the installation under test}
mkdir -p results

make -s installcheck PG_CONFIG="$PG_CONFIG" 2>&1 | tee results/regress.log
if [ -s regression.diffs ]; then
	cat regression.diffs
fi
# pg_regress reports "test name ... ok" up to 15, TAP ("ok 1 - name") from 16
regress_passed=$(grep -cE '^(ok|test|     )? *[a-z_0-9]+ +\.\.\. ok|^ok [0-9]+ +[-+] ' results/regress.log || true)
regress_failed=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+ ' results/regress.log || true)

# "passed failed" of a TAP harness log (pg_prove or prove)
tap_counts() {
	local tests failed
	tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\).*/\1/p' "$1")
	failed=$(sed -n 's/.*Failed \([0-9]*\)\/[0-9]* subtests.*/\1/p' "$1" |
		awk '{ sum += $1 } END { print sum + 0 }')
	if ! grep -q '^Result: PASS' "$1"; then
		failed=$((failed > 0 ? failed : 1))
	fi
	echo "$(( ${tests:-0} - failed )) $failed"
}

pg_prove --ext .sql --recurse test/pgtap/ 2>&1 | tee results/pgtap.log
read -r tap_passed tap_failed < <(tap_counts results/pgtap.log)

# operations scripts (dump/restore, DROP EXTENSION, upgrades) print TAP
prove --ext .sh --exec bash test/ops/ 2>&1 | tee results/ops.log
read -r ops_passed ops_failed < <(tap_counts results/ops.log)

passed=$((regress_passed + tap_passed + ops_passed))
failed=$((regress_failed + tap_failed + ops_failed))
{
	echo "pg_regress: $regress_passed passed, $regress_failed failed; pgTAP: $tap_passed passed, $tap_failed failed; ops: $ops_passed passed, $ops_failed failed"
	echo "$passed passed, $failed failed"
} > results/summary.txt
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
