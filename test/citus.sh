#!/bin/bash
# Citus for the distributed tests and benchmarks (sourced by test/ops/citus.sh
# and bench/citus.sh; Citus is not packaged in Debian).
#
# citus_sources        the source release for the PostgreSQL of PG_CONFIG (or
#                      pg_config on PATH): 13.2.2 for 15 and 16, 14.0.1 for 17
#                      and 18; sets CITUS_VERSION and CITUS_TARBALL, returns 1
#                      (with CITUS_MISSING saying why) when the tarball is absent
# citus_install        builds that release once per PostgreSQL version into
#                      QIDRISK_CITUS_CACHE (default /var/cache/qidrisk/citus),
#                      keyed by the release, the tarball's checksum and the
#                      server's version, and installs it into the server's
#                      directories when it is not installed yet
# citus_cluster DIR PORT
#                      a coordinator (PORT) and two workers (PORT+1, PORT+2),
#                      owned by the postgres user, data under DIR, trust on the
#                      local socket in DIR, fsync off; workers registered
# citus_stop DIR       stops the three servers (immediate)
#
# QIDRISK_CITUS_SOURCES names the directory of the source tarballs (citus-X.tar.gz,
# and citus-13.2.2-pg15.20.patch); by default ../shared/vendor/citus beside this
# source tree.
: "${QIDRISK_CITUS_CACHE:=/var/cache/qidrisk/citus}"
: "${QIDRISK_CITUS_SOURCES:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/vendor/citus}"

# The build dependencies beyond the PostgreSQL server headers (test/setup.sh and
# test/chroot.sh install the same list)
CITUS_BUILD_PACKAGES="libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev libselinux1-dev libxslt1-dev libreadline-dev zlib1g-dev libicu-dev"

# citus_build_packages MAJOR: that list where the suite runs; none on 18, where
# it does not run and sid cannot always install them together
citus_build_packages() {
	if [ "$1" != 18 ]; then
		echo "$CITUS_BUILD_PACKAGES"
	fi
}

citus_pg_config() {
	echo "${PG_CONFIG:-pg_config}"
}

citus_sources() {
	local major
	major=$("$(citus_pg_config)" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
	case "$major" in
	15 | 16) CITUS_VERSION=13.2.2 ;;
	17) CITUS_VERSION=14.0.1 ;;
	18)
		# 14.0.1 supports 18, but the suite has not been run there, and a third cold
		# Citus build would stretch CI past its budget
		if [ "${QIDRISK_CITUS_ON_18:-0}" != 1 ]; then
			CITUS_MISSING="the Citus suite runs on 15 (13.2.2) and 17 (14.0.1); QIDRISK_CITUS_ON_18=1 runs it on 18 with 14.0.1"
			return 1
		fi
		CITUS_VERSION=14.0.1
		;;
	*)
		CITUS_MISSING="no Citus release here supports PostgreSQL $major"
		return 1
		;;
	esac
	CITUS_MAJOR=$major
	CITUS_TARBALL="$QIDRISK_CITUS_SOURCES/citus-$CITUS_VERSION.tar.gz"
	if ! [ -f "$CITUS_TARBALL" ]; then
		CITUS_MISSING="the Citus $CITUS_VERSION source tarball is not at $CITUS_TARBALL (set QIDRISK_CITUS_SOURCES)"
		return 1
	fi
}

# install_missing PACKAGE...: apt-get install the packages not yet installed
citus_install_packages() {
	local package missing=()
	for package in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
			missing+=("$package")
		fi
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "# citus: installing ${missing[*]}"
		apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
				--no-install-recommends "${missing[@]}" >/dev/null
	fi
}

# The cached build's directory for this server: release, tarball and server version
citus_cache_dir() {
	local pg_version sum
	pg_version=$("$(citus_pg_config)" --version | sed -n "s/^PostgreSQL \([0-9.]*\).*/\1/p")
	sum=$(sha256sum "$CITUS_TARBALL" | cut -c1-12)
	echo "$QIDRISK_CITUS_CACHE/$CITUS_VERSION-pg$pg_version-$sum"
}

