#!/bin/bash
# Set up what the demo needs (test/setup.sh demo: PostgreSQL, its server
# headers, make and gcc), start a throwaway cluster, load UCI Adult and print a
# re-identification risk report.  PG_VERSION=NN chooses the PostgreSQL
# version (default: the one installed, else the distribution's).
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/setup.sh demo
. test/pgversion.sh
resolve_pg_version
NONROOT=1 pg_virtualenv -v "$PG_VERSION" psql -X -q -v ON_ERROR_STOP=1 -f data/demo.sql
