#!/bin/bash
# docs/reference.md against the catalog, as TAP (run by test/suites.sh through
# prove): in a scratch database with qidrisk installed, the set of (kind, name,
# identity argument types) of the extension's objects in its schema must equal
# the set docs/reference.md lists, one entry each; and every link of the page
# must resolve to a page and a heading of it (GitHub's anchors), an object's
# link to a heading that names it.  An entry is a line
#   * [`name(arg type, ...) → result`](page.md#anchor) (aggregate): what it does.
# with "(aggregate)", "(procedure)", "(view)" or "(type)", or nothing for a
# function; argument names, DEFAULTs and OUT arguments are ignored and type
# names compared as PostgreSQL resolves them (float8 = double precision).
# An object of another kind in the schema (a table, an operator) is reported
# missing: the page cannot list it yet.
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser) and PG_CONFIG's bindir.
# REFERENCE=FILE checks FILE instead of docs/reference.md.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
cd "$(dirname "$0")/../.."
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
REF=${REFERENCE:-docs/reference.md}
DB=qidrisk_reference
tmp=$(mktemp -d)

cleanup() {
	q -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null
	rm -rf "$tmp"
}
cleanup
tmp=$(mktemp -d)
trap cleanup EXIT

echo "1..6"

# The page's entries as SQL rows (entries.sql), lines that look like an entry
# but are not one (malformed), and its links checked against the headings of
# the pages they name (links: one line per broken link; named: one line per
# entry whose heading does not name it).
perl - "$REF" "$tmp" <<'PERL'
use strict;
use warnings;
use utf8;
use open qw(:std :encoding(UTF-8));
use File::Basename qw(dirname);
my ($ref, $tmp) = @ARGV;
open my $in, '<', $ref or die "$ref: $!\n";
my @lines = <$in>;
close $in;

