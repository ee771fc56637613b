#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prints the build targets that the tests ctest would select need: each target whose output
file a selected test names (in its command, its environment or another property such as
REQUIRED_FILES), one per line. scripts/quickstart.sh builds only these when
RFA_BUILD_ONLY_SELECTED=1 (CI's sanitizer pass); a test that needs something it does not name
(a folder a target generates, say) is not served by that mode and fails, loudly, for want of it.

    python3 selected_test_targets.py BUILD_DIR [ctest selection arguments...]
"""
import json
import os
import re
import subprocess
import sys


def build_targets(build):
    """The targets the build system knows, from `cmake --build BUILD --target help` (Makefile
    generators print "... name", Ninja "name: phony")."""
    text = subprocess.run(["cmake", "--build", build, "--target", "help"], check=True,
                          capture_output=True, text=True).stdout
    names = set()
    for line in text.splitlines():
        m = re.match(r"^\.\.\. (\S+)", line) or re.match(r"^([^\s:]+): ", line)
        if m:
            names.add(m.group(1))
    return names


def registered_commands(build):
    """Each test's command as the CTestTestfile.cmake files of `build` register it: ctest leaves
    a test's command out of its listing while the program does not exist yet."""
    commands = {}
    for folder, _, files in os.walk(build):
        if "CTestTestfile.cmake" not in files:
            continue
        with open(os.path.join(folder, "CTestTestfile.cmake"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("add_test("):
                    # add_test(NAME "arg" ...) or add_test([=[NAME]=] "arg" ...)
                    words = re.findall(r'\[=\[(.*?)\]=\]|"((?:[^"\\]|\\.)*)"|([^\s()"]+)', line[len("add_test("):])
                    values = [a or b or c for a, b, c in words]
                    if values:
                        commands[values[0]] = values[1:]
    return commands


def strings(value):
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.realpath(sys.argv[1])
    listing = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", *sys.argv[2:]], check=True,
                             capture_output=True, text=True).stdout
    known = build_targets(build)
    registered = None
    needed = set()
    for test in json.loads(listing).get("tests", []):
        if "command" not in test:
            registered = registered if registered is not None else registered_commands(build)
            test["command"] = registered.get(test["name"], [])
        for s in strings(test):
            # A value may hold several paths ("A=path1;B=path2", "path1:path2").
            for token in re.split(r"[=;:,\s]", s):
                path = os.path.realpath(token) if token.startswith("/") else ""
                if path.startswith(build + os.sep):
                    name = os.path.basename(path)
                    if name in known:
                        needed.add(name)
                    else:
                        # A library's file (librfa.so.0.1.0) names its target after the "lib".
                        stem = re.sub(r"^lib(.*?)[.](so|a)([.].*)?$", r"\1", name)
                        if stem in known:
                            needed.add(stem)
    for name in sorted(needed):
        print(name)


if __name__ == "__main__":
    main()
