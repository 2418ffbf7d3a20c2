#!/usr/bin/env python3
"""Parse bench/run.sh session logs (standard library only).

  report.py check SESSION_LOG        every run: A's result = B's, D's = E's,
                                     F's ~ G's; H: the same value every run,
                                     equal to an independent computation
  report.py report OUT_DIR DOC.md    medians, ratios, goals; writes DOC.md

A session log is psql's output of bench/run.sh's session script: marker lines
starting with "@@" (meta data, settings, "@@explain V" before a warm-up plan,
"@@run V R" before a timed run's result and its "Time: X ms" line, and
"@@memory V KB" from the peak-memory pass).  A session per population size
holds A-G; session-birthday.log holds H.
"""
import math
import os
import re
import statistics
import sys

from section import marked_sections

VARIANTS = "ABCDEFG"  # timed per population size, interleaved
MAIN = "ABCDE"  # uniqueness: the first sections of the report
HET = "FG"  # heterogeneity: its own section, with the birthday aggregate H
NAMES = {
    "A": "singleton_count",
    "B": "GROUP BY ... HAVING count(*) = 1",
    "C": "hashing scan",
    "D": "class_profile",
    "E": "class_profile in plain SQL",
    "F": "kl_uniform",
    "G": "kl_uniform in plain SQL",
    "H": "birthday_uniqueness_exact",
    "Q": "quantile_cuts",
    "R": "GROUP BY + running sum(count(*)) OVER (ORDER BY)",
    "S": "quantile_bucket on every row",
    "T": "bare scan of the column",
    "U": "quantile_cuts_approx",
}
QUANTILE = "QRSTU"  # 1-D generalization: a session of its own on the largest table
QUANTILE_RATIOS = [
    ("Q", "R", 1.0, "quantile_cuts vs. GROUP BY with a running sum"),
    ("S", "T", 1.5, "quantile_bucket on every row vs. a bare scan"),
    ("U", "T", 1.3, "quantile_cuts_approx vs. a bare scan"),
]
# (numerator, denominator, goal at 1e7 rows, what the goal is about)
RATIOS = [
    ("A", "B", 0.25, "singleton_count vs. GROUP BY/HAVING"),
    ("A", "C", 4.0, "singleton_count vs. hashing scan"),
    ("D", "E", 0.3, "class_profile vs. its plain-SQL equivalent"),
]
HET_RATIOS = [
    ("F", "G", 0.3, "kl_uniform vs. its plain-SQL equivalent"),
]
GOAL_ROWS = 10_000_000
# F and G sum the same terms in different orders (and in parallel partial
# states), so they agree only to the last few digits.
KL_RTOL = 1e-9
# H against the independent computation in birthday_reference()
BIRTHDAY_RTOL = 1e-9
# "well under a second", read as: a median of at most half a second
BIRTHDAY_GOAL_MS = 500.0
TIME_RE = re.compile(r"^Time: ([0-9.]+) ms")


