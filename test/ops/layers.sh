#!/bin/bash
# The layout of src/, as TAP (run by test/suites.sh through prove): the graph
# of its C files has no circle, and no file of the frequency engine or of the
# generalization lattice is long.
# The graph is derived from the #include lines of the project's headers: a C
# file uses another if a header it includes, directly or through other
# project headers, declares (extern) a function or variable that the other
# defines (at the start of a line, not static) and the file names it outside comments.
# A circle means that no file of it can be read, tested or changed
# without the others (docs/internals.md).  Engine files are src/freq*.c and
# src/freq*.h but frequency.c (the aggregates), lattice files src/lattice*.c
# and src/lattice.h; each stays within MAX_LINES lines.  Needs no server.  SRC=DIR checks DIR instead of src/; VERBOSE=1
# prints the graph.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
cd "$(dirname "$0")/../.."
SRC=${SRC:-src}
MAX_LINES=${MAX_LINES:-1300}

echo "1..3"

# one line per problem found: "circle: a.c -> b.c -> a.c" or "long: file lines"
report=$(perl - "$SRC" "$MAX_LINES" <<'PERL'
use strict;
use warnings;
my ($src, $max) = @ARGV;
opendir(my $dh, $src) or die "$src: $!";
my @files = sort grep { /\.[ch]$/ } readdir $dh;
closedir $dh;
my (%text, %includes);
for my $f (@files) {
	open(my $fh, '<', "$src/$f") or die "$src/$f: $!";
	local $/;
	$text{$f} = <$fh>;
	close $fh;
	$includes{$f} = [grep { exists $text{$_} || -e "$src/$_" } $text{$f} =~ /^#include\s+"([^"]+)"/mg];
}
# without comments and strings, for declarations and definitions
my %code;
for my $f (@files) {
	(my $t = $text{$f}) =~ s{/\*.*?\*/}{ }gs;
	$t =~ s{"(?:\\.|[^"\\])*"}{""}g;
	$code{$f} = $t;
}
my @c = grep { /\.c$/ } @files;
# a header's names: for each name it declares extern, the C files defining it
my %defines;
for my $h (grep { /\.h$/ } @files) {
	for my $decl ($code{$h} =~ /^(?:pg_noreturn\s+)?extern\s+([^;]*);/mg) {
		my ($name) = $decl =~ /(\w+)\s*\(/;
		($name) = $decl =~ /(\w+)\s*(?:\[[^\]]*\])?\s*$/ unless defined $name;
		next unless defined $name;
		for my $cf (@c) {
			$defines{$h}{$name}{$cf} = 1
			  if $code{$cf} =~ /^(?!static\b)[^\n]*\n\Q$name\E\(/m
			  || $code{$cf} =~ /^(?!static\b|extern\b)[A-Za-z_][\w \t*]*\b\Q$name\E\s*(?:=[^=]|;|\[)/m;
		}
	}
}
# the project headers a file includes, directly or through other headers
sub reach {
	my ($f) = @_;
	my (%seen, @todo);
	@todo = @{ $includes{$f} };
	while (@todo) {
		my $h = shift @todo;
		next if $seen{$h}++ || !exists $text{$h};
		push @todo, @{ $includes{$h} };
	}
	return keys %seen;
}
# a file uses a file that defines a name of a header it includes, if it names it
my %uses;
for my $f (@c) {
	my %u;
	for my $h (reach($f)) {
		for my $name (keys %{ $defines{$h} }) {
			next unless $code{$f} =~ /\b\Q$name\E\b/;
			$u{$_} = 1 for grep { $_ ne $f } keys %{ $defines{$h}{$name} };
		}
	}
	$uses{$f} = [sort keys %u];
}
# circles: a depth-first search reports each back edge's circle once
my (%state, @path, %reported);
sub visit {
	my ($f) = @_;
	$state{$f} = 1;
	push @path, $f;
	for my $g (@{ $uses{$f} }) {
		if (($state{$g} // 0) == 1) {
			my @i = grep { $path[$_] eq $g } 0 .. $#path;
			my @circle = (@path[$i[0] .. $#path], $g);
			my $key = join ' ', sort @circle[0 .. $#circle - 1];
			print "circle: ", join(' -> ', @circle), "\n" unless $reported{$key}++;
		}
		elsif (!$state{$g}) {
			visit($g);
		}
	}
	pop @path;
	$state{$f} = 2;
}
visit($_) for grep { !$state{$_} } @c;
for my $f (grep { (/^freq/ && $_ ne 'frequency.c') || /^lattice/ } @files) {
	my $n = () = $text{$f} =~ /\n/g;
	print "long: $f $n\n" if $n > $max;
}
# the graph itself, for the log
if ($ENV{VERBOSE}) { print STDERR "# $_ uses: @{ $uses{$_} }\n" for @c; }
PERL
)
status=$?

ok "$status" 0 "the include graph of $SRC/ is derived"
ok "$(grep '^circle:' <<<"$report")" "" "no circle among the C files of $SRC/"
ok "$(grep '^long:' <<<"$report")" "" "no file of the frequency engine or the lattice over $MAX_LINES lines"
