"""Report of bench/parallel.sh: medians, speed-ups and the bare scan's share.

python3 bench/parallel.py population|shapes --log LOG ... writes the part's
section of the page (bench/section.py) and prints it.  The log is psql's output
of a session in which every timed query follows a line "VARIANT CASE WORKERS".
"""
import argparse
import re
import statistics
import sys

sys.path.insert(0, 'bench')
from section import write_section  # noqa: E402

WORKERS = (0, 1, 2)
GOAL = 1.6


def read_session(log, runs):
    """Timings {(case, workers): [ms]} and answers {case: {answer}} of a session log."""
    times, answers, key = {}, {}, None
    for line in open(log).read().splitlines():
        m = re.match(r'VARIANT (\S+) (\d)', line)
        if m:
            key = (m.group(1), int(m.group(2)))
            continue
        m = re.match(r'Time: ([0-9.]+) ms', line)
        if m and key:
            times.setdefault(key, []).append(float(m.group(1)))
            continue
        if key and line.strip() and not line.startswith('Timing is'):
            answers.setdefault(key[0], set()).add(line.strip())
    for k, t in times.items():
        if len(t) != runs:
            sys.exit(f'parallel: expected {runs} timings of {k}, got {t}')
    for case in {k[0] for k in times}:
        if len(answers.get(case, ())) != 1:
            sys.exit(f'parallel: {case} gave different answers: {answers.get(case)}')
    return times, {case: next(iter(a)) for case, a in answers.items()}


def speedups(times):
    """Medians {(case, workers): ms} and speed-ups over 0 workers {(case, workers): x}."""
    med = {k: statistics.median(t) for k, t in times.items()}
    return med, {(c, w): med[(c, 0)] / med[(c, w)] for (c, w) in med}


def share(times, case, scan, w):
    """The median over rounds of each round's speed-up of case as a share of scan's (the same
    round's runs, taken close together), and the range"""
    shares = [(c0 / cw) / (s0 / sw) for c0, cw, s0, sw in
              zip(times[(case, 0)], times[(case, w)], times[(scan, 0)], times[(scan, w)])]
    return f'{statistics.median(shares):.0%} ({min(shares):.0%}-{max(shares):.0%})'


def preamble(args, command, table, what):
    return (f'Produced by `{command}` on the server in PGHOST/PGPORT; qidrisk at commit {args.commit}; '
            f'load average (1, 5, 15 min) {args.load_start} at the start, {args.load_end} at the end '
            f'(two shared cores). Table `{table}`{what}; workers set by `max_parallel_workers_per_gather`, '
            'the leader participating; one session, one warm-up each, then '
            f'{args.runs} runs per case, interleaved; medians in ms.')


def goal_line(what, x):
    return (f'Goal "2 workers at least {GOAL}x faster than 0", {what}: {x:.2f}x - '
            f'**{"met" if x >= GOAL else "not met"}**.')


def launch_line(args):
    """What starting workers costs: the probe's medians at 0, 1 and 2 workers."""
    times, _ = read_session(args.launch, args.runs)
    med, _ = speedups(times)
    ms = ' / '.join(f'{med[("L", w)]:,.1f}' for w in WORKERS)
    return ('Starting workers: a parallel count of a one-row table, in a session of its own, takes '
            f'{ms} ms at 0 / 1 / 2 workers '
            '(medians): the part of a parallel run that does not shrink with workers.')