class Session:
    def __init__(self, path):
        self.path = path
        self.meta = {}
        self.settings = {}
        self.plans = {}
        self.results = {v: {} for v in VARIANTS + "H"}
        self.times = {v: {} for v in VARIANTS + "H"}
        self.memory = {}
        self.serial = {}
        self.errors = []
        self._parse()

    def _parse(self):
        section = None  # ("explain", v) or ("run", v, r)
        body = []
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                line = raw.rstrip("\n")
                if line.startswith("@@"):
                    section, body = self._marker(line, section, body)
                    continue
                if line.startswith(("ERROR:", "psql:")) and "ERROR" in line:
                    self.errors.append(line)
                if section is None:
                    continue
                if section[0] == "run":
                    m = TIME_RE.match(line)
                    if m:
                        _, v, r = section
                        self.times[v][r] = float(m.group(1))
                        self.results[v][r] = "\n".join(body)
                        section, body = None, []
                        continue
                body.append(line)
        self._close(section, body)

    def _marker(self, line, section, body):
        self._close(section, body)
        parts = line.split(" ", 2)
        kind = parts[0][2:]
        if kind == "meta":
            self.meta[parts[1]] = parts[2] if len(parts) > 2 else ""
        elif kind == "setting":
            self.settings[parts[1]] = parts[2] if len(parts) > 2 else ""
        elif kind == "memory":
            self.memory[parts[1]] = int(parts[2])
        elif kind == "serial":
            self.serial[parts[1]] = float(parts[2])
        elif kind == "explain":
            return ("explain", parts[1]), []
        elif kind == "run":
            self.results.setdefault(parts[1], {})
            self.times.setdefault(parts[1], {})
            return ("run", parts[1], int(parts[2])), []
        return None, []

    def _close(self, section, body):
        if section and section[0] == "explain":
            self.plans[section[1]] = [b for b in body if b.strip()]

    @property
    def rows(self):
        return int(self.meta["rows"])

    def median(self, v):
        t = list(self.times[v].values())
        return statistics.median(t) if t else None

    def check(self):
        """Return (ok, message lines) over every check that applies."""
        ok, lines = True, []
        for group_ok, group_lines in self.checks().values():
            ok &= group_ok
            lines.extend(group_lines)
        return ok, lines

    def checks(self):
        """{group: (ok, message lines)}: "main" (errors, A = B, D = E) and
        "FG" for a population session, "H" for the birthday session."""
        if "census_rows" in self.meta:
            return {"H": self.check_birthday()}
        if "smallest_bucket" in self.meta:
            return {"quantile": self.check_quantile()}
        return {"main": self.check_main(), "FG": self.check_close("F", "G", KL_RTOL)}

    def check_main(self):
        lines, ok = [], True
        if self.errors:
            ok = False
            lines.extend(self.errors)
        for a, b in (("A", "B"), ("D", "E")):
            runs = sorted(set(self.results[a]) | set(self.results[b]))
            if not runs:
                ok = False
                lines.append(f"{a}/{b}: no timed runs found")
                continue
            bad = [r for r in runs
                   if self.results[a].get(r) is None
                   or self.results[a].get(r) != self.results[b].get(r)]
            values = {self.results[v].get(r) for v in (a, b) for r in runs}
            if bad or len(values) != 1:
                ok = False
                for r in bad or runs:
                    lines.append(f"MISMATCH run {r}: {a} = {self.results[a].get(r)!r}, "
                                 f"{b} = {self.results[b].get(r)!r}")
            else:
                lines.append(f"{a} = {b} in all {len(runs)} runs: {values.pop()}")
        return ok, lines

    def number(self, v, r):
        try:
            return float(self.results[v][r].strip())
        except (KeyError, ValueError):
            return None

    def check_close(self, a, b, rtol):
        """Every run's a and b are numbers within rtol of each other, and so
        are all runs' values."""
        runs = sorted(set(self.results[a]) | set(self.results[b]))
        if not runs:
            return False, [f"{a}/{b}: no timed runs found"]
        lines, ok = [], True
        values = []
        for r in runs:
            x, y = self.number(a, r), self.number(b, r)
            if x is None or y is None or not rel_close(x, y, rtol):
                ok = False
                lines.append(f"MISMATCH run {r}: {a} = {self.results[a].get(r)!r}, "
                             f"{b} = {self.results[b].get(r)!r} (relative tolerance {fmt_tol(rtol)})")
            else:
                values.extend((x, y))
        if ok and not rel_close(min(values), max(values), rtol):
            ok = False
            lines.append(f"MISMATCH between runs: {a} and {b} range over "
                         f"{min(values)!r} .. {max(values)!r} (relative tolerance {fmt_tol(rtol)})")
        if ok:
            lines.append(f"{a} = {b} to a relative {fmt_tol(rtol)} in all {len(runs)} runs "
                         f"(largest relative difference {rel_diff(min(values), max(values)):.1e}): "
                         + ", ".join(sorted({self.results[v][r].strip()
                                             for v in (a, b) for r in runs})))
        return ok, lines

    def check_quantile(self):
        """Q: the stored cuts in every run, each bucket >= k rows; S: the sum
        width_bucket gives; R, U: a result in every run."""
        lines, ok = list(self.errors), not self.errors
        k = int(self.meta.get("k", 0))
        smallest = int(self.meta.get("smallest_bucket", -1))
        expected_q = f"{self.meta.get('cuts_text')} {self.meta.get('cuts')}"
        expected_s = self.meta.get("width_bucket_sum", "").strip()
        for v, expected in (("Q", expected_q), ("S", expected_s), ("R", None), ("U", None)):
            got = {r: x.strip() for r, x in self.results[v].items()}
            if not got:
                ok = False
                lines.append(f"{v}: no timed runs found")
            elif expected is not None and set(got.values()) != {expected}:
                ok = False
                lines.append(f"MISMATCH {v}: runs gave {sorted(set(got.values()))}, expected {expected}")
            else:
                lines.append(f"{v} in all {len(got)} runs: " + ", ".join(sorted(set(got.values()))))
        if smallest < k:
            ok = False
            lines.append(f"MISMATCH: the smallest bucket of Q's cuts holds {smallest} rows < k = {k}")
        else:
            lines.append(f"every bucket of Q's {self.meta.get('cuts')} cuts holds >= {k} rows "
                         f"(smallest {smallest}); S = the sum of width_bucket over all rows")
        return ok, lines

    def check_birthday(self):
        """H: a probability, the same in every run, equal to the reference."""
        lines, ok = [], True
        if self.errors:
            ok = False
            lines.extend(self.errors)
        runs = sorted(self.results["H"])
        if not runs:
            return False, lines + ["H: no timed runs found"]
        texts = {self.results["H"][r].strip() for r in runs}
        values = [self.number("H", r) for r in runs]
        if any(x is None or not 0 < x <= 1 for x in values) or len(texts) != 1:
            ok = False
            lines.append("MISMATCH: H's runs returned " + ", ".join(repr(t) for t in sorted(texts)))
            return ok, lines
        lines.append(f"H returned the same value in all {len(runs)} runs: {texts.pop()}")
        m, k = int(self.meta["census_rows"]), int(self.meta["k"])
        ref = birthday_reference(m, k)
        if rel_close(values[0], ref, BIRTHDAY_RTOL):
            lines.append(f"H = the independent computation (report.py) to a relative "
                         f"{fmt_tol(BIRTHDAY_RTOL)} (difference {rel_diff(values[0], ref):.1e}): {ref!r}")
        else:
            ok = False
            lines.append(f"MISMATCH: H = {values[0]!r}, the independent computation gives "
                         f"{ref!r} (relative tolerance {fmt_tol(BIRTHDAY_RTOL)})")
        return ok, lines


