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
