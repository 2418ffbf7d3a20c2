"""The sections bench scripts keep in docs/benchmarks.md.

Each script owns the text between <!-- bench:NAME --> and <!-- /bench:NAME -->:
write_section replaces it (or appends the section), read_section returns it,
and marked_sections lists every section so bench/report.py can keep them when
it rewrites the page.
"""
import os
import re

_SECTION = re.compile(r"<!-- bench:([\w-]+) -->.*?<!-- /bench:\1 -->", re.S)


def _markers(name):
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def read_section(doc, name):
    """The text between NAME's markers, or None when the page has no such section."""
    start, end = _markers(name)
    text = open(doc, encoding="utf-8").read() if os.path.exists(doc) else ""
    if start not in text or end not in text:
        return None
    return text[text.index(start) + len(start):text.index(end)]


def write_section(doc, name, body):
    """Put body between NAME's markers, appending the section when it is new."""
    start, end = _markers(name)
    text = open(doc, encoding="utf-8").read() if os.path.exists(doc) else ""
    section = f"{start}\n{body.strip(chr(10))}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)


def marked_sections(doc):
    """Every <!-- bench:NAME --> ... <!-- /bench:NAME --> section of an existing page."""
    if not os.path.exists(doc):
        return []
    with open(doc, encoding="utf-8") as f:
        return [m.group(0) for m in _SECTION.finditer(f.read())]
