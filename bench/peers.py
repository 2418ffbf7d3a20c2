"""Report of bench/peers.sh: medians and ratios from bench/peers.mjs's JSON.

Usage: peers.py RESULT_JSON DOC SECTION.  Prints the table and writes it into
DOC between <!-- bench:SECTION --> and its end marker.
"""
import json
import statistics
import sys

from section import write_section

result_file, doc, section = sys.argv[1:4]
r = json.load(open(result_file, encoding="utf-8"))


def med(xs):
    return statistics.median(xs)


def paired(s, num, den):
    """The median of each round's ratio num / den (timed back to back), and their range"""
    ratios = [a / b for a, b in zip(s["times"][num], s["times"][den])]
    return f"{med(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


lines = [
    f"Measured by `bench/peers.sh {r['rows']}`: {r['rows']:,} rows, PostgreSQL {r['pg_version']} "
    f"(one session, `jit = off`, no parallel workers) and DuckDB {r['duckdb_version']} "
    f"(one thread, its own file), one node process driving both; medians of {r['runs']} "
    "interleaved rounds after a warm-up, every answer checked against DuckDB's GROUP BY. "
    "Each round times singleton_count, the hashing scan and DuckDB back to back (in the "
    "opposite order every other round); a ratio is the median of the rounds' own ratios, "
    "their range in brackets. "
    f"Machine: {r['cpus']} cores, load average {r['load_before'][0]:.2f} before and "
    f"{r['load_after'][0]:.2f} after.",
    "",
    "| QID shape | classes | singletons | singleton_count | GROUP BY (PostgreSQL) | DuckDB, 1 thread "
    "| hashing scan | qidrisk / DuckDB | qidrisk / scan |",
    "|---|---|---|---|---|---|---|---|---|",
]
for s in r["shapes"]:
    t = {k: med(v) for k, v in s["times"].items()}
    lines.append(
        f"| {s['name']}: {s['label']} | {s['classes']:,} | {s['singletons']:,} "
        f"| {t['qidrisk']:,.0f} ms | {t['plain_sql']:,.0f} ms | {t['duckdb']:,.0f} ms "
        f"| {t['scan']:,.0f} ms | {paired(s, 'qidrisk', 'duckdb')} | {paired(s, 'qidrisk', 'scan')} |")
text = "\n".join(lines)
print(text)
write_section(doc, section, "## qidrisk against DuckDB and the hashing scan\n\n" + text)
