"""Table of bench/ab.sh: each ratio's median over rounds, before and after.

python3 bench/ab.py SCRATCH ROUNDS PARALLEL_ROWS COMMAND reads the folders
bench/ab.sh recorded in SCRATCH (run-SIDE-ROUND.dir: bench/run.sh's results,
parallel-SIDE-ROUND.dir: bench/parallel.sh's), computes every ratio the way
bench/report.py and bench/parallel.py do, and prints a Markdown table: the
median over rounds before and after, AFTER/BEFORE, and each side's smallest and
largest round (the run-to-run spread that tells noise).
"""
import os
import statistics
import sys

sys.path.insert(0, 'bench')
import parallel  # noqa: E402
import report  # noqa: E402

SIDES = ('before', 'after')


def read_dir(scratch, kind, side, rnd):
    with open(os.path.join(scratch, f'{kind}-{side}-{rnd}.dir')) as f:
        return f.read().strip()


def sessions(out):
    """(kind, rows label, Session) of each session log in one bench/run.sh results folder:
    kind 'size' (one population size), 'birthday' or 'quantile'."""
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        if name.startswith('session-') and name.endswith('.log') and name[8:-4].isdigit():
            s = report.Session(path)
            yield 'size', report.fmt_rows(s.rows), s
        elif name == 'session-birthday.log':
            yield 'birthday', None, report.Session(path)
        elif name == 'session-quantile.log':
            s = report.Session(path)
            yield 'quantile', report.fmt_rows(int(s.meta['rows'])), s


def run_ratios(out):
    """{label: value} of one bench/run.sh results folder."""
    values = {}
    for kind, rows, s in sessions(out):
        ratios = {'size': report.RATIOS + report.HET_RATIOS, 'quantile': report.QUANTILE_RATIOS}.get(kind, [])
        for n, d, _, _ in ratios:
            values[f'{n}/{d} at {rows} rows'] = report.ratio(s, n, d)
    return values


def run_times(out):
    """{label: median ms} of qidrisk's own variants in one bench/run.sh results folder."""
    values = {}
    for kind, rows, s in sessions(out):
        if kind == 'birthday':
            values['H'] = s.median('H')
        for v in {'size': 'ADF', 'quantile': 'QU'}.get(kind, ''):
            values[f'{v} at {rows} rows'] = s.median(v)
    return values


def parallel_ratios(out, runs):
    """{label: value}: speed-up at 2 workers and share of the bare scan's."""
    times, _ = parallel.read_session(os.path.join(out, 'session.log'), runs)
    _, up = parallel.speedups(times)
    values = {}
    for v in 'XYA':
        values[f'{v}: speed-up at 2 workers'] = up[(v, 2)]
        values[f'{v}: share of the bare scan\'s at 2 workers'] = up[(v, 2)] / up[('C', 2)]
    values['C: speed-up at 2 workers'] = up[('C', 2)]
    return values


def table(title, per_side, meaning, fmt=lambda x: '-' if x is None else f'{x:.2f}', names=None):
    """Markdown rows: label, median before/after, after/before, spreads."""
    labels = list(per_side['before'][0])
    out = [f'| {title} | {meaning} | before (median) | after (median) | after / before | '
           'before, rounds min-max | after, rounds min-max |',
           '|---|---|---:|---:|---:|---:|---:|']
    for label in labels:
        vals = {side: [r[label] for r in per_side[side] if r.get(label) is not None] for side in SIDES}
        med = {side: statistics.median(v) if v else None for side, v in vals.items()}
        change = med['after'] / med['before'] if med['before'] and med['after'] is not None else None
        key = label.split(':')[0].split(' ')[0]
        out.append(f'| {label} | {(names or meaning_of)(key)} | {fmt(med["before"])} | {fmt(med["after"])} | '
                   f'{ratio_fmt(change)} | {spread(vals["before"], fmt)} | {spread(vals["after"], fmt)} |')
    return out


def meaning_of(key):
    if '/' in key:
        n, d = key.split('/')
        return f'{report.NAMES[n]} / {report.NAMES[d]}'
    return {'X': 'singleton_count, near-distinct', 'Y': 'singleton_count(birth_date, sex)',
            'A': 'approx_singleton_count', 'C': 'bare hashing scan'}[key]


def ratio_fmt(x):
    return '-' if x is None else f'{x:.2f}'


def spread(v, fmt):
    return f'{fmt(min(v))}-{fmt(max(v))}' if v else '-'


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    scratch, rounds, parallel_rows, command = argv[1], int(argv[2]), int(argv[3]), argv[4]
    build, load = {}, {}
    for side in SIDES:
        with open(os.path.join(scratch, f'build-{side}.txt')) as f:
            build[side] = f.read().strip().split('|')
    with open(os.path.join(scratch, 'load.txt')) as f:
        for line in f:
            k, v = line.rstrip('\n').split('=', 1)
            load[k] = v
    runs = {side: [run_ratios(read_dir(scratch, 'run', side, r)) for r in range(1, rounds + 1)]
            for side in SIDES}
    lines = [f'Command: `{command}`; {rounds} rounds, the sides alternating (the order swapped '
             'every round); medians over rounds.', '']
    for side in SIDES:
        _, rev, port, lib, md5, mtime, extversion = build[side]
        lines.append(f'- {side}: commit {rev}, server port {port}, {lib} (md5 {md5}, installed {mtime}), '
                     f'extension version {extversion}')
    lines += [f'- load average (1, 5, 15 min): {load["load_start"]} at the start, '
              f'{load["load_end"]} at the end', f'- uptime at the start: {load["uptime_start"].strip()}',
              f'- uptime at the end: {load["uptime_end"].strip()}', '']
    lines += table('bench/run.sh ratio', runs, 'what')
    times = {side: [run_times(read_dir(scratch, 'run', side, r)) for r in range(1, rounds + 1)]
             for side in SIDES}
    lines += ['', 'qidrisk\'s own variants, median ms of each round (absolute times: the two servers '
              'run on the same machine in turn, but other work on it shifts them):', '']
    lines += table('bench/run.sh variant', times, 'what', report.fmt_ms, report.NAMES.get)
    if parallel_rows:
        n = int(os.environ.get('BENCH_RUNS') or 3)
        par = {side: [parallel_ratios(read_dir(scratch, 'parallel', side, r), n)
                      for r in range(1, rounds + 1)] for side in SIDES}
        lines += ['', f'`bench/parallel.sh {parallel_rows} 0`:', '']
        lines += table('bench/parallel.sh', par, 'variant')
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
