#!/bin/bash
# Run a command on another PostgreSQL major version, in a cached Debian chroot:
#   bash test/chroot.sh TARGET [COMMAND...]
# TARGET is 15 (Debian 12, bookworm), 15-main (bookworm's main suite only,
# without the security suite: an older 15 minor release), 17 (Debian 13,
# trixie) or 18 (Debian unstable, sid).  The chroot is made with debootstrap
# the first time and kept in QIDRISK_CHROOT_CACHE (default
# /var/cache/qidrisk/chroots); a copy of this source tree runs COMMAND in it
# (default: bash test/check.sh host, the suites on the chroot's PostgreSQL).
# Needs root (debootstrap, chroot, mounts); mounts live in a private mount
# namespace and are undone on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${QIDRISK_CHROOT_CACHE:-/var/cache/qidrisk/chroots}
MIRROR=${QIDRISK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${QIDRISK_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

target=${1:?usage: test/chroot.sh 15|15-main|17|18[-fresh] [COMMAND...]}
shift
# NN-fresh: a bare debootstrap, made anew each time, with no package added, as
# a new machine would be (to try the README's commands there)
fresh=
if [[ $target == *-fresh ]]; then
	fresh=1
fi
case "${target%-fresh}" in
15) suite=bookworm major=15 sources="deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main" ;;
15-main) suite=bookworm major=15 sources="deb $MIRROR bookworm main" ;;
17) suite=trixie major=17 sources="deb $MIRROR trixie main
deb $MIRROR trixie-updates main
deb $SECURITY_MIRROR trixie-security main" ;;
18) suite=sid major=18 sources="deb $MIRROR sid main" ;;
*)
	echo "test/chroot.sh: unknown target $target (15, 15-main, 17 or 18, each with -fresh)" >&2
	exit 2
	;;
esac
if [ $# -eq 0 ]; then
	set -- bash test/check.sh host
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "test/chroot.sh: needs root (debootstrap, chroot and mounts)" >&2
	exit 1
fi

# What the chroot holds; a cached chroot made for another list is made again
# (and Citus's build dependencies where test/ops/citus.sh runs: not on 18,
# whose sid packages cannot always install them together; build-essential,
# debhelper and postgresql-server-dev-all build the Debian package of
# test/ops/package.sh)
. test/citus.sh
PACKAGES="postgresql-$major postgresql-server-dev-$major postgresql-$major-pgtap postgresql-$major-cron
libtap-parser-sourcehandler-pgtap-perl make gcc libc6-dev gzip sed python3 procps locales-all patch
build-essential debhelper postgresql-server-dev-all $(citus_build_packages "$major")"
PACKAGES=$(echo $PACKAGES)
if [ -n "$fresh" ]; then
	PACKAGES=
fi
dir="$CACHE/pg$target"
stamp="$sources|$PACKAGES"
# apt in the chroot: sid's Release file may be past its Valid-Until date
APT="apt-get -q -o Acquire::Check-Valid-Until=false -o Acquire::Retries=3"

# in_chroot DIR COMMAND...: run COMMAND in DIR with /proc and a fresh /dev/shm,
# in a private mount namespace so that nothing stays mounted
in_chroot() {
	local root=$1
	shift
	unshare --mount --propagation private -- bash -c '
		root=$1
		shift
		trap "umount -l \"$root/dev/shm\" \"$root/proc\" 2>/dev/null || true" EXIT
		mount -t proc proc "$root/proc"
		mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
		chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
	' in_chroot "$root" "$@"
}

make_chroot() {
	local partial="$dir.partial"
	if ! command -v debootstrap >/dev/null; then
		echo "chroot: installing debootstrap"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	fi
	rm -rf "$dir"
	# a finished debootstrap is kept when installing the packages failed
	if [ ! -f "$partial/.qidrisk-debootstrap" ]; then
		rm -rf "$partial"
		echo "chroot: debootstrap $suite into $dir"
		debootstrap --variant=minbase "$suite" "$partial" "$MIRROR" >"$CACHE/pg$target.log" 2>&1 ||
			{ tail -20 "$CACHE/pg$target.log" >&2; exit 1; }
		touch "$partial/.qidrisk-debootstrap"
	fi
	printf '%s\n' "$sources" >"$partial/etc/apt/sources.list"
	# no cluster is made on installation: the tests make their own
	mkdir -p "$partial/etc/postgresql-common/createcluster.d"
	echo "create_main_cluster = false" >"$partial/etc/postgresql-common/createcluster.d/qidrisk.conf"
	printf '#!/bin/sh\nexit 101\n' >"$partial/usr/sbin/policy-rc.d"
	chmod +x "$partial/usr/sbin/policy-rc.d"
	# sid's Release file may be past its Valid-Until date
	echo 'Acquire::Check-Valid-Until "false";' >"$partial/etc/apt/apt.conf.d/99qidrisk-valid-until"
	if [ -n "$PACKAGES" ]; then
		echo "chroot: installing $PACKAGES"
		in_chroot "$partial" $APT update >>"$CACHE/pg$target.log" 2>&1 &&
			in_chroot "$partial" $APT install -y --no-install-recommends $PACKAGES >>"$CACHE/pg$target.log" 2>&1 ||
			{ tail -20 "$CACHE/pg$target.log" >&2; exit 1; }
		in_chroot "$partial" $APT clean
	fi
	printf '%s\n' "$stamp" >"$partial/.qidrisk-chroot"
	mv "$partial" "$dir"
}

# one maker at a time per chroot
mkdir -p "$CACHE"
exec 9>"$CACHE/pg$target.lock"
flock 9
if [ -n "$fresh" ]; then
	rm -rf "$dir" "$dir.partial"
fi
if [ ! -f "$dir/.qidrisk-chroot" ] || [ "$(cat "$dir/.qidrisk-chroot")" != "$stamp" ]; then
	make_chroot
fi

# qidrisk files an earlier run installed (make install adds, never removes)
rm -rf "$dir"/usr/share/postgresql/*/extension/qidrisk[.-]* "$dir"/usr/lib/postgresql/*/lib/qidrisk.so \
	"$dir"/usr/lib/postgresql/*/lib/bitcode/qidrisk "$dir"/usr/lib/postgresql/*/lib/bitcode/qidrisk.index.bc

# a fresh copy of the source tree, without build products or results
rm -rf "$dir/build/qidrisk"
mkdir -p "$dir/build/qidrisk"
tar -cf - --exclude=./results --exclude=./.git --exclude='*.o' --exclude='*.so' \
	--exclude='*.bc' --exclude=./regression.diffs --exclude=./regression.out . |
	tar -xf - -C "$dir/build/qidrisk"
# the Citus sources test/ops/citus.sh builds, where test/citus.sh looks for
# them by default (../shared/vendor/citus beside the tree), when this machine has them
rm -rf "$dir/build/shared"
if ls "$QIDRISK_CITUS_SOURCES"/citus-*.tar.gz >/dev/null 2>&1; then
	mkdir -p "$dir/build/shared/vendor/citus"
	cp "$QIDRISK_CITUS_SOURCES"/citus-* "$dir/build/shared/vendor/citus/"
fi
status=0
in_chroot "$dir" bash -c 'cd /build/qidrisk && "$@"' command "$@" || status=$?
# results (logs, summary) come back beside this tree's own
if [ -d "$dir/build/qidrisk/results" ]; then
	mkdir -p results
	rm -rf "results/pg$target"
	cp -r "$dir/build/qidrisk/results" "results/pg$target"
fi
exit "$status"
