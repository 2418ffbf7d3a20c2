#!/bin/bash
# Run pg_regress tests (arguments; all by default) against a throwaway server
# running under valgrind's memcheck, then list valgrind's errors.  Exit 1 when
# a regression test fails or when an error has a frame in qidrisk.so.
# The server is Debian's build, without USE_VALGRIND: palloc chunks inside a
# memory context block are not tracked one by one, so only overruns of whole
# blocks (large allocations, our own mmap'd states) and uses of uninitialised
# malloc'd memory are seen.
set -uo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$("$PG_CONFIG" --bindir)
port=${VALGRIND_PORT:-$(( ${PGPORT:-5432} + 100 ))}
tests=${*:-$(cd test/sql && ls *.sql | sed 's/\.sql$//' | tr '\n' ' ')}
# The tests share one database and some leave tables behind (census, survey):
# run them in the suite's order (make's sorted wildcard), whatever order was given
tests=$(printf '%s\n' $tests | LC_ALL=C sort | tr '\n' ' ')
dir=$(mktemp -d /var/tmp/qidrisk_valgrind.XXXXXX)
mkdir -p results
# The server must not run as root
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; su postgres -c "$*"; else bash -c "$*"; fi; }

as_pg "$bindir/initdb -D $dir/data -A trust -U postgres >/dev/null"
as_pg "valgrind --tool=memcheck --quiet --error-limit=no --num-callers=40 --trace-children=no \
	--suppressions=$PWD/test/valgrind.supp --log-file=$dir/vg.%p.log \
	$bindir/postgres -D $dir/data -p $port -k $dir -c fsync=off -c jit=off -c max_connections=20 \
	>$dir/server.log 2>&1 &"
for _ in $(seq 1 180); do
	"$bindir/pg_isready" -q -h "$dir" -p "$port" && break
	sleep 1
done
echo "valgrind server on port $port; tests: $tests"
start=$(date +%s)
make -s installcheck PG_CONFIG="$PG_CONFIG" PGHOST="$dir" PGPORT="$port" PGUSER=postgres REGRESS="$tests" \
	2>&1 | tee results/valgrind_regress.log
regress_ok=$?
grep -q 'FAILED\|failed (ignoring' results/valgrind_regress.log && regress_ok=1
as_pg "$bindir/pg_ctl -D $dir/data -m fast -w -t 600 stop >/dev/null"
echo "regression under valgrind took $(( $(date +%s) - start )) s"

echo "valgrind logs of $(ls "$dir"/vg.*.log | wc -l) server processes"
cat "$dir"/vg.*.log > results/valgrind.log 2>/dev/null
python3 - results/valgrind.log <<'PY'
import re, sys
blocks, cur = [], []
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'==\d+== ?(.*)', line)
    if not m:
        continue
    text = m.group(1)
    if text.strip() == '':
        if cur:
            blocks.append(cur)
        cur = []
    else:
        cur.append(text)
if cur:
    blocks.append(cur)
errors = [b for b in blocks if re.match(r'(Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and dest|Argument|\d+ bytes in)', b[0])]
ours = [b for b in errors if any('qidrisk.so' in l for l in b)]
kinds = {}
for b in errors:
    k = re.sub(r'\d+', 'N', b[0])
    kinds[k] = kinds.get(k, 0) + 1
print(f"valgrind: {len(errors)} errors reported, {len(ours)} with a frame in qidrisk.so")
for k, c in sorted(kinds.items(), key=lambda x: -x[1]):
    print(f"  {c:5d}  {k}")
for b in ours[:20]:
    print('\n'.join(b[:15]))
    print('--')
sys.exit(1 if ours else 0)
PY
vg_ok=$?
rm -rf "$dir"
[ "$regress_ok" -eq 0 ] && [ "$vg_ok" -eq 0 ]
