# SPDX-License-Identifier: BSD-3-Clause
"""The comments of a source file, line by line, without its code or string literals.

comments(path, text) -> [(line number, comment text)] for C, C++ and CUDA (// and /* */),
Fortran (!), CMake (# and #[[ ]]) and shell, Makefile, Python and pkg-config files (#). A
*.in template is read as the file it becomes (foo.h.in as C, rfa.pc.in as pkg-config); a file
without an extension by its #! line (perf/suite as Python, a bash script as shell). Files of any
other kind have no comments here (kind() returns None)."""
import os
import re

C_LIKE = {".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".map"}
HASH = {".sh", ".pc", ".mk"}


def kind(path):
    """'c', 'fortran', 'cmake', 'hash', 'python' or None, from the file's name (and .ci/run's place)."""
    name = os.path.basename(path)
    if name.endswith(".in"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext in C_LIKE:
        return "c"
    if ext == ".f90":
        return "fortran"
    if ext == ".cmake" or name == "CMakeLists.txt":
        return "cmake"
    if ext == ".py":
        return "python"
    if ext in HASH or name == "Makefile" or path.replace(os.sep, "/").endswith(".ci/run"):
        return "hash"
    if not ext:
        return _interpreter(path)
    return None


def _interpreter(path):
    """'python' or 'hash' for a script whose #! line names Python or a shell, else None."""
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    if b"python" in first:
        return "python"
    if any(shell in first for shell in (b"bash", b"/sh", b" sh")):
        return "hash"
    return None


def _line_at(text, pos):
    return text.count("\n", 0, pos) + 1


def _split(text, start, body):
    """One (line, text) per line of a comment whose body starts at offset `start`."""
    first = _line_at(text, start)
    return [(first + i, part) for i, part in enumerate(body.split("\n"))]


def _find(text, what, start):
    """Where `what` starts at or after `start`, or the end of the text."""
    at = text.find(what, start)
    return len(text) if at < 0 else at


def _string_end(text, start, string):
    m = string.match(text, start)
    return m.end() if m else start + 1


def _scan(text, token, step):
    """The comments met walking `text` from one `token` match to the next. step(text, match)
    gives the comment's (start, end) or None, and where the walk goes on."""
    out, pos = [], 0
    while True:
        m = token.search(text, pos)
        if not m:
            return out
        body, pos = step(text, m)
        if body:
            out += _split(text, body[0], text[body[0]:body[1]])


_C_TOKEN = re.compile(r'//|/\*|(?:u8|[uUL])?R"([^()\\\s]{0,16})\(|"|\'(?:\\.|[^\\\'\n]){1,10}\'')
_C_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def _c_step(text, m):
    tok = m.group(0)
    if tok == "//":
        end = _find(text, "\n", m.end())
        return (m.end(), end), end
    if tok == "/*":
        end = _find(text, "*/", m.end())
        return (m.end(), end), end + 2
    if tok.endswith("("):  # raw string: up to )delim"
        return None, _find(text, ")" + m.group(1) + '"', m.end()) + len(m.group(1)) + 2
    if tok == '"':
        return None, _string_end(text, m.start(), _C_STRING)
    return None, m.end()  # a character literal, skipped whole


def _c_comments(text):
    return _scan(text, _C_TOKEN, _c_step)


def _fortran_comments(text):
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        quote = None
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "!":
                out.append((number, line[i + 1:]))
                break
    return out


_CMAKE_TOKEN = re.compile(r'#\[(=*)\[|#|"|(?<![^\s(])\[(=*)\[')
_CMAKE_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def _cmake_step(text, m):
    tok = m.group(0)
    if tok.startswith("#["):  # bracket comment
        end = _find(text, "]" + m.group(1) + "]", m.end())
        return (m.end(), end), end + len(m.group(1)) + 2
    if tok == "#":
        end = _find(text, "\n", m.end())
        return (m.end(), end), end
    if tok == '"':
        return None, _string_end(text, m.start(), _CMAKE_STRING)
    return None, _find(text, "]" + m.group(2) + "]", m.end()) + len(m.group(2)) + 2  # bracket argument


def _cmake_comments(text):
    return _scan(text, _CMAKE_TOKEN, _cmake_step)


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")


def _hash_comments(text, heredocs_open=True):
    """# after a blank, ;, (, | or & (or at the line's start) outside quotes; heredoc bodies skipped."""
    out, quote, heredocs, skip_to = [], None, [], None
    for number, line in enumerate(text.split("\n"), 1):
        if skip_to is not None:
            if line.strip() == skip_to:
                skip_to = heredocs.pop(0) if heredocs else None
            continue
        i = 0
        while i < len(line):
            ch = line[i]
            if quote:
                if ch == "\\" and quote != "'":
                    i += 1
                elif line.startswith(quote, i):
                    i += len(quote) - 1
                    quote = None
            elif ch in "'\"":
                quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
                i += len(quote) - 1
            elif ch == "\\":
                i += 1
            elif ch == "#" and (i == 0 or line[i - 1] in " \t;(|&"):
                out.append((number, line[i + 1:]))
                break
            elif ch == "<" and heredocs_open:
                m = _HEREDOC.match(line, i)
                if m:
                    heredocs.append(m.group(2))
                    i = m.end()
                    continue
            i += 1
        if heredocs and quote is None:
            skip_to = heredocs.pop(0)
    return out


_BY_KIND = {"c": _c_comments, "fortran": _fortran_comments, "cmake": _cmake_comments, "hash": _hash_comments,
            "python": lambda text: _hash_comments(text, heredocs_open=False)}


def comments(path, text):
    k = kind(path)
    return _BY_KIND[k](text) if k else []
