#!/bin/bash
# Run the pg_regress and pgTAP suites against the server in PG* variables
# (test/check.sh starts a throwaway one), then print one summary line,
# "N passed, N failed, N skipped", after the reason of each skip and what
# failed.  Tests are counted by test/taprun.pl from pg_regress's report and
# the TAP streams themselves: a skipped test, or a TODO test that failed,
# proved nothing and counts as skipped; a suite that runs no test, a test
# that did not run and a runner that fails count as failed.
set -uo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=${PG_CONFIG:?test/suites.sh: PG_CONFIG names the installation under test}
mkdir -p results
rm -f results/regress.counts results/pgtap.counts results/ops.counts results/summary.txt

make -s installcheck PG_CONFIG="$PG_CONFIG" 2>&1 | tee results/regress.log
regress_status=${PIPESTATUS[0]}
if [ -s regression.diffs ]; then
	cat regression.diffs
fi
# the tests the Makefile's REGRESS names
perl test/taprun.pl regress results/regress.counts results/regress.log "$regress_status" \
	$(ls test/sql/*.sql 2>/dev/null | sed 's|^test/sql/||; s|\.sql$||')

# pgTAP files as pg_prove runs them
perl test/taprun.pl tap results/pgtap.counts results/pgtap.tap \
	psql --no-psqlrc --no-align --quiet --pset pager=off --pset tuples_only=true --set ON_ERROR_STOP=1 --file \
	-- $(find test/pgtap -name '*.sql' | LC_ALL=C sort) 2>&1 | tee results/pgtap.log

# operations scripts (dump/restore, DROP EXTENSION, upgrades, the layout of src/) print TAP
perl test/taprun.pl tap results/ops.counts results/ops.tap bash \
	-- $(find test/ops -name '*.sh' | LC_ALL=C sort) 2>&1 | tee results/ops.log

# "N passed, N failed, N skipped" of a suite; a runner that left no counts failed
counts() {
	local p=0 f=1 s=0
	if [ -s "$1" ]; then
		read -r p f s <"$1"
	fi
	echo "$p passed, $f failed, $s skipped"
}
passed=0
failed=0
skipped=0
for suite in regress pgtap ops; do
	read -r p _ f _ s _ < <(counts "results/$suite.counts")
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
done
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
	failed=1
fi
{
	echo "pg_regress: $(counts results/regress.counts); pgTAP: $(counts results/pgtap.counts); ops: $(counts results/ops.counts)"
	for suite in regress pgtap ops; do
		if [ ! -s "results/$suite.counts" ]; then
			echo "failed: $suite: the runner gave no counts"
		fi
	done
	cat results/regress.counts results/pgtap.counts results/ops.counts 2>/dev/null | grep -E '^(skipped|failed): '
	if [ "$passed" -eq 0 ]; then
		echo "failed: no test passed"
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
} >results/summary.txt
cat results/summary.txt
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
