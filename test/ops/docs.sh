#!/bin/bash
# Executable documentation, as TAP (run by test/suites.sh through prove): every
# ```sql block of README.md and docs/*.md runs, page by page and in order, in a
# fresh database made from the example database (data/examples.sql, described
# in docs/examples.md).  A ```text block right after a ```sql block is psql's
# output for it and must match; a block shown without output must not fail.
# One TAP line per block, naming page and line.  Markers (HTML comments):
#   <!-- docs-test: skip ... -->       alone on the line before a ```sql block: not run
#   <!-- docs-test: skip-page ... -->  alone on a line of a page: no block of it runs
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser) and PG_CONFIG's bindir.
# DOCS_PAGES="docs/kmap.md README.md" runs only those pages; DOCS_KEEP=DIR keeps
# each block's output in DIR (for writing docs).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
TEMPLATE=qidrisk_docs_template
PAGEDB=qidrisk_docs_page
tmp=$(mktemp -d)

q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }
# compare outputs without trailing blanks and surrounding empty lines
normalize() { perl -0777 -pe 's/[ \t]+$//mg; s/\A\n+//; s/\n*\z/\n/'; }
cleanup() {
	q -d postgres -c "DROP DATABASE IF EXISTS $PAGEDB" 2>/dev/null
	q -d postgres -c "DROP DATABASE IF EXISTS $TEMPLATE" 2>/dev/null
	rm -rf "$tmp"
}
cleanup
tmp=$(mktemp -d)
trap cleanup EXIT

# the example database, built once and copied for each page
if ! { q -d postgres -c "CREATE DATABASE $TEMPLATE" &&
	q -d $TEMPLATE -f data/examples.sql >"$tmp/examples.log" 2>&1; }; then
	echo "1..1"
	echo "not ok 1 - data/examples.sql loads"
	sed 's/^/# /' "$tmp/examples.log"
	exit 0
fi

fresh_db() {
	q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $PAGEDB" \
		-c "CREATE DATABASE $PAGEDB TEMPLATE $TEMPLATE"
}

# run_page PAGE LABEL: run the page's blocks in $PAGEDB, one TAP line each
run_page() {
	local page=$1 label=$2
	perl - "$page" "$tmp" <<'PERL' || { n=$((n + 1)); echo "not ok $n - $page: cannot parse"; return; }
use strict;
my ($page, $tmp) = @ARGV;
open my $in, '<', $page or die "$page: $!";
my @lines = <$in>;
close $in;
open my $script, '>', "$tmp/page.sql" or die;
open my $list, '>', "$tmp/blocks" or die;
print $script "\\pset footer off\n";
exit 0 if grep { /^<!-- docs-test: skip-page/ } @lines;
my $b = 0;
for (my $i = 0; $i < @lines; $i++) {
	next unless $lines[$i] =~ /^```sql\s*$/;
	my $start = $i + 1;
	$b++;
	my $skip = 0;
	for (my $j = $i - 1; $j >= 0; $j--) {
		next if $lines[$j] =~ /^\s*$/;
		$skip = 1 if $lines[$j] =~ /^<!-- docs-test: skip /;
		last;
	}
	my @sql;
	for ($i++; $i < @lines && $lines[$i] !~ /^```\s*$/; $i++) {
		push @sql, $lines[$i];
	}
	die "$page:$start: unterminated sql block\n" if $i >= @lines;
	my $k = $i + 1;
	$k++ while $k < @lines && $lines[$k] =~ /^\s*$/;
	my $expected = '-';
	if ($k < @lines && $lines[$k] =~ /^```text\s*$/) {
		$expected = "$tmp/expected.$b";
		open my $out, '>', $expected or die;
		for ($k++; $k < @lines && $lines[$k] !~ /^```\s*$/; $k++) {
			print $out $lines[$k];
		}
		close $out;
		$i = $k;
	}
	next if $skip;
	print $script "\\echo '<<<docs-block $b>>>'\n", @sql;
	print $script "\n" unless $sql[-1] =~ /\n$/;
	print $list "$b\t$start\t$expected\n";
}
print $script "\\echo '<<<docs-block end>>>'\n";
PERL
	[ -s "$tmp/blocks" ] || return 0
	# psql's output as a reader sees it: errors without the script's name
	psql -X -q -d $PAGEDB -f "$tmp/page.sql" 2>&1 |
		sed -E 's/^psql:[^:]*:[0-9]+: //' >"$tmp/page.out"
	while IFS=$'\t' read -r b line expected; do
		n=$((n + 1))
		awk -v b="$b" '
			$0 ~ /^<<<docs-block / { on = ($0 == "<<<docs-block " b ">>>"); next }
			on' "$tmp/page.out" >"$tmp/got"
		# DOCS_KEEP=DIR keeps each block's output as DIR/PAGE:LINE (for writing docs)
		if [ -n "${DOCS_KEEP:-}" ]; then
			cp "$tmp/got" "$DOCS_KEEP/${page//\//_}:$line"
		fi
		if [ "$expected" = - ]; then
			if grep -qE '^(ERROR|FATAL|PANIC):' "$tmp/got"; then
				echo "not ok $n - $label$page:$line runs"
				sed 's/^/#   /' "$tmp/got"
			else
				echo "ok $n - $label$page:$line runs"
			fi
		elif diff -u <(normalize <"$expected") <(normalize <"$tmp/got") >"$tmp/diff"; then
			echo "ok $n - $label$page:$line output"
		else
			echo "not ok $n - $label$page:$line output"
			sed 's/^/# /' "$tmp/diff"
		fi
	done <"$tmp/blocks"
}

n=0
pages=${DOCS_PAGES:-"README.md $(ls docs/*.md)"}
for page in $pages; do
	fresh_db
	run_page "$page" ""
done

# In one database, as a reader goes: README, then the pages in the order its
# Documentation section lists them.  A page that needs a fresh copy of the
# example database says so at its top (a "docs-test: fresh-database" marker
# beside the command), and gets one here.
if [ -z "${DOCS_PAGES:-}" ]; then
	fresh_db
	for page in README.md $(sed -n '/^## Documentation/,/^## /p' README.md | grep -o '(docs/[a-z_]*\.md)' | tr -d '()' | awk '!seen[$0]++'); do
		if grep -q '^<!-- docs-test: fresh-database' "$page"; then
			fresh_db
		fi
		run_page "$page" "in sequence: "
	done
fi
echo "1..$n"
