"""bench/versions.py DOC ROWS RUNS ROUNDS VERSION... - compare bench/run.sh's
ratios between PostgreSQL versions (results/versions/pgNN-roundR.md, written by
bench/versions.sh), each the median of its rounds, and write them into DOC's
"versions" section."""
import re
import statistics
import sys

from section import write_section


def ratios(path):
    """{(table's first variant, rows, ratio name): value} of every medians table"""
    found, version = {}, "?"
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"PostgreSQL (\d+\.\d+)", line)
        if m and version == "?":
            version = m.group(1)
        if not line.startswith("| rows | runs |"):
            continue
        head = [c.strip() for c in line.strip("|").split("|")]
        for row in lines[i + 2:]:
            if not row.startswith("| 1e"):
                break
            cells = [c.strip() for c in row.strip("|").split("|")]
            for name, cell in zip(head, cells):
                if "/" in name:
                    found[(head[2].split(":")[0], cells[0], name)] = float(cell.replace(",", ""))
    return version, found


def medians(version, rounds):
    """a version's name and {key: median over the rounds} of its ratios"""
    per_round = [ratios(f"results/versions/pg{version}-round{r}.md") for r in range(1, rounds + 1)]
    keys = set().union(*(found for _, found in per_round))
    return per_round[0][0], {k: statistics.median(f[k] for _, f in per_round if k in f) for k in keys}


def main():
    doc, rows, runs, rounds, versions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    measured = [medians(v, rounds) for v in versions]
    base_version, base = measured[0]
    md = ["## PostgreSQL versions", "",
          f"`bash bench/versions.sh {' '.join(versions)}`: `bench/run.sh {rows}`"
          + (f" with `BENCH_RUNS={runs}`" if runs else "")
          + f" on each version in turn, {rounds} rounds alternating the versions, in one session on this "
          "machine, each version in its Debian chroot "
          "(`test/chroot.sh`; default settings, `fsync=off`, no peak-memory pass). "
          "Each ratio is the median time of one variant over another's in one run (the variants "
          "are named in the sections above), and the table gives each ratio's median over the rounds; "
          "the last columns give each version's ratio over "
          f"PostgreSQL {base_version}'s, which should stay within 10 %.", ""]
    head = "| ratio | rows | " + " | ".join(f"PostgreSQL {v}" for v, _ in measured) + " | " + \
        " | ".join(f"{v} / {base_version}" for v, _ in measured[1:]) + " |"
    md += [head, "|" + "---|" * (2 + 2 * len(measured) - 1)]
    worst = 0.0
    for key in sorted(base, key=lambda k: (k[2], float(k[1]))):
        values = [m.get(key) for _, m in measured]
        rel = [(v / base[key]) if v is not None and base[key] else None for v in values[1:]]
        worst = max([worst] + [abs(r - 1) for r in rel if r is not None])
        md.append(f"| {key[2]} | {key[1]} | " + " | ".join("-" if v is None else f"{v:.2f}" for v in values)
                  + " | " + " | ".join("-" if r is None else f"{r:.2f}" for r in rel) + " |")
    md += ["", f"Largest departure from PostgreSQL {base_version}'s ratios: {worst * 100:.0f} %."]
    write_section(doc, "versions", "\n" + "\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
