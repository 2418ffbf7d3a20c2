#!/bin/bash
# Set up (test/setup.sh), start a throwaway cluster, load UCI Adult and print a
# re-identification risk report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/setup.sh
NONROOT=1 pg_virtualenv -v 15 psql -X -q -v ON_ERROR_STOP=1 -f data/demo.sql