def fmt_tol(x):
    """1e-09 -> '1e-9'"""
    m, e = f"{x:.0e}".split("e")
    return f"{m}e{int(e)}"


def rel_diff(x, y):
    scale = max(abs(x), abs(y))
    return abs(x - y) / scale if scale else 0.0


def rel_close(x, y, rtol):
    return rel_diff(x, y) <= rtol


def birthday_reference(m, k):
    """k! e_k(p) for the census of bench/run.sh: values 1..m weighted
    1 + (i % 7), p their weights over the total; computed here without the
    extension, from the weight classes.

    With n_c values of weight c and W the total weight, e_k(p) is the
    coefficient of t^k in prod_c (1 + c t / W)^n_c.  Substituting t = s u with
    s = k (so the product's mass lies near degree k) gives factors
    sum_j C(n_c, j) (c s / W)^j u^j; each factor's coefficients are built by
    the ratio recurrence in log space, scaled to a maximum of 1 (the scale kept
    as a log), and multiplied out truncated at degree k.  Then
    k! e_k = k! [u^k] / s^k.
    """
    sizes = {}
    for i in range(1, m + 1):
        c = 1 + i % 7
        sizes[c] = sizes.get(c, 0) + 1
    total = sum(c * n for c, n in sizes.items())
    s = float(k)
    log_scale = 0.0
    product = [1.0]
    for c, n in sorted(sizes.items()):
        top = min(n, k)
        logs = [0.0] * (top + 1)
        step = math.log(c * s / total)
        for j in range(1, top + 1):
            logs[j] = logs[j - 1] + math.log((n - j + 1) / j) + step
        peak = max(logs)
        log_scale += peak
        factor = [math.exp(x - peak) for x in logs]
        # terms below 1e-300 of their factor's peak cannot reach 1e-9 of
        # the result (every other factor is at most 1, and the result is
        # near the product's peak)
        nz = [j for j, x in enumerate(factor) if x > 1e-300]
        lo, hi = nz[0], nz[-1]
        out = [0.0] * min(k + 1, len(product) + hi)
        for i, a in enumerate(product):
            if a == 0.0:
                continue
            for j in range(lo, min(hi, k - i) + 1):
                out[i + j] += a * factor[j]
        peak = max(out)
        log_scale += math.log(peak)
        product = [x / peak for x in out]
    if len(product) <= k or product[k] == 0.0:
        return 0.0
    return math.exp(math.lgamma(k + 1) + math.log(product[k]) + log_scale - k * math.log(s))


def ratio(s, num, den):
    a, b = s.median(num), s.median(den)
    return a / b if a is not None and b else None


def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}"


def fmt_rows(n):
    exp = len(str(n)) - 1
    return f"1e{exp}" if n == 10 ** exp else f"{n:,}"


def plan_shape(plan):
    """Plan nodes top-down as 'A > B > C', with workers and spills noted."""
    nodes = []
    for line in plan:
        text = line.strip()
        if text.startswith("->"):
            text = text[2:].strip()
        elif nodes and line.startswith(" "):
            # detail line of the last node
            m = re.match(r"Workers Launched: (\d+)", text)
            if m:
                workers = m.group(1)
                nodes[-1] += f" [{workers} worker{'' if workers == '1' else 's'} launched]"
            m = re.search(r"Disk Usage: (\d+)kB", text)
            if m and int(m.group(1)) > 0 and "spill" not in nodes[-1]:
                nodes[-1] += " [spills to disk]"
            if text.startswith("Sort Method: external"):
                nodes[-1] += " [external sort]"
            continue
        elif nodes or text.startswith(("Planning", "Execution", "JIT")):
            continue  # summary lines; the top node is the first line
        name = re.sub(r"\s*\((cost|actual)[ =].*$", "", text)
        name = re.sub(r" on \S+", "", name)
        nodes.append(name)
    shape = " > ".join(nodes)
    jit = jit_summary(plan)
    if jit:
        shape += f" (JIT: {jit})"
    return shape


def jit_summary(plan):
    """'inlining, optimization, 123 ms' from a plan's JIT section, or None."""
    if not any(l.startswith("JIT:") for l in plan):
        return None
    parts = []
    for line in plan:
        m = re.match(r"\s+Options: (.*)", line)
        if m:
            opts = dict(o.strip().rsplit(" ", 1) for o in m.group(1).split(","))
            parts.extend(k.lower() for k in ("Inlining", "Optimization") if opts.get(k) == "true")
        m = re.search(r"Total ([0-9.]+) ms", line)
        if m:
            parts.append(f"{float(m.group(1)):,.0f} ms in the leader")
    return ", ".join(parts) or "expressions"


def actual_end(plan, node):
    """Actual total time (ms) of the first plan node named node, or None."""
    for line in plan:
        text = line.strip().lstrip("->").strip()
        if text.startswith(node + " ") or text.startswith(node + "  "):
            m = re.search(r"actual time=[0-9.]+\.\.([0-9.]+)", text)
            if m:
                return float(m.group(1))
    return None


