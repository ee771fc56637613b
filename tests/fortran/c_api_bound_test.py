#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every function of rfa's C API (RFA_API in include/rfa/rfa.h and rfa_mpi.h) is bound in the
Fortran module (fortran/rfa.f90.in, bind(c, name="...")): by its own name, through its `_dim`
form (the Fortran generics take the head dim from the array), or through the function
THROUGH names; every name the module binds is a function of the C API; and a Fortran program
can call each one: the module makes it public by its own name, by its name without `_dim`, or
by the name PUBLIC_AS gives (the module's declarations are private by default), unless
INTERNAL says why the module alone calls it.

Usage: c_api_bound_test.py SOURCE_DIR"""
import os
import re
import sys

# C functions Fortran cannot call as they are, and the one it calls instead.
THROUGH = {
    # A C MPI_Comm: Fortran hands its communicator's integer handle to the MPI_Fint form.
    "rfa_context_create": "rfa_context_create_fint",
}


# C functions a Fortran program calls by another public name.
PUBLIC_AS = {
    "rfa_context_create_fint": "rfa_context_create",  # one generic for both kinds of communicator
    "rfa_check_version_major": "rfa_check_version",  # rfa.h's rfa_check_version() passes the header's major
    "rfa_options_init_sized": "rfa_options_init",  # the struct's size comes from the Fortran type
}

# C functions only the module calls, and why.
INTERNAL = {
    "rfa_report_binding_error": "the module reports its own argument checks (array shapes) through it",
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


def fortran_public(source):
    with open(os.path.join(source, "fortran", "rfa.f90.in"), encoding="utf-8") as f:
        text = f.read()
    names = set()
    for line in re.findall(r"^\s*public\s*::\s*(.*)$", text, re.M | re.I):
        names |= {n.strip() for n in line.split(",") if n.strip()}
    return names


def public_name(name):
    if name in PUBLIC_AS:
        return PUBLIC_AS[name]
    return name[: -len("_dim")] if name.endswith("_dim") else name


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
    public = fortran_public(sys.argv[1])
    if len(public) < 30:
        raise SystemExit(f"c_api_bound: read {len(public)} public names; the pattern broke")
    for name in sorted(c_api):
        if name not in INTERNAL and public_name(name) not in public:
            problems.append(f"{name} (rfa.h) is bound but not public in the Fortran module (no public "
                            f"{public_name(name)})")
    for name in sorted(set(INTERNAL) | set(PUBLIC_AS)):
        if name not in c_api:
            problems.append(f"INTERNAL or PUBLIC_AS names {name}, which the C API does not declare")
    for name, via in sorted(THROUGH.items()):
        if name not in c_api or via not in bound:
            problems.append(f"THROUGH: {name} through {via} is stale")
    for p in problems:
        print("c_api_bound: " + p)
    if problems:
        return 1
    print(f"c_api_bound: {len(c_api)} C functions, each bound in Fortran and public there "
          f"({len(INTERNAL)} called by the module alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
