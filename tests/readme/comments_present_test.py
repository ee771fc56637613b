#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Comments tell the present: no comment in the library's sources, scripts, tests and benchmarks
carries a date, an issue number or "as before". A date (or anything else) inside a citation of a
perf/RESULTS.md section, perf/RESULTS.md, "HEADING", is fine, and the heading must exist there,
as it must for every such citation in the Markdown of docs/ and the README (which may wrap it
from one line to the next). Fails naming file:line. Usage: comments_present_test.py SOURCE_DIR"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from source_comments import comments, kind  # noqa: E402

ROOTS = ["src", "capi", "include", "kernels_cuda", "fortran", "cmake", "scripts", "perf", "tests", ".ci/run"]
# Markdown whose citations of perf/RESULTS.md headings must name headings that exist.
MARKDOWN_ROOTS = ["docs", "README.md"]
# A comment line's leading decoration (///, //!, ///<, * of a block, !> of Fortran), dropped
# before a block's lines are joined so a citation may wrap from one line to the next.
DECORATION = re.compile(r"^\s*(?:/+<?|!+[<>]?|\*+(?!/)|[<>](?=\s))?\s*")
CITATION = re.compile(r'RESULTS\.md[,:]?\s*"([^"]+)"')
RULES = [(re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "a date"),
         (re.compile(r"\bissues?\s*#?\d+|#\d+(?![\w#])", re.IGNORECASE), "an issue number"),
         (re.compile(r"\bas before\b", re.IGNORECASE), '"as before"')]


def files_under(root, tops, keep):
    """The files `keep` takes among `tops` (files, or folders walked in order, build folders left
    out) below `root`."""
    for top in tops:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield path
            continue
        for here, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("build"))
            yield from (os.path.join(here, name) for name in sorted(files) if keep(os.path.join(here, name)))


def blocks(lines):
    """Runs of comments on consecutive lines, each as (joined text, [(offset, line)])."""
    run, starts, last = [], [], None
    for number, text in lines + [(None, "")]:
        if run and (number is None or number != last + 1):
            yield " ".join(run), starts
            run, starts = [], []
        if number is None:
            break
        offset = sum(len(r) + 1 for r in run)
        run.append(DECORATION.sub("", text).rstrip())
        starts.append((offset, number))
        last = number


def line_of(starts, offset):
    return [n for o, n in starts if o <= offset][-1]


def citations(rel, joined, starts, headings, seen):
    """The spans of the perf/RESULTS.md citations in `joined`, and a problem for each that names
    no heading."""
    spans, found = [], []
    for m in CITATION.finditer(joined):
        spans.append(m.span())
        seen["citations"] += 1
        heading = " ".join(m.group(1).split())
        if heading not in headings:
            found.append(f'{rel}:{line_of(starts, m.start())}: cites perf/RESULTS.md "{heading}", no such heading')
    return spans, found


def problems(root, headings, seen):
    for path in files_under(root, ROOTS, kind):
        seen["files"] += 1
        rel = os.path.relpath(path, root)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for joined, starts in blocks(comments(path, text)):
            cited, found = citations(rel, joined, starts, headings, seen)
            yield from found
            for pattern, what in RULES:
                for m in pattern.finditer(joined):
                    if not any(a <= m.start() < b for a, b in cited):
                        yield (f"{rel}:{line_of(starts, m.start())}: comment carries {what} ({m.group(0)}); "
                               "say what the code does and why, now")


def markdown_problems(root, headings, seen):
    """Citations in Markdown: the whole file one block, so that a citation may wrap."""
    for path in files_under(root, MARKDOWN_ROOTS, lambda path: path.endswith(".md")):
        seen["files"] += 1
        rel = os.path.relpath(path, root)
        lines = open(path, encoding="utf-8").read().split("\n")
        for joined, starts in blocks(list(enumerate(lines, 1))):
            yield from citations(rel, joined, starts, headings, seen)[1]


def main(root):
    results = open(os.path.join(root, "perf", "RESULTS.md"), encoding="utf-8").read()
    headings = {" ".join(h.split()) for h in re.findall(r"^#+ (.+)$", results, re.MULTILINE)}
    seen = {"files": 0, "citations": 0}
    found = list(problems(root, headings, seen)) + list(markdown_problems(root, headings, seen))
    for p in found:
        print(p, file=sys.stderr)
    print(f"comments_present_test: {seen['files']} files, {seen['citations']} perf/RESULTS.md citations, "
          f"{len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