# GitHub's anchor of a heading: its text lower-cased, everything but letters,
# digits, marks, '_', '-' and spaces removed, spaces turned into '-'; a
# repeated anchor gets -1, -2, ...
sub anchors {
	my ($file) = @_;
	my %seen;
	my %heading;
	open my $f, '<', $file or return undef;
	my $fence = 0;
	while (my $l = <$f>) {
		if ($l =~ /^\s*(```|~~~)/) {
			$fence = !$fence;
			next;
		}
		next if $fence;
		next unless $l =~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
		my $text = $1;
		(my $s = $text) =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
		$s =~ s/<[^>]*>//g;
		$s = lc $s;
		$s =~ s/[^\p{L}\p{M}\p{N}_\- ]//g;
		$s =~ s/ /-/g;
		my $a = $s;
		$a = $s . '-' . $seen{$s} if exists $seen{$s};
		$seen{$s}++;
		$heading{$a} = $text;
	}
	close $f;
	return \%heading;
}

my $dir = dirname($ref);
my %pages;
sub heading_of {
	my ($target) = @_;
	my ($path, $frag) = split /#/, $target, 2;
	my $file = $path eq '' ? $ref : "$dir/$path";
	$pages{$file} //= anchors($file) // 0;
	return (0, "no file $file") unless $pages{$file};
	return (1, undef) unless defined $frag;
	return (0, "no heading #$frag in $file") unless exists $pages{$file}{$frag};
	return (1, $pages{$file}{$frag});
}

open my $sql, '>', "$tmp/entries.sql" or die;
open my $bad, '>', "$tmp/malformed" or die;
open my $links, '>', "$tmp/links" or die;
open my $named, '>', "$tmp/named" or die;
my $nlinks = 0;
sub lit { my $s = shift; return 'NULL' unless defined $s; $s =~ s/'/''/g; return "'$s'"; }
for my $i (0 .. $#lines) {
	my $l = $lines[$i];
	my $where = "$ref:" . ($i + 1);
	while ($l =~ /\]\(([^)\s]+)\)/g) {
		my $target = $1;
		next if $target =~ m{^[a-z]+:};
		$nlinks++;
		my ($found, $why) = heading_of($target);
		print $links "$where: $target: $why\n" unless $found;
	}
	next unless $l =~ /^\* \[`/;
	unless ($l =~ /^\* \[`([^`]+)`\]\(([^)\s]+)\)(?: \((aggregate|procedure|view|type)\))?: \S/) {
		print $bad "$where: $l";
		next;
	}
	my ($sig, $target, $kind) = ($1, $2, $3 // 'function');
	my ($name, $args);
	if ($kind eq 'view' || $kind eq 'type') {
		unless ($sig =~ /^([a-z_][a-z0-9_]*)$/) {
			print $bad "$where: $l";
			next;
		}
		$name = $1;
	} else {
		unless ($sig =~ /^([a-z_][a-z0-9_]*)\((.*?)\)(?: → .*)?$/) {
			print $bad "$where: $l";
			next;
		}
		($name, $args) = ($1, $2);
	}
	# the heading an entry links to names it
	my ($found, $heading) = heading_of($target);
	if ($found && defined $heading) {
		my $names = defined $args ? index($heading, "`$name(") >= 0 : $heading =~ /\b\Q$name\E\b/;
		print $named "$where: $name links to \"$heading\"\n" unless $names;
	} elsif ($found) {
		print $named "$where: $name links to a page, not a heading\n";
	}
	# identity arguments: [VARIADIC] [name] type, DEFAULTs and OUT ones dropped
	my @types;
	for my $arg (defined $args ? split(/,\s*/, $args) : ()) {
		$arg =~ s/\s+DEFAULT\s.*$//;
		$arg =~ s/^\s+|\s+$//g;
		next if $arg eq '' || $arg =~ /^OUT\s/;
		$arg =~ s/^IN\s+//;
		my $variadic = $arg =~ s/^VARIADIC\s+// ? 'true' : 'false';
		push @types, "(" . lit($arg) . ", $variadic)";
	}
	my $list = @types ? 'ARRAY[' . join(', ', map { "ROW$_" } @types) . ']::pg_temp.arg[]' : (defined $args ? "'{}'::pg_temp.arg[]" : 'NULL');
	print $sql "(" . join(', ', lit($kind), lit($name), $list, lit($where)) . "),\n";
}
print $links "$ref: no link\n" unless $nlinks;
PERL

# the page's entries, each argument resolved to its type as a call would
# (a leading word that leaves a type is the argument's name)
{
	cat <<'SQL'
SET client_min_messages = warning;
CREATE TYPE pg_temp.arg AS (decl text, is_variadic boolean);
CREATE FUNCTION pg_temp.type_of(t text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN pg_catalog.format_type(pg_catalog.to_regtype(t), NULL);
EXCEPTION WHEN OTHERS THEN
	RETURN NULL;
END $$;
CREATE TEMP TABLE listed (kind text, name text, args pg_temp.arg[], line text);
INSERT INTO listed VALUES
SQL
	cat "$tmp/entries.sql"
	echo "(NULL, NULL, NULL, NULL);"
	cat <<'SQL'
DELETE FROM listed WHERE line IS NULL;
CREATE TEMP VIEW listed_ids AS
SELECT l.kind || ' ' || l.name || CASE WHEN l.args IS NULL THEN '' ELSE '(' || coalesce((
	SELECT string_agg(CASE WHEN a.is_variadic THEN 'VARIADIC ' ELSE '' END ||
		coalesce(pg_temp.type_of(regexp_replace(a.decl, '^\S+\s+', '')), pg_temp.type_of(a.decl), '?' || a.decl || '?'),
		', ' ORDER BY a.i)
	FROM unnest(l.args) WITH ORDINALITY a(decl, is_variadic, i)), '') || ')' END AS id, l.line
FROM listed l;
-- the extension's own objects in its schema
CREATE TEMP VIEW catalog_ids AS
WITH e AS (SELECT oid, extnamespace FROM pg_extension WHERE extname = 'qidrisk'),
m AS (SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, e
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e')
SELECT CASE p.prokind WHEN 'a' THEN 'aggregate' WHEN 'p' THEN 'procedure' WHEN 'w' THEN 'window function' ELSE 'function' END
	|| ' ' || p.proname || '(' || coalesce((
	SELECT string_agg(CASE WHEN p.provariadic <> 0 AND a.i = p.pronargs THEN 'VARIADIC ' ELSE '' END ||
		format_type(a.t, NULL), ', ' ORDER BY a.i)
	FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, i)), '') || ')' AS id
FROM m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid, e
WHERE p.pronamespace = e.extnamespace
UNION ALL
SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'm' THEN 'materialized view'
	WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table' ELSE 'relation' END || ' ' || c.relname
FROM m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid, e
WHERE c.relnamespace = e.extnamespace
UNION ALL
SELECT 'type ' || t.typname
FROM m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid, e
WHERE t.typnamespace = e.extnamespace
	-- array types and a view's row type go with their type or view (17 lists them as members)
	AND t.typcategory <> 'A'
	AND NOT (t.typrelid <> 0 AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) <> 'c')
UNION ALL
SELECT o.type || ' ' || o.identity
FROM m, e, pg_identify_object(m.classid, m.objid, m.objsubid) o
WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_type'::regclass)
	AND o.schema = (SELECT nspname FROM pg_namespace WHERE oid = e.extnamespace);
\o :tmp/missing
SELECT id FROM catalog_ids EXCEPT SELECT id FROM listed_ids ORDER BY 1;
\o :tmp/extra
SELECT line || ': ' || id FROM listed_ids WHERE id NOT IN (SELECT id FROM catalog_ids) ORDER BY 1;
\o :tmp/twice
SELECT string_agg(line, ', ' ORDER BY line) || ': ' || id FROM listed_ids GROUP BY id HAVING count(*) > 1 ORDER BY 1;
\o :tmp/counts
SELECT (SELECT count(*) FROM catalog_ids) || ' objects, ' || (SELECT count(*) FROM listed_ids) || ' entries';
SQL
} >"$tmp/check.sql"

if ! { q -d postgres -c "CREATE DATABASE $DB" && q -d $DB -c "CREATE EXTENSION qidrisk"; } >"$tmp/psql.log" 2>&1 ||
	! q -d $DB -v tmp="$tmp" -f "$tmp/check.sql" >"$tmp/psql.log" 2>&1; then
	sed 's/^/# /' "$tmp/psql.log"
fi

# listed FILE NAME: one TAP line, ok when FILE was written and is empty
listed() {
	local got="(not computed)"
	[ -f "$1" ] && got=$(cat "$1")
	ok "$got" "" "$2"
}
listed "$tmp/malformed" "every entry line of $REF is well formed: signature, link, kind, text"
listed "$tmp/missing" "$REF lists every function, aggregate, procedure, view and type of the extension's schema"
listed "$tmp/extra" "$REF lists nothing that is not in the extension's schema"
listed "$tmp/twice" "$REF lists each object once"
listed "$tmp/links" "every link of $REF resolves to a page and a heading"
listed "$tmp/named" "each entry of $REF links to a heading that names it"
[ -f "$tmp/counts" ] && sed 's/^/# /' "$tmp/counts"
exit 0
