#!/bin/bash
# Install what is missing (Debian packages: the PostgreSQL the distribution
# ships, its server headers, pgTAP and the tools that build the Debian
# package, pg_cron and Citus's build dependencies), then build and install
# qidrisk.  `bash test/setup.sh demo` installs only what the demo needs: that
# PostgreSQL, its server headers, make and gcc.
# PG_VERSION=NN (or PG_CONFIG) chooses another installed or installable major
# version; by default the highest one installed, else the distribution's.
set -euo pipefail
trap 'echo "setup: failed (line $LINENO)" >&2' ERR
cd "$(dirname "$0")/.."
. test/pgversion.sh

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

# install PACKAGE...: install the packages not yet installed
install() {
	local package missing=()
	for package in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
			missing+=("$package")
		fi
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "setup: installing ${missing[*]}"
		if [ -z "${updated:-}" ]; then
			$SUDO apt-get update -qq
			updated=1
		fi
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
}

resolve_pg_version
if [ -z "$PG_VERSION" ]; then
	# nothing installed yet: the distribution's PostgreSQL
	install postgresql
	resolve_pg_version
fi
if [ "${1:-}" = demo ]; then
	# the demo builds the extension and runs psql: nothing more
	install "postgresql-$PG_VERSION" "postgresql-server-dev-$PG_VERSION" make gcc gzip sed
else
	# the suites: pgTAP, pg_cron; Citus, which test/ops/citus.sh builds from
	# source, needs its build dependencies; the Debian package
	# test/ops/package.sh builds, build-essential, debhelper and
	# postgresql-server-dev-all (pg_buildext)
	. test/citus.sh
	install "postgresql-$PG_VERSION" "postgresql-server-dev-$PG_VERSION" "postgresql-$PG_VERSION-pgtap" "postgresql-$PG_VERSION-cron" \
		libtap-parser-sourcehandler-pgtap-perl make gcc gzip sed python3 patch build-essential debhelper postgresql-server-dev-all \
		$(citus_build_packages "$PG_VERSION")
fi
resolve_pg_version

make -s PG_CONFIG="$PG_CONFIG"
$SUDO make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
echo "setup: qidrisk built and installed for $("$PG_CONFIG" --version)"
