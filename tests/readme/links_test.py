#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every relative link of the project's Markdown pages (README.md, docs/*.md and the other *.md
files of the tree) names a file or folder that exists inside the tree, and a link with a
#fragment to a Markdown page names one of its headings (as GitHub spells their anchors).
Links inside code (fenced blocks, `spans`) are not links and are skipped; so are links with a
scheme (https:, mailto:). Usage: links_test.py SOURCE_DIR; exits 1 naming each broken link."""
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, re.sub(r"`[^`]*`", "``", line)


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown page."""
    found, seen = set(), {}
    for _, line in prose_lines(open(path, encoding="utf-8").read()):
        m = HEADING.match(line)
        if not m:
            continue
        title = re.sub(r"\{#[^}]*\}", "", m.group(1))        # Doxygen's explicit ids
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link keeps its text
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def pages(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build", "_build")))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.relpath(os.path.join(top, name), root)


def check(root, page):
    problems = []
    path = os.path.join(root, page)
    for n, line in prose_lines(open(path, encoding="utf-8").read()):
        for target in LINK.findall(line):
            if SCHEME.match(target):
                continue
            file_part, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{page} line {n}: link '{target}'"
            if os.path.relpath(dest, root).startswith(".."):
                problems.append(f"{where} leaves the source tree")
            elif not os.path.exists(dest):
                problems.append(f"{where}: {os.path.relpath(dest, root)} does not exist")
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                problems.append(f"{where}: {os.path.relpath(dest, root)} has no heading with anchor #{fragment}")
    return problems


def main(root):
    checked = list(pages(root))
    problems = [p for page in checked for p in check(root, page)]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"links_test: {len(checked)} pages, {len(problems)} broken links")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1]))