def observations(sessions):
    out = []
    for s in sessions:
        n = fmt_rows(s.rows)
        par = [v for v in MAIN if "Gather" in plan_shape(s.plans.get(v, []))]
        ser = [v for v in MAIN if v not in par]
        out.append(f"- {n} rows: parallel plans for {', '.join(par) or 'none'}"
                   + (f"; serial for {', '.join(ser)}" if ser else "") + ".")
        spill = [v for v in MAIN if "spills to disk" in plan_shape(s.plans.get(v, []))
                 or "external sort" in plan_shape(s.plans.get(v, []))]
        if spill:
            out.append(f"  - Spilling to disk (work_mem = {s.settings.get('work_mem', '?')}): "
                       f"{', '.join(spill)}.")
        for v in "AD":
            plan = s.plans.get(v, [])
            top, gather = actual_end(plan, "Finalize Aggregate"), actual_end(plan, "Gather")
            if top is not None and gather is not None:
                out.append(f"  - {v} ({NAMES[v]}), warm-up plan: {fmt_ms(top - gather)} ms of "
                           f"{fmt_ms(top)} ms in the leader's Finalize Aggregate after the Gather "
                           f"(deserializing and combining the partial states, then the final "
                           f"function).")
        for v in "ABDE":
            ms, med = s.serial.get(v), s.median(v)
            if ms is None or med is None or v not in par:
                continue
            if ms < med:
                out.append(f"  - {v} ({NAMES[v]}) ran faster with a serial plan ({fmt_ms(ms)} ms, "
                           f"one run) than the median of the default parallel plan ({fmt_ms(med)} ms).")
    return out


def cmd_check(path):
    s = Session(path)
    ok, lines = s.check()
    what = (f"census {fmt_rows(int(s.meta['census_rows']))}" if "census_rows" in s.meta
            else f"{fmt_rows(s.rows)} rows")
    for l in lines:
        print(f"bench: {what}: {l}")
    return 0 if ok else 1


def read_kv(path):
    kv = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                kv[k] = v
    return kv


def print_table(table):
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def ratio_verdicts(goal_session, ratios):
    verdicts = []
    for n, d, goal, what in ratios:
        if goal_session is None:
            verdicts.append(f"- {what}: goal {n}/{d} <= {goal} at 1e7 rows: **not measured** "
                            f"(this run did not include 1e7 rows).")
            continue
        x = ratio(goal_session, n, d)
        met = x is not None and x <= goal
        verdicts.append(f"- {what}: goal {n}/{d} <= {goal} at 1e7 rows; measured "
                        f"**{fmt_ratio(x)}** - {'**met**' if met else '**not met**'}.")
    return verdicts


def kl_floor(goal_session, quant):
    """How F and G compare with a bare scan of the same column (T of the
    quantile session on the same table): no aggregate that reads the column
    gets below T/G."""
    if goal_session is None or quant is None or quant.rows != GOAL_ROWS:
        return []
    f, g, t = goal_session.median("F"), goal_session.median("G"), quant.median("T")
    if None in (f, g, t) or t == 0 or g == 0:
        return []
    return [f"  (a bare scan of `birth_date`, T of the 1-D generalization session, takes "
            f"{fmt_ms(t)} ms: F is {f / t:.2f}x T and G {g / t:.2f}x T, so no aggregate that "
            f"reads the column gets much below {t / g:.2f}x G here.)"]


def birthday_verdict(bday):
    goal = (f"goal H well under a second (read as a median of at most "
            f"{BIRTHDAY_GOAL_MS:,.0f} ms)")
    if bday is None or bday.median("H") is None:
        return f"- birthday_uniqueness_exact at M = 1e5, k = 1e3: {goal}: **not measured**."
    ms = bday.median("H")
    met = ms <= BIRTHDAY_GOAL_MS
    return (f"- birthday_uniqueness_exact at M = {fmt_rows(int(bday.meta['census_rows']))}, "
            f"k = {fmt_rows(int(bday.meta['k']))}: {goal}; measured **{fmt_ms(ms)} ms** - "
            f"{'**met**' if met else '**not met**'}.")


