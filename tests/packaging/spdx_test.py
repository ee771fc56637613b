#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every tracked source file (C, C++, CUDA, Fortran, CMake, shell, Python, build templates)
names its licence in its first lines: `SPDX-License-Identifier: BSD-3-Clause`.
Usage: spdx_test.py SOURCE_DIR         lists the files without one and exits 1 if any
       spdx_test.py SOURCE_DIR --fix   adds the line to them (after a #! line), in the
                                       comment syntax of each language"""
import os
import re
import subprocess
import sys

TAG = "SPDX-License-Identifier: BSD-3-Clause"
HEAD_LINES = 5  # the tag must be within the first lines
C_BLOCK = re.compile(r"\.(c|h|map)$|\.h\.in$")
SLASHES = re.compile(r"\.(cpp|hpp|cu|cuh)$")
BANG = re.compile(r"\.(f90|f90\.in)$")
HASH = re.compile(r"(^|/)(CMakeLists\.txt|Makefile|Doxyfile\.in)$|\.(cmake|cmake\.in|py|sh|sbatch|pc\.in|yaml)$")


def comment_for(path, first_line):
    if C_BLOCK.search(path):
        return f"/* {TAG} */"
    if SLASHES.search(path):
        return f"// {TAG}"
    if BANG.search(path):
        return f"! {TAG}"
    if HASH.search(path) or first_line.startswith("#!"):
        return f"# {TAG}"
    return None


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file
        found = []
        for top, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(top, f), root) for f in files]
        return found


def main(root, fix):
    missing, checked = [], 0
    for rel in sorted(tracked_files(root)):
        path = os.path.join(root, rel)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        lines = text.split("\n")
        comment = comment_for(rel, lines[0] if lines else "")
        if comment is None:
            continue
        checked += 1
        if any(TAG in line for line in lines[:HEAD_LINES]):
            continue
        missing.append(rel)
        if fix:
            at = 1 if lines and lines[0].startswith("#!") else 0
            lines.insert(at, comment)
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
    if missing and not fix:
        print(f"{len(missing)} source files lack '{TAG}' in their first {HEAD_LINES} lines "
              f"(add it, or run tests/packaging/spdx_test.py {root} --fix):", file=sys.stderr)
        for rel in missing:
            print("  " + rel, file=sys.stderr)
        return 1
    if fix:
        print(f"spdx_test: added the tag to {len(missing)} of {checked} source files")
    else:
        print(f"spdx_test: all {checked} source files carry the tag")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--fix"):
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], len(sys.argv) == 3))
