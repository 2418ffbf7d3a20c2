# Sourced by test/setup.sh, test/check.sh and test/demo.sh: which PostgreSQL
# to build and test against.  PG_CONFIG, when set, names it; else PG_VERSION
# (a major version); else the highest one installed; else none yet
# (PG_VERSION empty: test/setup.sh installs the distribution's `postgresql`).
# Sets PG_VERSION and, once that version is installed, PG_CONFIG.

# The major versions installed, lowest first
installed_pg_versions() {
	local postgres
	for postgres in /usr/lib/postgresql/*/bin/postgres; do
		if [ -x "$postgres" ]; then
			basename "$(dirname "$(dirname "$postgres")")"
		fi
	done | sort -n
}

# The major version of the distribution's `postgresql` package, if apt knows it
distribution_pg_version() {
	apt-cache depends postgresql 2>/dev/null |
		sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -1 || true
}

resolve_pg_version() {
	if [ -n "${PG_CONFIG:-}" ]; then
		PG_VERSION=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
	elif [ -z "${PG_VERSION:-}" ]; then
		PG_VERSION=$(installed_pg_versions | tail -1)
	fi
	if [ -n "$PG_VERSION" ] && [ -x "/usr/lib/postgresql/$PG_VERSION/bin/pg_config" ]; then
		PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_VERSION/bin/pg_config}
	fi
	export PG_VERSION
	if [ -n "${PG_CONFIG:-}" ]; then
		export PG_CONFIG
	fi
}
