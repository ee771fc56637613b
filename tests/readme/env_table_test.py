#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The environment table (docs/environment.md) names every variable the sources read, and
nothing else; the Doxygen main page's table names only variables the sources read.

Reads: getenv("X") and constants named k...Env = "X" (C, C++, CUDA), os.environ.get("X")
(Python), and ${RFA_...} / $RFA_... in shell scripts and batch files.
Usage: env_table_test.py SOURCE_DIR"""
import os
import re
import sys

SKIP_DIRS = {".git", "docs", "tests"}  # tests read only test-only variables, listed by hand
READS = [re.compile(r'getenv\("([A-Z][A-Z0-9_]*)"\)'),
         re.compile(r'k\w*Env\s*=\s*"([A-Z][A-Z0-9_]*)"'),
         re.compile(r'os\.environ(?:\.get\(|\[)"([A-Z][A-Z0-9_]*)"'),
         re.compile(r'\$\{?(RFA_[A-Z0-9_]+)')]
SOURCE = re.compile(r"\.(c|h|cpp|hpp|cu|cuh|py|sh|sbatch|f90|in)$")
TEST_ONLY = {"RFA_TEST_HOSTNAME", "RFA_TEST_HUGE_MESSAGES"}


def read_variables(root):
    found = {}
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for name in files:
            path = os.path.join(top, name)
            if not SOURCE.search(name) and not (os.access(path, os.X_OK) and "perf" in top):
                continue
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            for pattern in READS:
                for var in pattern.findall(text):
                    found.setdefault(var, os.path.relpath(path, root))
    return found


def table_variables(page, heading):
    """The variables named in the first column of the table under `heading` in `page`."""
    text = open(page, encoding="utf-8").read()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    names = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1]))
    return names


def main(root):
    read = read_variables(root)
    listed = table_variables(os.path.join(root, "docs", "environment.md"), "# Environment variables")
    missing = sorted(v for v in read if v not in listed and v.startswith(("RFA_", "SLURM_LOCALID", "SLURM_TOPO")))
    stale = sorted(v for v in listed if v not in read and v not in TEST_ONLY)
    # The Doxygen main page lists the library's variables: each must be one the sources read.
    stale += sorted(f"{v} (docs/mainpage.md)" for v in table_variables(os.path.join(root, "docs", "mainpage.md"),
                                                                       "## Environment variables")
                    if v not in read)
    for v in missing:
        print(f"docs/environment.md's table lacks {v} (read in {read[v]})", file=sys.stderr)
    for v in stale:
        print(f"docs/environment.md's table lists {v}, which no source reads", file=sys.stderr)
    print(f"env_table_test: {len(listed)} variables listed, {len(missing)} missing, {len(stale)} stale")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
