#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every `docs/architecture.md §N` (or §N.M) cited in the tree names a section (or numbered rule)
that exists, and nothing cites the old DESIGN.md. Usage: architecture_refs_test.py SOURCE_DIR"""
import os
import re
import sys

CITE = re.compile(r"architecture\.md §(\d+)(?:\.(\d+))?(?:-§(\d+))?")


def sections(doc):
    """{section number: set of numbered rules in it}."""
    found, current = {}, None
    for line in open(doc, encoding="utf-8"):
        m = re.match(r"## (\d+)\. ", line)
        if m:
            current = int(m.group(1))
            found[current] = set()
        elif current is not None:
            r = re.match(r"(\d+)\. ", line)
            if r:
                found[current].add(int(r.group(1)))
    return found


def main(root):
    known = sections(os.path.join(root, "docs", "architecture.md"))
    errors = []
    if sorted(known) != list(range(1, len(known) + 1)):
        errors.append(f"docs/architecture.md: sections are numbered {sorted(known)}, not 1..{len(known)}")
    cites = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
        for name in files:
            path = os.path.join(top, name)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            rel = os.path.relpath(path, root)
            if "DESIGN.md" in text and not rel.startswith("tests/readme/"):
                errors.append(f"{rel}: cites DESIGN.md; cite docs/architecture.md §N")
            for m in CITE.finditer(text):
                cites += 1
                sec, rule, last = (int(g) if g else None for g in m.groups())
                for s in (sec, last):
                    if s is not None and s not in known:
                        errors.append(f"{rel}: cites docs/architecture.md §{s}, which does not exist")
                if rule is not None and sec in known and rule not in known[sec]:
                    errors.append(f"{rel}: cites docs/architecture.md §{sec}.{rule}, which does not exist")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"architecture_refs_test: {cites} citations, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
