#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every function of rfa's C API (RFA_API in include/rfa/rfa.h and rfa_mpi.h) is bound in the
Fortran module (fortran/rfa.f90.in, bind(c, name="...")): by its own name, through its `_dim`
form (the Fortran generics take the head dim from the array), or through the function
THROUGH names; and every name the module binds is a function of the C API.

Usage: c_api_bound_test.py SOURCE_DIR"""
import os
import re
import sys

# C functions Fortran cannot call as they are, and the one it calls instead.
THROUGH = {
    # A C MPI_Comm: Fortran hands its communicator's integer handle to the MPI_Fint form.
    "rfa_context_create": "rfa_context_create_fint",
}


def c_functions(source):
    names = set()
    for header in ("rfa.h", "rfa_mpi.h"):
        with open(os.path.join(source, "include", "rfa", header), encoding="utf-8") as f:
            text = f.read()
        names |= set(re.findall(r"^RFA_API\b[^(]*?\b(rfa_\w+)\s*\(", text, re.M))
    return names


def fortran_bindings(source):
    with open(os.path.join(source, "fortran", "rfa.f90.in"), encoding="utf-8") as f:
        return set(re.findall(r'bind\(\s*c\s*,\s*name\s*=\s*"(rfa_\w+)"', f.read(), re.I))


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    c_api, bound = c_functions(sys.argv[1]), fortran_bindings(sys.argv[1])
    if len(c_api) < 30 or len(bound) < 30:
        raise SystemExit(f"c_api_bound: read {len(c_api)} C functions and {len(bound)} bindings; the patterns broke")
    problems = []
    for name in sorted(c_api):
        if name not in bound and name + "_dim" not in bound and THROUGH.get(name) not in bound:
            problems.append(f"{name} (rfa.h) has no Fortran binding in fortran/rfa.f90.in")
    for name in sorted(bound - c_api):
        problems.append(f"fortran/rfa.f90.in binds {name}, which the C API does not declare")
    for name, via in sorted(THROUGH.items()):
        if name not in c_api or via not in bound:
            problems.append(f"THROUGH: {name} through {via} is stale")
    for p in problems:
        print("c_api_bound: " + p)
    if problems:
        return 1
    print(f"c_api_bound: {len(c_api)} C functions, each bound in Fortran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
