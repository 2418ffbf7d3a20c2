#!/bin/bash
# Operations, as TAP: the Debian package.  Builds postgresql-NN-qidrisk from a
# copy of this tree as the README says (dpkg-buildpackage with debian/ and
# pg_buildext; without its build-time tests, which the steps below replace),
# checks what it holds, takes the extension's files that `make install` put in
# this PostgreSQL away, installs the package with dpkg, and runs the pg_regress
# suite against the installed files and the server in PG*.  Then it purges the
# package and puts back what it took away.  The package is kept in results/.
# Needs root (dpkg) and the system's PostgreSQL (/usr/lib/postgresql/NN, where
# the package installs); skips otherwise, and for a major version this
# system's pg_buildext does not build (debian/pgversions, supported-versions).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. test/tap.sh
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config)}
major=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
libdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
package=postgresql-$major-qidrisk

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP needs root (dpkg -i into the system's PostgreSQL)"
	exit 0
fi
if ! command -v dpkg >/dev/null; then
	echo "1..0 # SKIP not a Debian system (no dpkg)"
	exit 0
fi
if [ "$libdir" != "/usr/lib/postgresql/$major/lib" ] || [ "$extdir" != "/usr/share/postgresql/$major/extension" ]; then
	echo "1..0 # SKIP $PG_CONFIG is not the system's PostgreSQL $major (/usr/lib/postgresql/$major), where the package installs"
	exit 0
fi
if ! supported=$(pg_buildext supported-versions 2>&1); then
	echo "1..1"
	echo "not ok 1 - pg_buildext lists the versions to build for (test/setup.sh installs postgresql-server-dev-all)"
	echo "$supported" | sed 's/^/# /'
	exit 0
fi
if ! echo "$supported" | grep -qx "$major"; then
	echo "1..0 # SKIP pg_buildext builds for ${supported//$'\n'/ } here (debian/pgversions and this system's supported versions), not $major"
	exit 0
fi

default=$(sed -n "s/^default_version = '\(.*\)'/\1/p" qidrisk.control)
regress=$(ls test/sql/*.sql | sed 's|^test/sql/||; s|\.sql$||')
echo "1..$((11 + $(echo "$regress" | wc -l)))"

tmp=$(mktemp -d /tmp/qidrisk-package.XXXXXX)
# the extension's files in this installation: what make install put there
installed() {
	ls -d "$libdir/qidrisk.so" "$libdir/bitcode/qidrisk" "$libdir/bitcode/qidrisk.index.bc" \
		"$extdir/qidrisk.control" "$extdir"/qidrisk--*.sql 2>/dev/null
}
cleanup() {
	if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q ' installed$'; then
		dpkg --purge "$package" >/dev/null 2>&1
	fi
	if [ -f "$tmp/saved.tar" ]; then
		tar -xpf "$tmp/saved.tar" -C /
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
# what make install put here, kept to be put back at the end
saved=$(installed | sed 's|^/||')
if [ -n "$saved" ]; then
	tar -cf "$tmp/saved.tar" -C / $saved
fi
# a package an interrupted run left installed goes first
if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q ' installed$'; then
	echo "# purging $package, left installed by an earlier run"
	dpkg --purge "$package" >/dev/null
fi

# 1. build, in a copy of the tree, as a user would (without test results or build products)
mkdir "$tmp/qidrisk"
tar -cf - --exclude=./results --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	--exclude=./regression.diffs --exclude=./regression.out . | tar -xf - -C "$tmp/qidrisk"
(cd "$tmp/qidrisk" && env -u PG_CONFIG DEB_BUILD_OPTIONS="nocheck noautodbgsym" \
	dpkg-buildpackage -us -uc -b -Pnocheck) >"$tmp/build.log" 2>&1
status=$?
debs=$(cd "$tmp" && ls *.deb 2>/dev/null)
ok "$status $debs" "0 ${package}_${default}_$(dpkg --print-architecture).deb" \
	"dpkg-buildpackage builds $package and nothing else"
# without a package the other tests cannot run (each counts as failed)
if [ "$status" -ne 0 ] || [ ! -f "$tmp/${package}_${default}_$(dpkg --print-architecture).deb" ]; then
	tail -30 "$tmp/build.log" | sed 's/^/# /'
	exit 1
fi
deb="$tmp/${package}_${default}_$(dpkg --print-architecture).deb"
mkdir -p results && cp "$deb" results/ 2>/dev/null
files=$(dpkg-deb --fsys-tarfile "$deb" 2>/dev/null | tar -tf - 2>/dev/null | grep -v '/$' | sed 's|^\./|/|' | LC_ALL=C sort)

# 2. what it holds
ok "$(dpkg-deb -f "$deb" Version 2>&1)" "$default" "the package's version is the control file's default_version"
ok "$(echo "$files" | sed -n "s|^$extdir/||p")" \
	"$({ echo qidrisk.control; echo "qidrisk--$default.sql"; ls sql/qidrisk--*--*.sql | sed 's|^sql/||'; } | LC_ALL=C sort)" \
	"the extension directory gets the control file, the install script of $default and the upgrade scripts, no earlier release's install script"
ok "$(echo "$files" | grep -c "^$libdir/qidrisk\.so$")" "1" "the package holds qidrisk.so"
ok "$(echo "$files" | grep -v -e "^$libdir/" -e "^$extdir/" -e "^/usr/share/doc/$package/")" "" \
	"every other file is documentation (no data set, no test)"
ok "$(dpkg-deb --fsys-tarfile "$deb" 2>/dev/null | tar -xOf - "./usr/share/doc/$package/copyright" 2>/dev/null |
	grep -c -e '^License: PostgreSQL$' -e '^License: CC-BY-4.0$')" "4" \
	"its copyright file gives the PostgreSQL Licence and the data's CC BY 4.0"

# 3. install it where no make install copy is present
rm -rf $(installed)
ok "$(installed)" "" "no qidrisk file is left in the installation before dpkg -i"
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1
status=$?
ok "$status $(dpkg-query -S "$libdir/qidrisk.so" "$extdir/qidrisk.control" "$extdir/qidrisk--$default.sql" 2>&1 | cut -d: -f1 | sort -u)" \
	"0 $package" "dpkg -i installs it, and it owns qidrisk.so, the control file and the install script"
if [ "$status" -ne 0 ]; then
	sed 's/^/# /' "$tmp/dpkg.log"
	exit 1
fi
ok "$(q -d postgres -c "SELECT string_agg(version, ' ') FROM pg_available_extension_versions WHERE name = 'qidrisk'")" \
	"$default" "the server offers qidrisk $default alone"

# 4. the pg_regress suite against the installed files; make installcheck builds nothing
(cd "$tmp/qidrisk" && make installcheck PG_CONFIG="$PG_CONFIG") >"$tmp/regress.log" 2>&1
for name in $regress; do
	ok "$(grep -c -E "^(test +| {5})$name +\.\.\. +ok|^ok +[0-9]+ +[-+] +$name( |$)" "$tmp/regress.log")" "1" \
		"pg_regress $name passes against the installed package"
done
if [ -s "$tmp/qidrisk/regression.diffs" ]; then
	head -60 "$tmp/qidrisk/regression.diffs" | sed 's/^/# /'
fi
ok "$(ls "$tmp/qidrisk/qidrisk.so" "$tmp/qidrisk/sql/qidrisk--$default.sql" 2>/dev/null)" "" \
	"the suite ran on the package's files (nothing was built in the tree)"

# 5. and it goes away whole
dpkg --purge "$package" >"$tmp/dpkg.log" 2>&1
status=$?
ok "$status$(for f in $files; do [ -e "$f" ] && echo " $f"; done)" "0" "dpkg --purge removes every file it installed"
