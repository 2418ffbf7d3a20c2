#!/bin/bash
# Set up (test/setup.sh), then run every test suite against a throwaway cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/setup.sh
NONROOT=1 pg_virtualenv -v 15 bash test/suites.sh
