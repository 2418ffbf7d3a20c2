# Shared by the TAP scripts of test/ops (sourced, not run):
#   q ARGS...            psql, quiet, unaligned, stopping at the first error
#   as ROLE DB ARGS...   the same as ROLE, through SET ROLE
#   ok GOT WANT NAME     one numbered TAP line; a failure shows both values
#                        (a diff when they span lines)
n=0

q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }

as() {
	local role=$1 db=$2
	shift 2
	q -d "$db" -c "SET ROLE $role" "$@"
}

ok() {
	n=$((n + 1))
	if [ "$1" = "$2" ]; then
		echo "ok $n - $3"
	else
		echo "not ok $n - $3"
		if [[ "$1$2" == *$'\n'* ]]; then
			diff <(printf '%s\n' "$2") <(printf '%s\n' "$1") | head -40 | sed 's/^/#   /'
		else
			printf '#   got: %s\n#  want: %s\n' "$1" "$2"
		fi
	fi
}

# earlier_release VERSION: make an earlier release installable from scratch,
# as an installation made before it was superseded would be.  Only the current
# release ships an install script; an earlier one is the first release's
# script (sql/base) followed by the upgrade scripts up to it.  Needs write
# access to the installation's extension directory (CI runs as root); the
# caller removes $EARLIER_SCRIPTS when it exits.
earlier_release() {
	local target=$1 src dir f to
	src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/sql"
	dir="$("${PG_CONFIG:-pg_config}" --sharedir)/extension"
	{
		cat "$src/base/qidrisk--0.1.0.sql"
		# in version order, by the file names alone (a directory may hold a -)
		for f in $(cd "$src" && ls qidrisk--*--*.sql | sort -t- -k3,3V); do
			to=${f##*--}
			to=${to%.sql}
			if [ "$(printf '%s\n' "$to" "$target" | sort -V | tail -1)" = "$target" ]; then
				cat "$src/$f"
			fi
		done
	} >"$dir/qidrisk--$target.sql"
	EARLIER_SCRIPTS="${EARLIER_SCRIPTS:-} $dir/qidrisk--$target.sql"
}