def heterogeneity_section(sessions, bday, queries, verdicts, checks):
    """Markdown lines of the section on F, G and H."""
    md = []
    w = md.append
    w("## Heterogeneity and birthday")
    w("")
    w("The distribution aggregates, timed by the same script: "
      "`kl_uniform` (F) against its plain-SQL equivalent (G) on `birth_date` of the same "
      "population tables (uniform over 32,872 dates), and the exact birthday "
      "aggregate (H) on a weighted census table of its own.")
    w("")
    w("### Goals")
    w("")
    w("- At 1e7 rows, `kl_uniform` takes at most **0.3x** the time of its plain-SQL "
      "equivalent (F/G);")
    w(f"- `birthday_uniqueness_exact` over M = 1e5 weighted values with k = 1e3 draws runs "
      f"**well under a second** (H; read here as a median of at most "
      f"{BIRTHDAY_GOAL_MS:,.0f} ms).")
    w("")
    w("Result of this run:")
    w("")
    md.extend(verdicts)
    w("")
    w("### Results")
    w("")
    w("F and G ran in the same psql session per size as A-E, after the same warm-up, "
      "interleaved with them run by run (the rotation covers all seven variants).  Medians "
      "of the timed runs, in ms:")
    w("")
    w("| rows | runs | " + " | ".join(f"{v}: {NAMES[v]}" for v in HET)
      + " | " + " | ".join(f"{n}/{d}" for n, d, _, _ in HET_RATIOS) + " |")
    w("|" + "---:|" * (2 + len(HET) + len(HET_RATIOS)))
    for s in sessions:
        w(f"| {fmt_rows(s.rows)} | {s.meta.get('runs', '?')} | "
          + " | ".join(fmt_ms(s.median(v)) for v in HET) + " | "
          + " | ".join(fmt_ratio(ratio(s, n, d)) for n, d, _, _ in HET_RATIOS) + " |")
    w("")
    w("All timed runs, in ms:")
    w("")
    w("| rows | " + " | ".join(HET) + " |")
    w("|---:|" + "---|" * len(HET))
    for s in sessions:
        cells = [", ".join(fmt_ms(s.times[v][r]) for r in sorted(s.times[v])) for v in HET]
        w(f"| {fmt_rows(s.rows)} | " + " | ".join(cells) + " |")
    w("")
    if bday is not None:
        census = int(bday.meta.get("census_rows", 0))
        g = bday.meta.get("generate_seconds", "?")
        w(f"H ran in a session of its own after the population sizes (it does not depend on "
          f"them): one warm-up (`EXPLAIN ANALYZE`) then {bday.meta.get('runs', '?')} timed runs "
          f"in one connection, over `bench_census_{census}` ({fmt_rows(census)} rows = "
          f"{bday.meta.get('table_size', '?')}, rebuilt by this run in {g} s).")
        w("")
        w("| M (values) | k | runs | median ms | all runs, ms | result |")
        w("|---:|---:|---:|---:|---|---|")
        runs = sorted(bday.times["H"])
        result = ", ".join(sorted({bday.results["H"][r].strip() for r in runs})) or "-"
        w(f"| {fmt_rows(census)} | {fmt_rows(int(bday.meta.get('k', 0)))} | {len(runs)} | "
          f"{fmt_ms(bday.median('H'))} | "
          + ", ".join(fmt_ms(bday.times["H"][r]) for r in runs) + f" | {result} |")
        w("")
    w("Agreement (checked on every timed run; the script fails otherwise):")
    w("")
    w("```")
    md.extend(checks)
    w("```")
    w("")
    w("### Plans")
    w("")
    w("From the warm-up runs, as for A-E above:")
    w("")
    for v in HET:
        w(f"- **{v}** ({NAMES[v]}):")
        for s in sessions:
            w(f"  - {fmt_rows(s.rows)}: {plan_shape(s.plans.get(v, []))}")
    if bday is not None:
        w(f"- **H** ({NAMES['H']}): {plan_shape(bday.plans.get('H', []))}")
    w("")
    last = sessions[-1]
    w(f"<details><summary>Full warm-up plans of F and G at {fmt_rows(last.rows)} rows, "
      f"and of H</summary>")
    w("")
    for v, plan in [(v, last.plans.get(v, [])) for v in HET] + (
            [("H", bday.plans.get("H", []))] if bday is not None else []):
        w(f"{v}:")
        w("")
        w("```")
        md.extend(plan)
        w("```")
        w("")
    w("</details>")
    w("")
    w("### Queries")
    w("")
    for v in HET + "H":
        if v not in queries:
            continue
        w(f"{v}. {NAMES[v]}:")
        w("")
        w("```sql")
        w(queries[v])
        w("```")
        w("")
    if "census" in queries:
        w("H's census table, built once per run of the script:")
        w("")
        w("```sql")
        w(queries["census"])
        w("```")
        w("")
    w(f"G groups the table by `birth_date` to the counts of the m observed dates and sums "
      f"p ln(p m) = p ln(p / (1/m)) over them: the same Kullback-Leibler distance that F "
      f"computes in one pass.  The two sum in different orders (F also across parallel "
      f"partial states), so they are checked to agree to a relative {fmt_tol(KL_RTOL)}, not digit for "
      f"digit.  H is the exact probability k! e_k(p) that k = 1000 draws from the census "
      f"(value i drawn with probability proportional to 1 + i mod 7) are all distinct.  "
      f"There is no practical plain-SQL equivalent (the direct recurrence takes M k "
      f"steps, here 1e8), so `bench/report.py` recomputes it without the extension from the seven "
      f"weight classes (the product of (1 + c t / W)^(n_c) expanded to degree k, in scaled "
      f"floating point) and requires a relative {fmt_tol(BIRTHDAY_RTOL)}.")
    w("")
    return md


