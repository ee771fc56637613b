#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks packaging/spack/packages/rfa/package.py without Spack: it parses, declares the
variants cuda, nccl, fortran and hwloc with their dependencies, and its cmake_args map each
variant onto an option the project really has. A tiny stand-in for Spack's package DSL records
the directives. Usage: spack_recipe_test.py SOURCE_DIR"""
import ast
import os
import re
import sys
import types

RECORDED = []  # (directive, args, kwargs)


def directive(name):
    def record(*args, **kwargs):
        RECORDED.append((name, args, kwargs))
    return record


class FakeSpec:
    """A concrete spec: the enabled variants and cuda_arch values."""

    def __init__(self, on, cuda_arch=("none",)):
        self.on = set(on)
        self.variants = {"cuda_arch": types.SimpleNamespace(value=tuple(cuda_arch))}

    def satisfies(self, constraint):
        return all((c[1:] in self.on) == (c[0] == "+") for c in re.findall(r"[+~]\w+", constraint))


class CMakePackage:
    run_tests = False

    def __init__(self, spec):
        self.spec = spec

    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        return f"-D{name}={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.satisfies("+" + variant))


class CudaPackage:
    pass


def load_recipe(path):
    source = open(path, encoding="utf-8").read()
    ast.parse(source, path)  # a syntax error fails here, with its line
    fake = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "conflicts", "license"):
        setattr(fake, name, directive(name))
    fake.CMakePackage, fake.CudaPackage = CMakePackage, CudaPackage
    fake.__all__ = [n for n in dir(fake) if not n.startswith("_")]
    sys.modules["spack"] = types.ModuleType("spack")
    sys.modules["spack.package"] = fake
    namespace = {}
    exec(compile(source, path, "exec"), namespace)
    return namespace["Rfa"]


def project_options(root):
    names = set()
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
        for f in files:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                text = open(os.path.join(top, f), encoding="utf-8").read()
                names.update(re.findall(r"option\((RFA_\w+)", text))
                names.update(re.findall(r"set\((RFA_\w+) [^)]*CACHE", text))
    return names


def main(root):
    errors = []
    Rfa = load_recipe(os.path.join(root, "packaging", "spack", "packages", "rfa", "package.py"))
    variants = {a[0] for d, a, _ in RECORDED if d == "variant"} | {"cuda"}  # cuda: CudaPackage's
    for v in ("cuda", "nccl", "fortran", "hwloc"):
        if v not in variants:
            errors.append(f"no variant '{v}'")
    deps = {(a[0].split("@")[0].split("+")[0], k.get("when")) for d, a, k in RECORDED if d == "depends_on"}
    for dep, when in (("mpi", None), ("kokkos", None), ("hwloc", "+hwloc"), ("nccl", "+nccl"),
                      ("kokkos", "+cuda"), ("fortran", "+fortran")):
        if (dep, when) not in deps:
            errors.append(f"no depends_on('{dep}'{', when=' + repr(when) if when else ''})")
    if not any(d == "conflicts" and a[0] == "+nccl" and k.get("when") == "~cuda" for d, a, k in RECORDED):
        errors.append("no conflicts('+nccl', when='~cuda')")

    known = project_options(root)
    cases = [({"cuda", "nccl", "fortran", "hwloc"}, ("80", "90"),
              {"RFA_ENABLE_CUDA": "ON", "RFA_ENABLE_NCCL": "ON", "RFA_ENABLE_FORTRAN": "ON",
               "RFA_ENABLE_HWLOC": "ON", "RFA_CUDA_ARCHITECTURES": "80;90"}),
             (set(), ("none",), {"RFA_ENABLE_CUDA": "OFF", "RFA_ENABLE_NCCL": "OFF",
                                  "RFA_ENABLE_FORTRAN": "OFF", "RFA_ENABLE_HWLOC": "OFF"})]
    for on, archs, expected in cases:
        args = dict(a[2:].split("=", 1) for a in Rfa(FakeSpec(on, archs)).cmake_args())
        for name in args:
            if name not in known:
                errors.append(f"cmake_args sets {name}, which is no option of the project")
        for name, value in expected.items():
            if args.get(name) != value:
                errors.append(f"spec {sorted(on) or 'without variants'}: {name}={args.get(name)}, expected {value}")
        if archs[0] == "none" and "RFA_CUDA_ARCHITECTURES" in args:
            errors.append("RFA_CUDA_ARCHITECTURES set without cuda_arch")
    for e in errors:
        print("spack recipe:", e, file=sys.stderr)
    print(f"spack_recipe_test: {len(RECORDED)} directives, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