# Build into the cache (a DESTDIR tree), one builder at a time
citus_build() {
	local cache=$1 pg_config src patch log
	pg_config=$(citus_pg_config)
	mkdir -p "$QIDRISK_CITUS_CACHE"
	exec 8>"$cache.lock"
	flock 8
	if [ -f "$cache/.done" ]; then
		exec 8>&-
		return 0
	fi
	rm -rf "$cache" "$cache.build"
	mkdir -p "$cache.build"
	log="$cache.build/build.log"
	echo "# citus: building $CITUS_VERSION for $("$pg_config" --version) (log $log)"
	tar -xzf "$CITUS_TARBALL" -C "$cache.build"
	src="$cache.build/citus-$CITUS_VERSION"
	# PostgreSQL 15.20 exports have_createdb_privilege(), which 13.2.2 defines
	# as a static function of its own for 15: rename Citus's copy
	patch="$QIDRISK_CITUS_SOURCES/citus-13.2.2-pg15.20.patch"
	if [ "$CITUS_VERSION" = 13.2.2 ] && [ "$CITUS_MAJOR" = 15 ] &&
		grep -q 'have_createdb_privilege' "$("$pg_config" --includedir-server)/commands/dbcommands.h"; then
		if ! [ -f "$patch" ]; then
			echo "# citus: $patch is needed for $("$pg_config" --version)" >&2
			exec 8>&-
			return 1
		fi
		(cd "$src" && patch -p1 -s <"$patch") >>"$log" 2>&1 || { exec 8>&-; return 1; }
	fi
	if ! (cd "$src" && ./configure PG_CONFIG="$pg_config" &&
		make -j"${QIDRISK_CITUS_JOBS:-2}" with_llvm=no &&
		make install with_llvm=no DESTDIR="$cache.build/root") >>"$log" 2>&1; then
		grep -E "error|Error|\*\*\*" "$log" | tail -10 | cut -c1-300 >&2
		exec 8>&-
		return 1
	fi
	mkdir -p "$cache"
	mv "$cache.build/root" "$cache/root"
	cp "$log" "$cache/build.log"
	rm -rf "$cache.build"
	touch "$cache/.done"
	exec 8>&-
}

citus_install() {
	local cache pkglibdir
	citus_sources || return 1
	citus_install_packages $CITUS_BUILD_PACKAGES patch make gcc || return 1
	cache=$(citus_cache_dir)
	if ! [ -f "$cache/.done" ]; then
		citus_build "$cache" || return 1
	fi
	# install the cached files unless the same ones are installed
	pkglibdir=$("$(citus_pg_config)" --pkglibdir)
	if ! cmp -s "$cache/root$pkglibdir/citus.so" "$pkglibdir/citus.so"; then
		cp -a "$cache/root/." /
	fi
}

# citus_cluster DIR PORT: three servers, the coordinator on PORT
citus_cluster() {
	local dir=$1 port=$2 bindir node p
	bindir=$("$(citus_pg_config)" --bindir)
	mkdir -p "$dir"
	chown postgres "$dir"
	for node in 0 1 2; do
		p=$((port + node))
		su postgres -s /bin/bash -c "'$bindir/initdb' -D '$dir/n$node' -U postgres --auth-local=trust --auth-host=reject" >/dev/null || return 1
		cat >>"$dir/n$node/postgresql.conf" <<CONF
shared_preload_libraries = 'citus'
fsync = off
synchronous_commit = off
full_page_writes = off
listen_addresses = ''
unix_socket_directories = '$dir'
port = $p
max_connections = 60
shared_buffers = 64MB
max_worker_processes = 16
citus.log_distributed_deadlock_detection = off
CONF
		su postgres -s /bin/bash -c "'$bindir/pg_ctl' -D '$dir/n$node' -l '$dir/n$node.log' -w start" >/dev/null || return 1
	done
}

citus_stop() {
	local dir=$1 bindir node
	bindir=$("$(citus_pg_config)" --bindir)
	for node in 0 1 2; do
		if [ -f "$dir/n$node/postmaster.pid" ]; then
			su postgres -s /bin/bash -c "'$bindir/pg_ctl' -D '$dir/n$node' -m immediate stop" >/dev/null 2>&1
		fi
	done
}
