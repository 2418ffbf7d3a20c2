"""bench/versions.py DOC ROWS RUNS VERSION... - compare bench/run.sh's ratios
between PostgreSQL versions (results/pgNN/bench.md, written by
bench/versions.sh) and write them into DOC's "versions" section."""
import re
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


def main():
    doc, rows, runs, versions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    measured = [ratios(f"results/pg{v}/bench.md") for v in versions]
    base_version, base = measured[0]
    md = ["## PostgreSQL versions", "",
          f"`bash bench/versions.sh {' '.join(versions)}`: `bench/run.sh {rows}`"
          + (f" with `BENCH_RUNS={runs}`" if runs else "")
          + " on each version in turn, in the same session on this machine, each in its Debian chroot "
          "(`test/chroot.sh`; default settings, `fsync=off`, no peak-memory pass). "
          "Each ratio is the median time of one variant over another's in one session (the variants "
          "are named in the sections above); the last columns give each version's ratio over "
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
