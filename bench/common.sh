# bench/common.sh - setup shared by the bench/ scripts (sourced).
#
# bench_check_rows NAME ROWS  exits unless ROWS is a positive row count
# bench_database DB           creates DB when missing, exports PGDATABASE and
#                             re-creates the extension in it, so the installed
#                             build is the one timed
# bench_population NAME TAB ROWS [GENERATOR]
#                             builds GENERATOR's (default bench/population.sql)
#                             deterministic table TAB with ROWS rows unless an
#                             identical one exists (its comment records the
#                             generator's checksum)
# bench_population_current TAB SIGNATURE
#                             succeeds when TAB's comment is SIGNATURE and it
#                             holds rows (bench/run.sh uses it too)
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

bench_check_rows() {
	if ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
		echo "$1: not a row count: $2" >&2
		exit 2
	fi
}

bench_database() {
	if [ "$("${PSQL[@]}" -At -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$1'")" != 1 ]; then
		"${PSQL[@]}" -d postgres -c "CREATE DATABASE \"$1\""
	fi
	export PGDATABASE="$1"
	"${PSQL[@]}" -c "SET client_min_messages = warning" \
		-c "DROP EXTENSION IF EXISTS qidrisk CASCADE" -c "CREATE EXTENSION qidrisk"
}

bench_population_current() {
	[ "$("${PSQL[@]}" -At -c "SELECT obj_description(to_regclass('$1'), 'pg_class')")" = "$2" ] &&
		# an unlogged table comes back empty after a crash or an immediate shutdown
		[ "$("${PSQL[@]}" -At -c "SELECT EXISTS (SELECT FROM $1)")" = t ]
}

bench_population() {
	local signature generator=${4:-bench/population.sql}
	signature="qidrisk bench population rows=$3 generator=$(md5sum "$generator" | cut -c1-32)"
	if ! bench_population_current "$2" "$signature"; then
		echo "$1: generating $2"
		"${PSQL[@]}" -v tab="$2" -v rows="$3" -c "SET client_min_messages = warning" \
			-f "$generator"
		"${PSQL[@]}" -c "COMMENT ON TABLE $2 IS '$signature'"
	fi
}
