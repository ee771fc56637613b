#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The environment tables (docs/environment.md: the library's, rfa's CUDA kernels', the tools')
name every variable the sources read, and nothing else; the library's table repeats the
registry (src/core/environment.cpp) row for row; and the library reads the environment only
through that registry.

Reads: getenv("X"), constants named k...Env = "X", registry rows {Env::..., "X", ...} and
perf/'s env_or("X", ...) (C, C++, CUDA), os.environ.get("X") (Python), and ${RFA_...} / $RFA_... in shell scripts and batch
files.
Usage: env_table_test.py SOURCE_DIR [REGISTRY_DUMP]
REGISTRY_DUMP is rfa_env_registry_dump, which prints the registry as tab-separated rows."""
import os
import re
import subprocess
import sys

SKIP_DIRS = {".git", "docs", "tests"}  # tests read only test-only variables (RFA_TEST_*), below
READS = [re.compile(r'getenv\("([A-Z][A-Z0-9_]*)"\)'),
         re.compile(r'k\w*Env\s*=\s*"([A-Z][A-Z0-9_]*)"'),
         re.compile(r'\{Env::\w+,\s*"([A-Z][A-Z0-9_]*)"'),
         re.compile(r'env_or\("([A-Z][A-Z0-9_]*)"'),
         re.compile(r'os\.environ(?:\.get\(|\[)"([A-Z][A-Z0-9_]*)"'),
         re.compile(r'\$\{?(RFA_[A-Z0-9_]+)')]
SOURCE = re.compile(r"\.(c|h|cpp|hpp|cu|cuh|py|sh|sbatch|f90|in)$")
# The tests' own variables: RFA_TEST_* read anywhere under tests/ (listed on the page too).
TEST_ONLY_READ = re.compile(r'getenv\("(RFA_TEST_[A-Z0-9_]*)"\)')
# The library's code: it reads the environment through src/core/environment.cpp alone.
LIBRARY_DIRS = ("src", "capi")
REGISTRY_FILE = os.path.join("src", "core", "environment.cpp")
RAW_READ = re.compile(r"\b(?:std::)?(?:secure_)?getenv\s*\(")


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


def test_only_variables(root):
    found = {}
    for top, _, files in os.walk(os.path.join(root, "tests")):
        for name in files:
            if not SOURCE.search(name):
                continue
            path = os.path.join(top, name)
            text = open(path, encoding="utf-8", errors="replace").read()
            for var in TEST_ONLY_READ.findall(text):
                found.setdefault(var, os.path.relpath(path, root))
    return found


def raw_library_reads(root):
    """Files of the library that call getenv themselves instead of going through the registry."""
    bad = []
    for top_dir in LIBRARY_DIRS:
        for top, _, files in os.walk(os.path.join(root, top_dir)):
            for name in files:
                path = os.path.join(top, name)
                rel = os.path.relpath(path, root)
                if rel == REGISTRY_FILE or not SOURCE.search(name):
                    continue
                text = open(path, encoding="utf-8", errors="replace").read()
                for number, line in enumerate(text.splitlines(), 1):
                    if RAW_READ.search(line.split("//", 1)[0]):
                        bad.append(f"{rel}:{number}")
    return bad


def table_rows(page, heading):
    """The rows (lists of stripped cells) of the table under `heading` in `page`."""
    text = open(page, encoding="utf-8").read()
    if heading not in text:
        raise SystemExit(f"{page} has no heading '{heading}'")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")]
            for row in section.splitlines() if row.startswith("| `")]


def names(rows):
    found = set()
    for row in rows:
        found.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", row[0]))
    return found


def registry_problems(rows, dump):
    out = subprocess.run([dump], check=True, capture_output=True, text=True).stdout
    registry = [line.split("\t") for line in out.splitlines() if line]
    problems = []
    if not registry:
        problems.append(f"{dump} printed no registry")
    expected = [[f"`{n}`", readers, fallback, meaning] for n, readers, fallback, meaning in registry]
    for want in expected:
        have = [row for row in rows if row[0] == want[0]]
        if not have:
            problems.append(f"the library table lacks the registry's {want[0]}; add: | {' | '.join(want)} |")
        elif have[0] != want:
            problems.append(f"the library table's row of {want[0]} differs from the registry; it must read: "
                            f"| {' | '.join(want)} |")
    for row in rows:
        if row[0] not in {want[0] for want in expected}:
            problems.append(f"the library table lists {row[0]}, which is not in the registry "
                            f"({REGISTRY_FILE})")
    if not problems and [row[0] for row in rows] != [want[0] for want in expected]:
        problems.append("the library table's rows are not in the registry's order")
    return problems


def main(root, dump=None):
    page = os.path.join(root, "docs", "environment.md")
    library_rows = table_rows(page, "## The library")
    kernel_rows = table_rows(page, "## rfa's CUDA kernels")
    tool_rows = table_rows(page, "## The tools")
    listed = names(library_rows) | names(kernel_rows) | names(tool_rows)
    read = read_variables(root)
    test_only = test_only_variables(root)
    read.update({v: where for v, where in test_only.items() if v not in read})
    problems = []
    problems += [f"docs/environment.md lacks {v} (read in {read[v]})" for v in sorted(read)
                 if v not in listed and v.startswith(("RFA_", "SLURM_LOCALID", "SLURM_TOPO"))]
    problems += [f"docs/environment.md lists {v}, which no source reads" for v in sorted(listed)
                 if v not in read]
    problems += [f"{where} reads the environment directly; read it through env_value() "
                 f"({REGISTRY_FILE})" for where in raw_library_reads(root)]
    if dump:
        problems += registry_problems(library_rows, dump)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"env_table_test: {len(listed)} variables listed, {len(library_rows)} library rows, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
