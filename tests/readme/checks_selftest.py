#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The page checks catch what they are for, on small made-up trees: readme_blocks.py fails on an
unmarked block in a docs/ page as in the README, and keeps a docs/ page's fragment apart from
the README's fragment of the same prelude; links_test.py fails on a link to a missing file or
heading and passes the same links once they exist. Usage: checks_selftest.py TESTS_README_DIR"""
import os
import subprocess
import sys
import tempfile

C_BLOCK = "<!-- readme-test: fragment documents_c.c -->\n```c\no.doc_boundary_count = 0;\n```\n"


def run(script, *args):
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def write(root, page, text):
    path = os.path.join(root, page)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(here):
    blocks, links = os.path.join(here, "readme_blocks.py"), os.path.join(here, "links_test.py")
    failures = []

    def expect(ok, what, output):
        if not ok:
            failures.append(f"{what}:\n{output}")

    with tempfile.TemporaryDirectory() as root:
        out = os.path.join(root, "out")
        write(root, "README.md", "# r\n\n" + C_BLOCK)
        write(root, "docs/page.md", "# p\n\n```sh\necho unmarked\n```\n")
        rc, text = run(blocks, root, out)
        expect(rc == 1 and "docs/page.md line 3" in text, "an unmarked block in docs/page.md fails", text)

        write(root, "docs/page.md", "# p\n\n" + C_BLOCK)
        built = ["fragments/documents_c.c", "docs/page/fragments/documents_c.c"]
        rc, text = run(blocks, root, out, *built)
        expect(rc == 0 and all(os.path.isfile(os.path.join(out, b)) for b in built),
               "the README's and docs/page.md's fragments of one prelude are both written", text)
        rc, text = run(blocks, root, out, built[0])
        expect(rc == 1 and "which no test builds" in text, "a fragment no test builds fails", text)

        write(root, "README.md", "# r\n\n[p](docs/page.md#part-two) and [x](docs/missing.md)\n")
        rc, text = run(links, root)
        expect(rc == 1 and "docs/missing.md does not exist" in text and "#part-two" in text,
               "links to a missing file and a missing heading fail", text)
        write(root, "docs/missing.md", "# m\n")
        write(root, "docs/page.md", "# p\n\n## Part two\n\n[back](../README.md) `[code](nowhere.md)`\n")
        rc, text = run(links, root)
        expect(rc == 0, "the same links pass once file and heading exist", text)

    for f in failures:
        print(f"checks_selftest: {f}", file=sys.stderr)
    print(f"checks_selftest: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))))
