#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""comments_present_test.py on a small made-up tree: it names the file and line of each date,
issue number and "as before" in a comment (in sources, scripts, tests and benchmarks, a script
without an extension read by its #! line), and of a citation of a perf/RESULTS.md heading that
does not exist (in those comments and in docs' Markdown, wrapped or not); it passes dates inside
a citation that does, and what only looks like an issue (#include, "#12" in a string, $# in
shell). Usage: comments_present_selftest.py TESTS_README_DIR"""
import os
import subprocess
import sys
import tempfile

RESULTS = "# results\n\n## 2026-11-25 (night) — a measured thing\n"
# Each file's lines; the test must name exactly the lines listed in EXPECTED.
TREE = {
    "src/a.cpp": ['#include "x.hpp"  // ok',
                  'const char* s = "issue #12, 2026-01-01";  // ok: the string is code',
                  "// fixed in issue #12",
                  '/* 8% (perf/RESULTS.md, "2026-11-25 (night) —',
                  ' * a measured thing") */',
                  '// wrong heading (perf/RESULTS.md, "2026-11-25 — another thing")',
                  "#define K 3  // tuned 2026-11-20"],
    "scripts/b.sh": ['echo "$# args #3"  # ok', "n=${#list[@]}", "# see (#4)", "cat <<EOF", "# 2026-01-02 body", "EOF"],
    "cmake/c.cmake": ['set(X "#9")  # ok', "# same as before"],
    "fortran/d.f90": ["print *, 'issue 7 ! not a comment'", "x = 1 ! issue 8"],
    ".ci/run": ["#!/usr/bin/env bash", "# 22 -> 16 minutes since #31"],
    "tests/e_test.cpp": ["// ok", "// the case of issue #12"],
    "perf/tool": ["#!/usr/bin/env python3", "x = '#5'  # ok", "# measured 2026-01-03"],
    "perf/run_it": ["#!/bin/sh", "# as before"],
    "perf/data": ["# 2026-01-04, not a script"],
    "docs/f.md": ["A measured thing (perf/RESULTS.md, \"2026-11-25 (night) —", "a measured thing\"), on 2026-01-05.",
                  "Another (perf/RESULTS.md, \"a measured thing\")."],
    "README.md": ["See perf/RESULTS.md \"2026-11-25 — a thing\"."],
}
EXPECTED = {"src/a.cpp:3", "src/a.cpp:6", "src/a.cpp:7", "scripts/b.sh:3", "cmake/c.cmake:2",
            "fortran/d.f90:2", ".ci/run:2", "tests/e_test.cpp:2", "perf/tool:3", "perf/run_it:2", "docs/f.md:3",
            "README.md:1"}


def main(here):
    with tempfile.TemporaryDirectory() as root:
        for rel, lines in {**TREE, "perf/RESULTS.md": RESULTS.splitlines()}.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        r = subprocess.run([sys.executable, os.path.join(here, "comments_present_test.py"), root],
                           capture_output=True, text=True)
    named = {":".join(line.split(":")[:2]) for line in r.stderr.splitlines()}
    if r.returncode != 1 or named != EXPECTED:
        print(f"comments_present_selftest: expected failures at {sorted(EXPECTED)}, got rc {r.returncode}:\n"
              f"{r.stdout}{r.stderr}", file=sys.stderr)
        return 1
    print(f"comments_present_selftest: {len(EXPECTED)} planted problems named, nothing else")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
