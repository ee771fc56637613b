#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Extracts every code block of the README so that tests can build it (docs/architecture.md §7).

Every fenced block must follow a marker line, invisible on the rendered page:
  <!-- readme-test: file DIR/NAME -->    written to OUT/DIR/NAME (built and run by a test)
  <!-- readme-test: fragment PRELUDE -->  put in place of @FRAGMENT@ in preludes/PRELUDE and
                                          written to OUT/fragments/PRELUDE (compiled; one
                                          fragment per prelude)
  <!-- readme-test: shell -->             checked with `bash -n` here
Indented code blocks are refused: they cannot carry a marker.
Usage: readme_blocks.py README.md OUT_DIR; exits 1 naming every offending line."""
import os
import re
import subprocess
import sys

MARKER = re.compile(r"^<!-- readme-test: (file|fragment|shell)(?: (\S+))? -->$")
FENCE = re.compile(r"^```(\S*)\s*$")


def blocks(lines):
    """Yields (line number of the fence, marker line or None, language, body)."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j == len(lines):
            raise SystemExit(f"README line {start + 1}: code block never closed")
        prev = lines[start - 1] if start > 0 else ""
        yield start + 1, prev, lang, "\n".join(lines[start + 1:j]) + "\n"
        i = j + 1


def indented_blocks(lines):
    """Line numbers of indented code blocks (4 spaces after a blank line, outside lists)."""
    bad, in_fence, last_text = [], False, ""
    for n, line in enumerate(lines):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if line.startswith("    ") and line.strip() and n > 0 and not lines[n - 1].strip() \
                and not last_text.startswith(("- ", "  ", "|", "* ")) and not re.match(r"\d+\. ", last_text):
            bad.append(n + 1)
        if line.strip():
            last_text = line
    return bad


def main(readme, out):
    here = os.path.dirname(os.path.abspath(__file__))
    lines = open(readme, encoding="utf-8").read().split("\n")
    errors = [f"README line {n}: indented code block; use a fenced block with a readme-test marker"
              for n in indented_blocks(lines)]
    count, written = 0, set()
    for line, marker, lang, body in blocks(lines):
        count += 1
        m = MARKER.match(marker.strip())
        if not m:
            errors.append(f"README line {line}: ```{lang} block without a '<!-- readme-test: ... -->' line above it")
            continue
        kind, arg = m.groups()
        if arg is not None and arg in written:
            errors.append(f"README line {line}: a second block for '{arg}'")
            continue
        written.add(arg)
        if kind == "file":
            path = os.path.join(out, arg)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_if_changed(path, body)
        elif kind == "fragment":
            prelude = open(os.path.join(here, "preludes", arg), encoding="utf-8").read()
            if "@FRAGMENT@" not in prelude:
                errors.append(f"preludes/{arg} has no @FRAGMENT@ line")
                continue
            path = os.path.join(out, "fragments", arg)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_if_changed(path, prelude.replace("@FRAGMENT@", body))
        else:
            r = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True)
            if r.returncode != 0:
                errors.append(f"README line {line}: shell block does not parse: {r.stderr.strip()}")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"readme_blocks: {count} code blocks, {len(errors)} problems")
    return 1 if errors else 0


def write_if_changed(path, text):
    """Rewrites only what changed, so the build recompiles only the blocks that did."""
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