def population(args):
    times, answers = read_session(args.log, args.runs)
    med, up = speedups(times)
    mem = {}
    for line in open(args.memory):
        v, w, kb = line.split()
        mem[(v, int(w))] = int(kb)
    rows = args.rows
    names = {'X': 'singleton_count (exact)', 'Y': 'singleton_count(birth_date, sex) (exact)',
             'A': 'approx_singleton_count', 'C': 'bare hashing scan'}
    title = 'Parallel scaling' if rows == 10000000 else f'Parallel scaling at {rows:,} rows'
    out = ['## ' + title, '',
           preamble(args, f'bash bench/parallel.sh {rows}', f'bench_pop_{rows}', '') +
           ' Share of the bare scan: the speed-up over the bare scan\'s at the same workers, taken '
           'round by round (the median of the rounds\' shares, their range in brackets). '
           'Peak memory: VmHWM of the leader backend in a fresh session (resident pages, shared '
           'buffers it touched included; workers are separate processes and not included).', '',
           '| variant | workers | median ms | runs (ms) | speed-up vs 0 workers | share of the bare scan\'s | '
           'leader peak memory |',
           '|---|---:|---:|---|---:|---:|---:|']
    for v in 'XYAC':
        for w in WORKERS:
            peak = f'{mem[(v, w)] / 1024:,.0f} MB' if (v, w) in mem else ''
            out.append(f'| {names[v]} | {w} | {med[(v, w)]:,.0f} | '
                       f'{", ".join(f"{x:,.0f}" for x in times[(v, w)])} | {up[(v, w)]:.2f} | '
                       f'{share(times, v, "C", w)} | {peak} |')
    out += ['', f'Answers: X = {answers["X"]}, Y = {answers["Y"]} and A = {answers["A"]} on every run.',
            goal_line('near-distinct QID', up[('X', 2)]),
            goal_line('QID of about 65,000 classes', up[('Y', 2)]),
            f'The bare scan itself gains {up[("C", 2)]:.2f}x from 2 workers on this machine.',
            launch_line(args)]
    return 'parallel' if rows == 10000000 else f'parallel-{rows}', out


def shapes(args):
    times, answers = read_session(args.log, args.runs)
    med, up = speedups(times)
    rows = args.rows
    regimes = []
    for line in open(args.shapes):
        r, columns, counts = line.strip().split('|', 2)
        classes, singletons = (int(x) for x in counts.split('|'))
        if answers[f'{r}.E'] != str(singletons):
            sys.exit(f'parallel: singleton_count({columns}) = {answers[r + ".E"]}, GROUP BY says {singletons}')
        regimes.append((r, columns, classes, singletons))
    names = {'E': 'singleton_count (exact)', 'A': 'approx_singleton_count', 'C': 'bare hashing scan'}
    title = ('Parallel scaling by class count' if rows == 4000000
             else f'Parallel scaling by class count at {rows:,} rows')
    out = ['## ' + title, '',
           preamble(args, f'bash bench/parallel.sh 0 {rows}', f'bench_qidshape_{rows}',
                    f' ({rows:,} rows from `bench/qidshape.sql`: a date `d`, a 0/1 integer `s`, a '
                    'power-law skewed integer ZIP `zip`, and coarser columns derived from them)') +
           ' Classes and singletons by a serial `GROUP BY`; singleton_count returned the same '
           'singletons on every run. Share: the variant\'s speed-up over the bare scan\'s (the '
           'same columns, the same workers), taken round by round: the median of the rounds\' '
           'shares, their range in brackets.', '',
           '| QID | classes | singletons | variant | ms at 0 / 1 / 2 workers | speed-up 1 worker | '
           'speed-up 2 workers | share at 1 | share at 2 |',
           '|---|---:|---:|---|---|---:|---:|---:|---:|']
    for r, columns, classes, singletons in regimes:
        for v in 'EAC':
            c = f'{r}.{v}'
            out.append(f'| ({columns}) | {classes:,} | {singletons:,} | {names[v]} | '
                       f'{" / ".join(f"{med[(c, w)]:,.0f}" for w in WORKERS)} | '
                       f'{up[(c, 1)]:.2f} | {up[(c, 2)]:.2f} | '
                       f'{share(times, c, r + ".C", 1)} | {share(times, c, r + ".C", 2)} |')
    near = regimes[0]
    out += ['', goal_line(f'near-distinct {rows:,}-row shape ({near[1]}), singleton_count',
                          up[(near[0] + '.E', 2)]), launch_line(args)]
    return 'parallel-shapes' if rows == 4000000 else f'parallel-shapes-{rows}', out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('part', choices=('population', 'shapes'))
    for option in ('log', 'memory', 'shapes', 'launch', 'doc', 'commit', 'load-start', 'load-end'):
        parser.add_argument('--' + option)
    parser.add_argument('--rows', type=int, required=True)
    parser.add_argument('--runs', type=int, required=True)
    args = parser.parse_args()
    name, out = (population if args.part == 'population' else shapes)(args)
    section = '\n'.join(out) + '\n'
    write_section(args.doc, name, section)
    print(section)


if __name__ == '__main__':
    main()
