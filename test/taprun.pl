#!/usr/bin/perl
# What a test suite proved, for test/suites.sh: each test counts as passed,
# failed or skipped, and a suite that runs no test, or whose runner fails,
# counts as failed.
#   perl test/taprun.pl tap COUNTS TAPLOG COMMAND -- FILE...
#     runs COMMAND FILE for each FILE (pgTAP through psql, test/ops through
#     bash) and parses its TAP stream (TAP::Parser): "ok" passed, "not ok"
#     failed, "ok # SKIP" skipped; "not ok # TODO" (a known gap that proved
#     nothing) skipped, "ok # TODO" passed; "1..0 # SKIP reason" skips the
#     file, "1..0" without a reason fails it; planned tests that did not run,
#     a bad plan, a bail out or a non-zero exit fail.  Every TAP line goes to
#     TAPLOG, one line per file to the terminal, with the failed tests and
#     their diagnostics.
#   perl test/taprun.pl regress COUNTS LOG STATUS NAME...
#     reads pg_regress's LOG ("test NAME ... ok" up to 15, TAP "ok 1 - NAME"
#     from 16) for the tests NAME...: "ok" passed, "FAILED" or "not ok"
#     failed, a test not reported did not run and failed; STATUS is make
#     installcheck's exit status, a failure when not 0.
# COUNTS gets "PASSED FAILED SKIPPED" on its first line, then one line per
# skipped test or file ("skipped: WHERE: reason") and failure ("failed: ...").
use strict;
use warnings;
use TAP::Parser;
use Time::HiRes qw(time);

my ($mode, $counts_file) = splice(@ARGV, 0, 2);
my ($passed, $failed, $skipped) = (0, 0, 0);
my (@skips, @failures);

# Note a failure, with what failed
sub fail_with
{
	my ($count, $what) = @_;
	$failed += $count;
	push @failures, $what;
}

# Run one TAP file and count its tests
sub run_tap
{
	my ($command, $file, $log) = @_;
	my $started = time;
	my $parser = TAP::Parser->new({ exec => [ @$command, $file ] });
	my ($p, $f, $s) = ($passed, $failed, $skipped);
	my ($skip_all, $bailout, $in_failure, @shown);

	print $log "# $file\n";
	while (my $r = $parser->next)
	{
		print $log $r->as_string, "\n";
		if ($r->is_plan && $r->tests_planned == 0)
		{
			$skip_all = $r->has_skip && $r->explanation ne '' ? $r->explanation : undef;
			if (!defined $skip_all)
			{
				fail_with(1, "$file: planned no test and gave no reason to skip");
				push @shown, $r->as_string;
			}
		}
		elsif ($r->is_test)
		{
			my $name = join(' ', grep { defined && $_ ne '' } $r->number, $r->description);

			$in_failure = 0;
			if ($r->has_skip && $r->is_actual_ok)
			{
				$skipped++;
				push @skips, "$file: $name: " . ($r->explanation || '(no reason given)');
			}
			elsif ($r->has_todo)
			{
				# a TODO that fails proved nothing; one that passes holds
				if ($r->is_actual_ok)
				{
					$passed++;
				}
				else
				{
					$skipped++;
					push @skips, "$file: $name: TODO " . ($r->explanation || '(no reason given)');
				}
			}
			elsif ($r->is_actual_ok)
			{
				$passed++;
			}
			else
			{
				fail_with(1, "$file: $name");
				push @shown, $r->as_string;
				$in_failure = 1;
			}
		}
		elsif ($r->is_bailout)
		{
			$bailout = "$file: Bail out! " . $r->explanation;
		}
		elsif ($r->is_comment && $in_failure)
		{
			push @shown, $r->as_string;
		}
	}

	my $first_problem = @failures;
	my $missing = ($parser->tests_planned // 0) - $parser->tests_run;
	if ($missing > 0)
	{
		fail_with($missing, "$file: $missing planned tests did not run");
	}
	elsif ($parser->parse_errors && $failed == $f)
	{
		fail_with(1, "$file: " . join('; ', $parser->parse_errors));
	}
	if (!defined $parser->tests_planned && $parser->tests_run == 0 && $failed == $f)
	{
		fail_with(1, "$file: no plan and no test");
	}
	# why it stopped counts only when no test failed
	for my $why (grep { defined } $bailout,
		$parser->wait != 0 ? "$file: exited with status " . ($parser->exit // $parser->wait) : undef)
	{
		fail_with($failed == $f ? 1 : 0, $why);
	}
	if (defined $skip_all && $failed == $f)
	{
		$skipped++;
		push @skips, "$file: $skip_all";
	}

	printf "%s .. %s: %d passed, %d failed, %d skipped (%.1f s)\n", $file,
		$failed > $f ? 'FAILED' : defined $skip_all ? 'skipped' : 'ok',
		$passed - $p, $failed - $f, $skipped - $s, time - $started;
	print "  skipped: $skip_all\n" if defined $skip_all;
	print "  $_\n" for @shown, @failures[ $first_problem .. $#failures ];
}

# Count the tests of a pg_regress log
sub count_regress
{
	my ($logname, $status, @expected) = @_;
	my (%result, $bailout);

	open(my $log, '<', $logname) or die "test/taprun.pl: $logname: $!\n";
	while (my $line = <$log>)
	{
		# up to 15: "test NAME ... ok", "     NAME ... FAILED" in parallel groups
		if ($line =~ /^(?:test +| {5})(\S+) +\.\.\. +(ok|FAILED|failed \(ignored\))/)
		{
			$result{$1} = $2 eq 'ok';
		}
		# from 16: "ok 1 - NAME", "not ok 2 + NAME"
		elsif ($line =~ /^(not )?ok +\d+ +[-+] +(\S+)/)
		{
			$result{$2} = !defined $1;
		}
		elsif ($line =~ /^Bail out!\s*(.*)/)
		{
			$bailout = "pg_regress: Bail out! $1";
		}
	}
	close($log);
	for my $name (sort keys %result)
	{
		if ($result{$name})
		{
			$passed++;
		}
		else
		{
			fail_with(1, "pg_regress: $name");
		}
	}
	my @absent = grep { !exists $result{$_} } @expected;
	fail_with(scalar @absent, "pg_regress: did not run: @absent") if @absent;
	fail_with(1, 'pg_regress: no test') if !@expected && !%result;
	# why it stopped counts only when no test failed
	for my $why (grep { defined } $bailout,
		$status != 0 ? "pg_regress: make installcheck exited with status $status" : undef)
	{
		fail_with(@failures ? 0 : 1, $why);
	}
}

if ($mode eq 'tap')
{
	my $logname = shift @ARGV;
	my @command;

	push @command, shift @ARGV while @ARGV && $ARGV[0] ne '--';
	shift @ARGV;
	open(my $log, '>', $logname) or die "test/taprun.pl: $logname: $!\n";
	$log->autoflush(1);
	STDOUT->autoflush(1);
	fail_with(1, "no test file for @command") unless @ARGV;
	run_tap(\@command, $_, $log) for @ARGV;
	close($log);
}
elsif ($mode eq 'regress')
{
	count_regress(@ARGV);
}
else
{
	die "usage: test/taprun.pl tap COUNTS TAPLOG COMMAND -- FILE... | regress COUNTS LOG STATUS NAME...\n";
}

open(my $out, '>', $counts_file) or die "test/taprun.pl: $counts_file: $!\n";
print $out "$passed $failed $skipped\n";
print $out "skipped: $_\n" for @skips;
print $out "failed: $_\n" for @failures;
close($out);