def quantile_section(quant, queries, verdicts, checks):
    """Markdown lines of the section on Q-U (1-D generalization)."""
    md = []
    w = md.append
    w("## 1-D generalization")
    w("")
    w("The quantile buckets on `birth_date` of the largest population table "
      "(32,872 dates, so many ties), k = 100, timed by the same script in a session of its "
      "own, the variants interleaved run by run.")
    w("")
    w("### Goals")
    w("")
    w("At 1e7 rows: `quantile_cuts` at most **1.0x** the fastest plain-SQL way to the same "
      "tie-aware boundaries, a `GROUP BY` with a running `sum(count(*)) OVER (ORDER BY ...)` "
      "(Q/R); `quantile_bucket` on every row at most **1.5x** a bare scan of the column (S/T); "
      "`quantile_cuts_approx` at most **1.3x** a bare scan (U/T).")
    w("")
    if quant is None:
        w("Not measured: this run has no quantile session.")
        w("")
        return md
    w("Result of this run:")
    w("")
    md.extend(verdicts)
    w("")
    w("### Results")
    w("")
    w("Medians of the timed runs, in ms:")
    w("")
    w("| rows | runs | " + " | ".join(f"{v}: {NAMES[v]}" for v in QUANTILE)
      + " | " + " | ".join(f"{n}/{d}" for n, d, _, _ in QUANTILE_RATIOS) + " |")
    w("|" + "---:|" * (2 + len(QUANTILE) + len(QUANTILE_RATIOS)))
    w(f"| {fmt_rows(quant.rows)} | {quant.meta.get('runs', '?')} | "
      + " | ".join(fmt_ms(quant.median(v)) for v in QUANTILE) + " | "
      + " | ".join(fmt_ratio(ratio(quant, n, d)) for n, d, _, _ in QUANTILE_RATIOS) + " |")
    w("")
    w("All timed runs, in ms:")
    w("")
    w("| " + " | ".join(QUANTILE) + " |")
    w("|" + "---|" * len(QUANTILE))
    w("| " + " | ".join(", ".join(fmt_ms(quant.times[v][r]) for r in sorted(quant.times[v]))
                        for v in QUANTILE) + " |")
    w("")
    w("Agreement (Q, R and U report the md5 of their cuts and how many; the script fails "
      "when a check does not hold):")
    w("")
    w("```")
    md.extend(checks)
    w("```")
    w("")
    w("R cuts where the running count crosses a multiple of k: the same work as Q's (group the "
      "dates, order them, one pass), but its buckets may fall below k rows at ties and are not "
      "balanced, so its cuts differ from Q's; Q's are checked instead (every bucket >= k rows, "
      "and the mapping S against PostgreSQL's `width_bucket`).")
    w("")
    w("### Plans")
    w("")
    for v in QUANTILE:
        w(f"- **{v}** ({NAMES[v]}): {plan_shape(quant.plans.get(v, []))}")
    w("")
    w("### Queries")
    w("")
    for v in QUANTILE:
        if v in queries:
            w(f"{v}. {NAMES[v]}:")
            w("")
            w("```sql")
            w(queries[v])
            w("```")
            w("")
    return md


