#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The statements of what rfa supports agree where they can be compared mechanically: every
value of the C header's enums for layouts, masks, dtypes, strategies, devices and CUDA kernel
choices is named in the matching row of the README's table and of docs/supported.md, neither
names one the header lacks, and the two pages give the same head dims; the head dims CUDA
contexts take are the same set in both pages, rfa.h's head_dim field, the library's check
(src/engine/device_support.cpp) and the set the CUDA kernels are built for
(kernels_cuda/src/launch_dispatch.cuh); each pair of different head dims the CUDA kernels take
(MLA's 192 / 128) is named in rfa.h's value_head_dim, both pages and the library's check.

Usage: supported_agree_test.py SOURCE_DIR"""
import os
import re
import sys

# header enum -> (its values by the word the pages use, the row of each page that lists them)
ENUMS = {
    "rfa_layout_t": ({"CONTIGUOUS": "contiguous", "ZIGZAG": "zigzag", "STRIPE": "stripe", "BALANCED": "balanced"},
                     "layouts", "layouts"),
    "rfa_mask_t": ({"NONE": "none", "CAUSAL": "causal", "RANGES": "ranges"}, "masks", "masks"),
    "rfa_dtype_t": ({"FLOAT32": "fp32", "BFLOAT16": "bf16", "FLOAT16": "fp16"}, "storage dtypes", "storage dtypes"),
    "rfa_strategy_t": ({"RING": "ring", "ULYSSES": "ulysses", "ALLGATHER": "all-gather", "HYBRID": "hybrid",
                        "AUTO": "rfa_strategy_auto", "NEEDED": "needed-only"}, "strategies", "strategies"),
    "rfa_device_t": ({"HOST": "cpu|host", "CUDA": "cuda|nvidia"}, "devices", "devices"),
    "rfa_cuda_kernels_t": ({"DEFAULT": None, "AUTO": None, "RFA": "rfa's (cuda )?kernels", "CUDNN": "cudnn"},
                           "devices", "devices"),
}
# Words the pages would use for a value the header does not have.
FOREIGN = {"layouts": ["ring-attention", "llama3"], "storage dtypes": ["fp8", "int8"],
           "strategies": ["tree", "llama3"]}


def enum_values(header, name):
    match = re.search(r"typedef enum " + name + r" \{(.*?)\} " + name, header, re.S)
    if not match:
        raise SystemExit(f"supported_agree: no enum {name} in rfa.h")
    prefix = {"rfa_cuda_kernels_t": "RFA_CUDA_KERNELS_"}.get(name, "RFA_" + name[4:-2].upper() + "_")
    return re.findall(r"\b" + prefix + r"([A-Z0-9]+)\s*=", match.group(1))


def table_row(text, label, page):
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 2 and cells[1].lower() == label:
            return cells[2].lower()
    raise SystemExit(f"supported_agree: {page} has no table row '{label}'")


def numbers(text):
    return sorted({int(n) for n in re.findall(r"\b\d+\b", text)})


def cuda_head_dims(root, header, pages):
    """Each source's set of the head dims CUDA contexts take, by where it was found."""
    def found(pattern, text, where):
        match = re.search(pattern, text, re.S)
        if not match:
            raise SystemExit(f"supported_agree: no CUDA head dims in {where} (pattern {pattern})")
        return numbers(match.group(1))
    read = lambda path: open(os.path.join(root, path), encoding="utf-8").read()
    sets = {"rfa.h's head_dim": found(r"\(CUDA: ([0-9, or]+)[;)]", header, "rfa.h")}
    for page, text in pages.items():
        row = re.sub(r"\d+\s*/\s*\d+", "", table_row(text, "head dims", page))  # pairs of dims apart
        sets[page] = found(r";([^;|]*)\(cuda kernels\)", row, page)
    check = read(os.path.join("src", "engine", "device_support.cpp"))
    sets["device_support.cpp"] = found(r"(head_dim != \d+(?: && head_dim != \d+)+)\)", check,
                                       "device_support.cpp")
    dispatch = read(os.path.join("kernels_cuda", "src", "launch_dispatch.cuh"))
    pairs = re.search(r"using Sm80DimPairs = DimPairs<(.*?)>;", dispatch, re.S)
    if not pairs:
        raise SystemExit("supported_agree: no Sm80DimPairs in launch_dispatch.cuh")
    pairs = [(int(a), int(b)) for a, b in re.findall(r"DimPair<(\d+), (\d+)>", pairs.group(1))]
    sets["Sm80DimPairs"] = sorted(a for a, b in pairs if a == b)
    return sets, [p for p in pairs if p[0] != p[1]]


def value_pair_problems(root, header, pages, value_pairs):
    """Each pair of different head dims the CUDA kernels are built for is named, as D / DV, where
    rfa.h's value_head_dim and both pages' head dims rows speak of CUDA, and taken by the
    library's check."""
    check = open(os.path.join(root, "src", "engine", "device_support.cpp"), encoding="utf-8").read()
    # Where each source speaks of CUDA: rfa.h's value_head_dim from the word CUDA on, the pages'
    # head dims rows from their last ';' to "(CUDA kernels)".
    value_doc = re.search(r"int64_t value_head_dim;.*?(CUDA.*?)\*/", header, re.S)
    texts = {"rfa.h's value_head_dim (on CUDA)": value_doc.group(1) if value_doc else ""}
    for page, text in pages.items():
        cuda_part = re.search(r";([^;|]*)\(cuda kernels\)", table_row(text, "head dims", page))
        texts[page + " (CUDA kernels)"] = cuda_part.group(1) if cuda_part else ""
    problems = []
    for d, dv in value_pairs:
        for where, text in texts.items():
            if not re.search(rf"\b{d}\s*/\s*{dv}\b", text):
                problems.append(f"{where} does not name the CUDA kernels' head dims {d} / {dv}")
        if f"head_dim == {d} && value_dim == {dv}" not in check:
            problems.append(f"device_support.cpp does not take head_dim {d} with value dim {dv}")
    return problems


def main(root):
    header = open(os.path.join(root, "include", "rfa", "rfa.h"), encoding="utf-8").read()
    pages = {page: open(os.path.join(root, page), encoding="utf-8").read()
             for page in ("README.md", os.path.join("docs", "supported.md"))}
    problems = []
    for name, (words, readme_row, supported_row) in ENUMS.items():
        values = enum_values(header, name)
        if sorted(values) != sorted(words):
            problems.append(f"rfa.h's {name} has {values}; this test knows {sorted(words)}: update both pages and it")
            continue
        for page, label in (("README.md", readme_row), (os.path.join("docs", "supported.md"), supported_row)):
            row = table_row(pages[page], label, page)
            for value, word in words.items():
                if word is not None and not re.search(word, row):
                    problems.append(f"{page} row '{label}' does not name {name}'s {value} ('{word}')")
            for word in FOREIGN.get(label, []):
                if word in row:
                    problems.append(f"{page} row '{label}' names '{word}', which rfa.h's {name} lacks")
    dims = [table_row(pages[p], "head dims", p) for p in pages]
    if dims[0] != dims[1]:
        problems.append(f"the head dims differ: README '{dims[0]}', docs/supported.md '{dims[1]}'")
    cuda, value_pairs = cuda_head_dims(root, header, pages)
    if len({tuple(v) for v in cuda.values()}) != 1:
        problems.append("the head dims of CUDA contexts differ: " + ", ".join(f"{k} {v}" for k, v in cuda.items()))
    problems += value_pair_problems(root, header, pages, value_pairs)
    for p in problems:
        print("supported_agree:", p)
    print(f"supported_agree: {len(ENUMS)} enums against 2 pages, CUDA head dims {cuda['Sm80DimPairs']} in "
          f"{len(cuda)} places and {value_pairs} in 4, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
