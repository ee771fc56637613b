#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Extracts every code block of the README and of the docs/ pages so that tests can build it
(docs/architecture.md §7).

Pages: README.md and every docs/*.md. Each page writes under its own folder of OUT: README.md
under OUT itself, docs/NAME.md under OUT/docs/NAME, so no page's blocks can overwrite another's.
Every fenced block must follow a marker line, invisible on the rendered page:
  <!-- readme-test: file DIR/NAME -->    written to PAGE_OUT/DIR/NAME (built and run by a test)
  <!-- readme-test: fragment PRELUDE -->  put in place of @FRAGMENT@ in preludes/PRELUDE and
                                          written to PAGE_OUT/fragments/PRELUDE (compiled; one
                                          fragment per prelude and page)
  <!-- readme-test: shell -->             checked with `bash -n` here
Indented code blocks are refused: they cannot carry a marker.
Usage: readme_blocks.py SOURCE_DIR OUT_DIR [BUILT...]; exits 1 naming every offending page and
line. BUILT, the test's form: the outputs (relative to OUT_DIR) that the build compiles or the
consumer test runs; a block written anywhere else, or one of them not written, is a problem."""
import glob
import os
import re
import subprocess
import sys

MARKER = re.compile(r"^<!-- readme-test: (file|fragment|shell)(?: (\S+))? -->$")
FENCE = re.compile(r"^```(\S*)\s*$")


def pages(root):
    """(page path relative to root, its output folder relative to OUT), README.md first."""
    found = [("README.md", "")]
    for path in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        name = os.path.basename(path)
        found.append((f"docs/{name}", os.path.join("docs", name[:-len(".md")])))
    return found


def blocks(page, lines):
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
            raise SystemExit(f"{page} line {start + 1}: code block never closed")
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


def check_page(root, page, page_out, out, written, errors):
    """Writes one page's blocks under OUT/page_out; returns how many blocks it has."""
    here = os.path.dirname(os.path.abspath(__file__))
    lines = open(os.path.join(root, page), encoding="utf-8").read().split("\n")
    errors += [f"{page} line {n}: indented code block; use a fenced block with a readme-test marker"
               for n in indented_blocks(lines)]
    count = 0
    for line, marker, lang, body in blocks(page, lines):
        count += 1
        m = MARKER.match(marker.strip())
        if not m:
            errors.append(f"{page} line {line}: ```{lang} block without a '<!-- readme-test: ... -->' line above it")
            continue
        kind, arg = m.groups()
        if kind == "shell":
            r = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True)
            if r.returncode != 0:
                errors.append(f"{page} line {line}: shell block does not parse: {r.stderr.strip()}")
            continue
        if arg is None:
            errors.append(f"{page} line {line}: a {kind} marker must name its {'file' if kind == 'file' else 'prelude'}")
            continue
        target = os.path.normpath(os.path.join(page_out, arg if kind == "file" else os.path.join("fragments", arg)))
        if target in written:
            errors.append(f"{page} line {line}: a second block for '{target}' (the first: {written[target]})")
            continue
        written[target] = f"{page} line {line}"
        if kind == "file":
            text = body
        else:
            prelude_path = os.path.join(here, "preludes", arg)
            if not os.path.isfile(prelude_path):
                errors.append(f"{page} line {line}: fragment without a prelude in tests/readme/preludes: '{arg}'")
                continue
            prelude = open(prelude_path, encoding="utf-8").read()
            if "@FRAGMENT@" not in prelude:
                errors.append(f"preludes/{arg} has no @FRAGMENT@ line")
                continue
            text = prelude.replace("@FRAGMENT@", body)
        path = os.path.join(out, target)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_if_changed(path, text)
    return count


def main(root, out, built):
    errors, written, count = [], {}, 0
    found = pages(root)
    for page, page_out in found:
        count += check_page(root, page, page_out, out, written, errors)
    if built:
        built = {os.path.normpath(b) for b in built}
        errors += [f"{where}: writes {target}, which no test builds (tests/readme/CMakeLists.txt)"
                   for target, where in sorted(written.items()) if target not in built]
        errors += [f"no page writes {b}, which tests/readme/CMakeLists.txt builds" for b in sorted(built - set(written))]
    for e in errors:
        print(e, file=sys.stderr)
    print(f"readme_blocks: {len(found)} pages, {count} code blocks, {len(errors)} problems")
    return 1 if errors else 0


def write_if_changed(path, text):
    """Rewrites only what changed, so the build recompiles only the blocks that did."""
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
