#!/bin/bash
# Set up (test/setup.sh), then run every test suite against a throwaway cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/setup.sh
rm -f results/summary.txt
status=0
NONROOT=1 pg_virtualenv -v 15 bash test/suites.sh || status=$?
# the runners' summary comes last, after the throwaway cluster is gone
if [ -f results/summary.txt ]; then
	cat results/summary.txt
else
	echo "0 passed, 1 failed"
	status=1
fi
exit "$status"