def cmd_report(out, doc):
    sessions = []
    bday = None
    quant = None
    for name in os.listdir(out):
        m = re.match(r"session-(\d+)\.log$", name)
        if m:
            sessions.append(Session(os.path.join(out, name)))
        elif name == "session-birthday.log":
            bday = Session(os.path.join(out, name))
        elif name == "session-quantile.log":
            quant = Session(os.path.join(out, name))
    sessions.sort(key=lambda s: s.rows)
    if not sessions:
        print("report: no session logs in " + out, file=sys.stderr)
        return 1
    machine = read_kv(os.path.join(out, "machine.txt"))
    queries = {}
    for v in list(VARIANTS + "H" + QUANTILE) + ["census"]:
        path = os.path.join(out, "queries", v + ".sql")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                queries[v] = f.read().strip()

    all_ok = True
    checks, het_checks = [], []
    for s in sessions:
        for group, (ok, lines) in s.checks().items():
            all_ok &= ok
            (checks if group == "main" else het_checks).extend(
                f"{fmt_rows(s.rows)} rows: {l}" for l in lines)
    if bday is None:
        all_ok = False
        het_checks.append("H: no birthday session (session-birthday.log) found")
    else:
        ok, lines = bday.check()
        all_ok &= ok
        het_checks.extend(f"census {fmt_rows(int(bday.meta.get('census_rows', 0)))}: {l}"
                          for l in lines)

    # --- console tables ---
    head = ["rows", "runs"] + [f"{v} ms" for v in MAIN] + [f"{n}/{d}" for n, d, _, _ in RATIOS]
    table = [head]
    for s in sessions:
        table.append([fmt_rows(s.rows), s.meta.get("runs", "?")]
                     + [fmt_ms(s.median(v)) for v in MAIN]
                     + [fmt_ratio(ratio(s, n, d)) for n, d, _, _ in RATIOS])
    print_table(table)
    het_table = [["rows", "runs"] + [f"{v} ms" for v in HET]
                 + [f"{n}/{d}" for n, d, _, _ in HET_RATIOS]]
    for s in sessions:
        het_table.append([fmt_rows(s.rows), s.meta.get("runs", "?")]
                         + [fmt_ms(s.median(v)) for v in HET]
                         + [fmt_ratio(ratio(s, n, d)) for n, d, _, _ in HET_RATIOS])
    print_table(het_table)
    if bday is not None:
        print(f"H ms (median of {bday.meta.get('runs', '?')}): {fmt_ms(bday.median('H'))}")

    # --- goals ---
    goal_session = next((s for s in sessions if s.rows == GOAL_ROWS), None)
    verdicts = ratio_verdicts(goal_session, RATIOS)
    het_verdicts = ratio_verdicts(goal_session, HET_RATIOS) + [birthday_verdict(bday)]
    quant_checks, quant_verdicts = [], []
    if quant is None:
        all_ok = False
        quant_checks.append("Q-U: no quantile session (session-quantile.log) found")
    else:
        ok, quant_checks = quant.check()
        all_ok &= ok
        quant_verdicts = ratio_verdicts(quant if quant.rows == GOAL_ROWS else None,
                                        QUANTILE_RATIOS)
        het_verdicts[0:1] += kl_floor(goal_session, quant)
        print_table([["rows", "runs"] + [f"{v} ms" for v in QUANTILE]
                     + [f"{n}/{d}" for n, d, _, _ in QUANTILE_RATIOS],
                     [fmt_rows(quant.rows), quant.meta.get("runs", "?")]
                     + [fmt_ms(quant.median(v)) for v in QUANTILE]
                     + [fmt_ratio(ratio(quant, n, d)) for n, d, _, _ in QUANTILE_RATIOS]])
    for v in verdicts + het_verdicts + quant_verdicts:
        print(v.replace("**", ""))

    # --- document ---
    first = sessions[0]
    settings = sessions[-1].settings
    md = []
    w = md.append
    w("# Benchmarks")
    w("")
    # test/ops/docs.sh runs the docs' examples; these are measurements
    w("<!-- docs-test: skip-page (measurements, not examples: see docs/examples.md) -->")
    w("")
    w("Generated by `bench/run.sh` (with `bench/report.py`); rerun it to refresh this page.")
    w("The figures below are from one run of the command shown.")
    w("")
    w("## Goals")
    w("")
    w("At 1e7 rows, with the server's default settings and the planner free to choose parallel plans:")
    w("")
    w("- `singleton_count` takes at most **0.25x** the time of the plain `GROUP BY ... HAVING count(*) = 1` query (A/B),")
    w("- and at most **4x** the time of a bare scan that hashes the same columns (A/C);")
    w("- `class_profile` takes at most **0.3x** the time of its plain-SQL equivalent (D/E).")
    w("")
    w("Result of this run:")
    w("")
    md.extend(verdicts)
    w("")
    w("The goals for `kl_uniform` and `birthday_uniqueness_exact` are in "
      "[their own section](#heterogeneity-and-birthday) below.")
    w("")
    w("Absolute times on a small shared machine are noise (other work runs beside the benchmark, "
      "and parallel workers compete with it for the same cores); the ratios, measured in the same "
      "session with the variants interleaved run by run, are the figures to read.")
    w("")
    w("## Results")
    w("")
    w("Medians of the timed runs, in ms (psql `\\timing`, so client round trip included; "
      "each variant ran once more before, as the warm-up).")
    w("")
    w("| rows | runs | " + " | ".join(f"{v}: {NAMES[v]}" for v in MAIN)
      + " | " + " | ".join(f"{n}/{d}" for n, d, _, _ in RATIOS) + " |")
    w("|" + "---:|" * (2 + len(MAIN) + len(RATIOS)))
    for r in table[1:]:
        w("| " + " | ".join(r) + " |")
    w("")
    w("All timed runs, in ms:")
    w("")
    w("| rows | " + " | ".join(MAIN) + " |")
    w("|---:|" + "---|" * len(MAIN))
    for s in sessions:
        cells = [", ".join(fmt_ms(s.times[v][r]) for r in sorted(s.times[v])) for v in MAIN]
        w(f"| {fmt_rows(s.rows)} | " + " | ".join(cells) + " |")
    w("")
    w("Agreement (checked on every timed run; the script fails otherwise):")
    w("")
    w("```")
    md.extend(checks)
    w("```")
    w("")
    def generated(s):
        g = s.meta.get("generate_seconds", "?")
        return "reused, built earlier by the same generator" if g == "reused" else f"generated in {g} s"
    w("The population tables: " + ", ".join(
        f"{fmt_rows(s.rows)} rows = {s.meta.get('table_size', '?')} ({generated(s)})"
        for s in sessions) + ".")
    w("")
    if any(s.memory or s.serial for s in sessions):
        w("### Peak memory and serial plans")
        w("")
        w("A separate pass after the timed runs: for each of A, B, D and E a fresh connection sets "
          "`max_parallel_workers_per_gather = 0` (so one process builds the whole state; the timed "
          "runs above keep the default), warms up (the query over the first 1000 rows, then the "
          "bare scan C over the whole table), then runs the query once.  Linux "
          "records only the peak of a process's whole resident set (`VmHWM` in `/proc/<pid>/status`, "
          "read through `pg_read_file`), which includes mapped shared buffers and files, so the "
          "figure is `VmHWM` after the query minus the file-backed and shared pages resident after "
          "it minus the private pages resident before it: the peak private memory the query added.  "
          "It is an estimate (a few MB of noise), and it is one process: with a parallel plan each "
          "worker builds a partial state and the leader the combined one.  The time is that single "
          "serial run (psql `\\timing`), for comparison with the parallel medians above; one run, so "
          "only a rough figure.")
        w("")
        w("| rows | " + " | ".join(f"{v}: {NAMES[v]}" for v in "ABDE") + " |")
        w("|---:|" + "---:|" * 4)
        for s in sessions:
            cells = []
            for v in "ABDE":
                kb = s.memory.get(v)
                ms = s.serial.get(v)
                mem = "-" if kb is None else f"{max(kb, 0) / 1024:,.0f} MB"
                cells.append(mem + ("" if ms is None else f", {fmt_ms(ms)} ms serial"))
            w(f"| {fmt_rows(s.rows)} | " + " | ".join(cells) + " |")
        w("")
    obs = observations(sessions)
    if obs:
        w("### Observations")
        w("")
        w("Derived from this run's figures and plans by `bench/report.py`:")
        w("")
        md.extend(obs)
        w("")
    w("## Plans")
    w("")
    w("From the warm-up run of each variant (`EXPLAIN (ANALYZE)`, so its times include the "
      "instrumentation's clock reads), top node first; JIT is noted with what it did and how "
      "long it took in the leader (each parallel worker compiles too):")
    w("")
    for v in MAIN:
        w(f"- **{v}** ({NAMES[v]}):")
        for s in sessions:
            w(f"  - {fmt_rows(s.rows)}: {plan_shape(s.plans.get(v, []))}")
    w("")
    last = sessions[-1]
    w(f"<details><summary>Full warm-up plans at {fmt_rows(last.rows)} rows</summary>")
    w("")
    for v in MAIN:
        w(f"{v}:")
        w("")
        w("```")
        md.extend(last.plans.get(v, []))
        w("```")
        w("")
    w("</details>")
    w("")
    w("## Queries")
    w("")
    w("`:tab` is the population table, `bench_pop_<rows>`.")
    w("")
    for v in MAIN:
        w(f"{v}. {NAMES[v]}:")
        w("")
        w("```sql")
        w(queries[v])
        w("```")
        w("")
    w("C stands for the least any exact method must do: read the three columns of every row and "
      "hash them (`hashint4` of the date as days since 1900-01-01, `hashtext` of the two text "
      "columns), summed in a `bigint` so nothing is kept per class.  E computes every figure of "
      "`qid_profile` from the class-size histogram, i.e. one grouping of the table plus a small "
      "grouping of the class sizes; the final cast to `qid_profile` only makes its output text "
      "comparable with D's.")
    w("")
    md.extend(heterogeneity_section(sessions, bday, queries, het_verdicts, het_checks))
    md.extend(quantile_section(quant, queries, quant_verdicts, quant_checks))
    w("## Setup")
    w("")
    w("- Command: `" + machine.get("command", "?") + "` (from the repository root)")
    w("- Server: " + machine.get("cluster", "?"))
    w("- " + first.meta.get("version", "?"))
    w(f"- Machine: {machine.get('nproc', '?')} CPUs ({machine.get('cpu', '?')}), "
      f"{machine.get('memory', '?')} memory, {machine.get('kernel', '?')}")
    w("- Date: " + machine.get("date", "?") + "; qidrisk at commit " + machine.get("commit", "?")
      + ("; library " + machine["library"] if "library" in machine else ""))
    w("- Load average (1, 5, 15 min) when the run started: " + machine.get("load_start", "?")
      + "; when it ended: " + machine.get("load_end", "?")
      + " (anything above 0 is other work on the same cores)")
    w("- Settings (server defaults, unchanged by the benchmark"
      + ("" if not machine.get("state_memory") else
         f" except `qidrisk.max_state_memory = {machine['state_memory']}`") + "): "
      + ", ".join(f"`{k} = {v}`" for k, v in settings.items()))
    w("- Runs: one warm-up (the `EXPLAIN ANALYZE` above) then "
      + ", ".join(f"{s.meta.get('runs', '?')} at {fmt_rows(s.rows)}" for s in sessions)
      + " timed runs per variant, all in one psql connection per size; the order of the variants "
        f"rotates run by run (run 1: {' '.join(VARIANTS)}, run 2: "
        f"{' '.join(VARIANTS[1:] + VARIANTS[0])}, ...)"
      + ("" if bday is None else
         f"; H: one warm-up then {bday.meta.get('runs', '?')} timed runs in a connection of its "
         f"own after the sizes") + ".")
    w("")
    w("The population (`bench/population.sql`) is a pure function of the row number: each column "
      "draws from `hashint8extended(i, seed)` scaled to [0, 1), so every size is the same table on "
      "every machine.  `birth_date` is uniform over 1925-2014, `sex` is F/M, `zip5` is one of "
      "30,000 codes whose sizes follow a power law (the largest holds ~2% of the rows), "
      "`education` (16 values), `occupation` (15), `race` (5) and `country` (40, ~90% "
      "United-States) follow the UCI Adult marginals, `hours_per_week` is 40 for 47% of the rows "
      "and a bell curve over 1..99 otherwise.  The table is UNLOGGED and VACUUM ANALYZEd.  The "
      "quasi-identifier timed here is (birth_date, sex, zip5).")
    w("")
    os.makedirs(os.path.dirname(os.path.abspath(doc)), exist_ok=True)
    kept = marked_sections(doc)
    with open(doc, "w", encoding="utf-8") as f:
        f.write("\n".join(md))
        # the sections other bench/*.sh scripts wrote stay, after ours
        for section in kept:
            f.write("\n" + section + "\n")
    print(f"report: wrote {doc}")
    return 0 if all_ok else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "check":
        return cmd_check(argv[2])
    if len(argv) == 4 and argv[1] == "report":
        return cmd_report(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
