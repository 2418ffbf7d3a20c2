#!/usr/bin/env python3
"""Parse bench/run.sh session logs (standard library only).

  report.py check SESSION_LOG        every run: A's result = B's, D's = E's
  report.py report OUT_DIR DOC.md    medians, ratios, goals; writes DOC.md

A session log is psql's output of bench/run.sh's session script: marker lines
starting with "@@" (meta data, settings, "@@explain V" before a warm-up plan,
"@@run V R" before a timed run's result and its "Time: X ms" line, and
"@@memory V KB" from the peak-memory pass).
"""
import os
import re
import statistics
import sys

VARIANTS = "ABCDE"
NAMES = {
    "A": "singleton_count",
    "B": "GROUP BY ... HAVING count(*) = 1",
    "C": "hashing scan",
    "D": "class_profile",
    "E": "class_profile in plain SQL",
}
# (numerator, denominator, goal at 1e7 rows, what the goal is about)
RATIOS = [
    ("A", "B", 0.25, "singleton_count vs. GROUP BY/HAVING"),
    ("A", "C", 4.0, "singleton_count vs. hashing scan"),
    ("D", "E", 0.3, "class_profile vs. its plain-SQL equivalent"),
]
GOAL_ROWS = 10_000_000
TIME_RE = re.compile(r"^Time: ([0-9.]+) ms")


class Session:
    def __init__(self, path):
        self.path = path
        self.meta = {}
        self.settings = {}
        self.plans = {}
        self.results = {v: {} for v in VARIANTS}
        self.times = {v: {} for v in VARIANTS}
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
        """Return (ok, message lines)."""
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
        par = [v for v in VARIANTS if "Gather" in plan_shape(s.plans.get(v, []))]
        ser = [v for v in VARIANTS if v not in par]
        out.append(f"- {n} rows: parallel plans for {', '.join(par) or 'none'}"
                   + (f"; serial for {', '.join(ser)}" if ser else "") + ".")
        spill = [v for v in VARIANTS if "spills to disk" in plan_shape(s.plans.get(v, []))
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
    for l in lines:
        print(f"bench: {fmt_rows(s.rows)} rows: {l}")
    return 0 if ok else 1


def read_kv(path):
    kv = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                kv[k] = v
    return kv


def cmd_report(out, doc):
    sessions = []
    for name in os.listdir(out):
        m = re.match(r"session-(\d+)\.log$", name)
        if m:
            sessions.append(Session(os.path.join(out, name)))
    sessions.sort(key=lambda s: s.rows)
    if not sessions:
        print("report: no session logs in " + out, file=sys.stderr)
        return 1
    machine = read_kv(os.path.join(out, "machine.txt"))
    queries = {}
    for v in VARIANTS:
        with open(os.path.join(out, "queries", v + ".sql"), encoding="utf-8") as f:
            queries[v] = f.read().strip()

    all_ok = True
    checks = []
    for s in sessions:
        ok, lines = s.check()
        all_ok &= ok
        checks.extend(f"{fmt_rows(s.rows)} rows: {l}" for l in lines)

    # --- console table ---
    head = ["rows", "runs"] + [f"{v} ms" for v in VARIANTS] + [f"{n}/{d}" for n, d, _, _ in RATIOS]
    table = [head]
    for s in sessions:
        table.append([fmt_rows(s.rows), s.meta.get("runs", "?")]
                     + [fmt_ms(s.median(v)) for v in VARIANTS]
                     + [fmt_ratio(ratio(s, n, d)) for n, d, _, _ in RATIOS])
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))

    # --- goals ---
    goal_session = next((s for s in sessions if s.rows == GOAL_ROWS), None)
    verdicts = []
    for n, d, goal, what in RATIOS:
        if goal_session is None:
            verdicts.append(f"- {what}: goal {n}/{d} <= {goal} at 1e7 rows: **not measured** "
                            f"(this run did not include 1e7 rows).")
            continue
        x = ratio(goal_session, n, d)
        met = x is not None and x <= goal
        verdicts.append(f"- {what}: goal {n}/{d} <= {goal} at 1e7 rows; measured "
                        f"**{fmt_ratio(x)}** - {'**met**' if met else '**not met**'}.")
    for v in verdicts:
        print(v.replace("**", ""))

    # --- document ---
    first = sessions[0]
    settings = sessions[-1].settings
    md = []
    w = md.append
    w("# Benchmarks")
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
    w("Absolute times on a small shared machine are noise (other work runs beside the benchmark, "
      "and parallel workers compete with it for the same cores); the ratios, measured in the same "
      "session with the variants interleaved run by run, are the figures to read.")
    w("")
    w("## Results")
    w("")
    w("Medians of the timed runs, in ms (psql `\\timing`, so client round trip included; "
      "each variant ran once more before, as the warm-up).")
    w("")
    w("| rows | runs | " + " | ".join(f"{v}: {NAMES[v]}" for v in VARIANTS)
      + " | " + " | ".join(f"{n}/{d}" for n, d, _, _ in RATIOS) + " |")
    w("|" + "---:|" * (2 + len(VARIANTS) + len(RATIOS)))
    for r in table[1:]:
        w("| " + " | ".join(r) + " |")
    w("")
    w("All timed runs, in ms:")
    w("")
    w("| rows | " + " | ".join(VARIANTS) + " |")
    w("|---:|" + "---|" * len(VARIANTS))
    for s in sessions:
        cells = [", ".join(fmt_ms(s.times[v][r]) for r in sorted(s.times[v])) for v in VARIANTS]
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
    for v in VARIANTS:
        w(f"- **{v}** ({NAMES[v]}):")
        for s in sessions:
            w(f"  - {fmt_rows(s.rows)}: {plan_shape(s.plans.get(v, []))}")
    w("")
    last = sessions[-1]
    w(f"<details><summary>Full warm-up plans at {fmt_rows(last.rows)} rows</summary>")
    w("")
    for v in VARIANTS:
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
    for v in VARIANTS:
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
        "rotates run by run (run 1: A B C D E, run 2: B C D E A, ...).")
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
    with open(doc, "w", encoding="utf-8") as f:
        f.write("\n".join(md))
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
