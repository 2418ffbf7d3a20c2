#!/bin/bash
# Install what is missing (Debian 12 packages), then build and install qidrisk.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PACKAGES=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap postgresql-15-cron
	libtap-parser-sourcehandler-pgtap-perl make gcc gzip sed python3)

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi

missing=()
for package in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$package")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

make -s PG_CONFIG="$PG_CONFIG"
$SUDO make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
echo "setup: qidrisk built and installed for $("$PG_CONFIG" --version)"
