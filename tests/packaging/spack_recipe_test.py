#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the Spack recipes in packaging/spack without Spack (spack_standin.py stands in for
Spack's package API and records the directives).

rfa: the variants cuda (with cuda_arch), nccl, cudnn, fortran, hwloc and kokkos_host; what
each spec asks of its dependencies (Kokkos's backend and cuda_arch follow rfa's variants);
the conflicts; cmake_args for several specs, each variable one the project really reads (a
copy of the recipe with a misspelt option must fail that check); every variant changes
cmake_args or a dependency. cudnn-frontend: a checksummed version, and an install that puts
the wheel's include/ into the prefix (run on a small made-up wheel).
Usage: spack_recipe_test.py SOURCE_DIR"""
import os
import re
import sys
import tempfile
import types
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spack_standin as standin  # noqa: E402
from spack_standin import FakeSpec  # noqa: E402

def project_options(root):
    """The cache variables the project reads: its options and cache strings, and the
    result variables of its find_path/find_library/find_program calls."""
    names = set()
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
        for f in files:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                text = open(os.path.join(top, f), encoding="utf-8").read()
                names.update(re.findall(r"option\((RFA_\w+)", text))
                names.update(re.findall(r"set\((RFA_\w+) [^)]*CACHE", text))
                names.update(re.findall(r"find_(?:path|library|program)\((\w+)", text))
    return names


# ---- specs (concrete, as Spack would hand them to the recipe)

def rfa_spec(on, cuda_arch="none", kokkos_host="openmp", kokkos_cuda=None, mpi="openmpi"):
    """An rfa spec with the variants in `on`; its Kokkos has CUDA when +cuda unless told."""
    kokkos_cuda = "cuda" in on if kokkos_cuda is None else kokkos_cuda
    mpi_spec = FakeSpec(mpi, mpicc=f"/spack/{mpi}/bin/mpicc")
    deps = {
        "kokkos": FakeSpec("kokkos", on={"cuda"} if kokkos_cuda else set()),
        "mpi": mpi_spec, mpi: mpi_spec,
        "cudnn": FakeSpec("cudnn"), "cudnn-frontend": FakeSpec("cudnn-frontend"),
        "cmake": FakeSpec("cmake", command=None),
    }
    values = {"cuda_arch": cuda_arch.split(","), "kokkos_host": [kokkos_host]}
    return FakeSpec("rfa", on=on, values=values, deps=deps)


GPU = {"cuda", "nccl", "cudnn", "fortran", "hwloc"}
HOST = {"fortran", "hwloc"}


def check_directives(errors):
    variants = {a[0]: k for d, a, k in standin.RECORDED if d == "variant"}
    for v in ("nccl", "cudnn", "fortran", "hwloc", "kokkos_host"):
        if v not in variants:
            errors.append(f"no variant '{v}'")
    if set(variants.get("kokkos_host", {}).get("values", ())) != {"openmp", "threads", "serial"}:
        errors.append("kokkos_host does not offer openmp, threads and serial")

    def deps_of(spec):
        return {standin.split_dependency(a[0])[0] for d, a, k in standin.RECORDED
                if d == "depends_on" and spec.satisfies(k.get("when") or "")}

    for name, spec, present, absent in (
            ("+cuda+cudnn", rfa_spec(GPU, "90"), {"mpi", "kokkos", "hwloc", "nccl", "cudnn",
                                                  "cudnn-frontend", "fortran"}, set()),
            ("~cuda", rfa_spec(HOST), {"mpi", "kokkos", "hwloc", "fortran"},
             {"nccl", "cudnn", "cudnn-frontend"}),
            ("~fortran~hwloc", rfa_spec(set()), {"mpi", "kokkos"}, {"hwloc", "fortran"})):
        got = deps_of(spec)
        for dep in sorted(present - got):
            errors.append(f"spec {name}: no depends_on('{dep}')")
        for dep in sorted(absent & got):
            errors.append(f"spec {name}: depends on '{dep}', which it does not use")

    # Kokkos follows rfa: its CUDA backend and cuda_arch, and the host backend kokkos_host names.
    for name, spec, wanted, unwanted in (
            ("+cuda cuda_arch=90", rfa_spec(GPU, "90"),
             {"+cuda", "+cuda_lambda", "+wrapper", "cuda_arch=90", "+openmp"}, {"~cuda"}),
            ("+cuda cuda_arch=80 kokkos_host=threads", rfa_spec(GPU, "80", "threads"),
             {"+cuda", "cuda_arch=80", "+threads", "~openmp"}, {"cuda_arch=90"}),
            ("~cuda", rfa_spec(HOST), {"~cuda", "+openmp"}, {"+cuda"}),
            ("~cuda kokkos_host=serial", rfa_spec(HOST, kokkos_host="serial"),
             {"~cuda", "+serial", "~openmp", "~threads"}, {"+openmp"})):
        asked = standin.dependency_constraints(spec, "kokkos")
        for t in sorted(wanted - asked):
            errors.append(f"spec {name}: Kokkos is not asked for {t} (asked: {sorted(asked)})")
        for t in sorted(unwanted & asked):
            errors.append(f"spec {name}: Kokkos is asked for {t}")
        contradictions = {t[1:] for t in asked if t[0] == "+"} & {t[1:] for t in asked if t[0] == "~"}
        if contradictions:
            errors.append(f"spec {name}: Kokkos is asked for both +x and ~x: {sorted(contradictions)}")

    for name, spec in (("+cudnn~cuda", rfa_spec(HOST | {"cudnn"})), ("+nccl~cuda", rfa_spec(HOST | {"nccl"})),
                       ("+cuda cuda_arch=none", rfa_spec(GPU))):
        if not standin.conflicts_of(spec):
            errors.append(f"spec {name} runs into no conflict")
    for name, spec in (("+cuda+cudnn cuda_arch=90", rfa_spec(GPU, "90")), ("~cuda", rfa_spec(HOST))):
        for msg in standin.conflicts_of(spec):
            errors.append(f"spec {name}, a valid one, conflicts: {msg}")


# ---- cmake_args

CMAKE_CASES = [
    ("+cuda+nccl+cudnn cuda_arch=90", rfa_spec(GPU, "90"),
     {"RFA_ENABLE_CUDA": "ON", "RFA_ENABLE_NCCL": "ON", "RFA_ENABLE_CUDNN": "ON",
      "RFA_ENABLE_FORTRAN": "ON", "RFA_ENABLE_HWLOC": "ON", "RFA_CUDA_ARCHITECTURES": "90",
      "CUDNN_INCLUDE_DIR": "/spack/cudnn/include",
      "CUDNN_FRONTEND_INCLUDE_DIR": "/spack/cudnn-frontend/include", "RFA_ENABLE_MPI": "ON",
      "RFA_ENABLE_NATIVE": "OFF", "RFA_ENABLE_TESTS": "OFF"}),
    ("+cuda~nccl~cudnn cuda_arch=80", rfa_spec({"cuda", "fortran", "hwloc"}, "80"),
     {"RFA_ENABLE_CUDA": "ON", "RFA_ENABLE_NCCL": "OFF", "RFA_ENABLE_CUDNN": "OFF",
      "RFA_CUDA_ARCHITECTURES": "80", "CUDNN_INCLUDE_DIR": None, "CUDNN_FRONTEND_INCLUDE_DIR": None}),
    ("~cuda+fortran+hwloc", rfa_spec(HOST),
     {"RFA_ENABLE_CUDA": "OFF", "RFA_ENABLE_NCCL": "OFF", "RFA_ENABLE_CUDNN": "OFF",
      "RFA_ENABLE_FORTRAN": "ON", "RFA_ENABLE_HWLOC": "ON", "RFA_CUDA_ARCHITECTURES": None}),
    ("without variants", rfa_spec(set()),
     {"RFA_ENABLE_CUDA": "OFF", "RFA_ENABLE_NCCL": "OFF", "RFA_ENABLE_CUDNN": "OFF",
      "RFA_ENABLE_FORTRAN": "OFF", "RFA_ENABLE_HWLOC": "OFF", "RFA_CUDA_ARCHITECTURES": None}),
]


def cmake_args_of(Rfa, spec, run_tests=False):
    package = Rfa(spec)
    package.run_tests = run_tests
    return standin.parse_cmake_args(package.cmake_args())


def check_cmake_args(Rfa, known, errors):
    for name, spec, expected in CMAKE_CASES:
        args = cmake_args_of(Rfa, spec)
        for var in args:
            if var not in known:
                errors.append(f"cmake_args sets {var}, which is no option of the project")
        for var, value in expected.items():
            if args.get(var) != value:
                errors.append(f"spec {name}: {var}={args.get(var)}, expected {value}")
    # With --test the suite is built; only Open MPI's mpiexec takes --oversubscribe.
    for mpi, flags in (("openmpi", "--oversubscribe"), ("mpich", "")):
        args = cmake_args_of(Rfa, rfa_spec(HOST, mpi=mpi), run_tests=True)
        if args.get("RFA_ENABLE_TESTS") != "ON" or args.get("RFA_MPIEXEC_EXTRA_FLAGS") != flags:
            errors.append(f"--test with ^{mpi}: RFA_ENABLE_TESTS={args.get('RFA_ENABLE_TESTS')}, "
                          f"RFA_MPIEXEC_EXTRA_FLAGS={args.get('RFA_MPIEXEC_EXTRA_FLAGS')!r}")
    # Every variant does something: turning it off changes cmake_args, or what Kokkos is asked.
    for variant, on, off in (
            ("cuda", rfa_spec({"cuda", "fortran", "hwloc"}, "90"), rfa_spec(HOST)),
            ("nccl", rfa_spec(GPU, "90"), rfa_spec(GPU - {"nccl"}, "90")),
            ("cudnn", rfa_spec(GPU, "90"), rfa_spec(GPU - {"cudnn"}, "90")),
            ("fortran", rfa_spec(HOST), rfa_spec({"hwloc"})),
            ("hwloc", rfa_spec(HOST), rfa_spec({"fortran"}))):
        if cmake_args_of(Rfa, on) == cmake_args_of(Rfa, off):
            errors.append(f"variant {variant} changes nothing in cmake_args")
    if len({frozenset(standin.dependency_constraints(rfa_spec(HOST, kokkos_host=h), "kokkos"))
            for h in ("openmp", "threads", "serial")}) != 3:
        errors.append("kokkos_host does not change what Kokkos is asked for")


def misspelt_option_is_caught(root, recipe, known):
    """The cmake_args check must fail on a recipe that maps a variant onto no real option."""
    text = open(recipe, encoding="utf-8").read().replace('"RFA_ENABLE_CUDNN"', '"RFA_ENABLE_CUDNN_X"')
    recorded = len(standin.RECORDED)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "package.py")
        open(path, "w", encoding="utf-8").write(text)
        Rfa = standin.load_recipe(path, "Rfa")
    del standin.RECORDED[recorded:]
    errors = []
    check_cmake_args(Rfa, known, errors)
    return any("RFA_ENABLE_CUDNN_X, which is no option" in e for e in errors)


# ---- cudnn-frontend

def check_cudnn_frontend(root, errors):
    recipe = os.path.join(root, "packaging", "spack", "packages", "cudnn-frontend", "package.py")
    recorded = len(standin.RECORDED)
    CudnnFrontend = standin.load_recipe(recipe, "CudnnFrontend")
    versions = [(a, k) for d, a, k in standin.RECORDED[recorded:] if d == "version"]
    del standin.RECORDED[recorded:]
    if not versions or not all(re.fullmatch(r"[0-9a-f]{64}", k.get("sha256", "")) and
                               k.get("url", "").endswith(".whl") and k.get("expand") is False
                               for a, k in versions):
        errors.append(f"cudnn-frontend: versions must be wheels with a sha256, not expanded: {versions}")
    with tempfile.TemporaryDirectory() as tmp:
        wheel = os.path.join(tmp, "frontend.whl")
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr("include/cudnn_frontend.h", "// frontend\n")
            z.writestr("include/cudnn_frontend/graph.h", "// graph\n")
            z.writestr("cudnn/__init__.py", "")
        package = CudnnFrontend(FakeSpec("cudnn-frontend"))
        package.stage = types.SimpleNamespace(archive_file=wheel)
        prefix = standin.Prefix(os.path.join(tmp, "prefix"))
        package.install(package.spec, prefix)
        installed = sorted(os.path.relpath(os.path.join(top, f), prefix)
                           for top, _, files in os.walk(prefix) for f in files)
        if installed != ["include/cudnn_frontend.h", "include/cudnn_frontend/graph.h"]:
            errors.append(f"cudnn-frontend installs {installed}, not the wheel's include/ alone")
    for f in getattr(CudnnFrontend, "sanity_check_is_file", []):
        if not f.startswith("include/"):
            errors.append(f"cudnn-frontend: sanity check {f} is outside include/")


def main(root):
    errors = []
    recipe = os.path.join(root, "packaging", "spack", "packages", "rfa", "package.py")
    Rfa = standin.load_recipe(recipe, "Rfa")
    check_directives(errors)
    known = project_options(root)
    check_cmake_args(Rfa, known, errors)
    directives = len(standin.RECORDED)
    if not misspelt_option_is_caught(root, recipe, known):
        errors.append("a recipe mapping a variant onto a misspelt option passes the cmake_args check")
    check_cudnn_frontend(root, errors)
    for e in errors:
        print("spack recipe:", e, file=sys.stderr)
    print(f"spack_recipe_test: {directives} directives, {len(CMAKE_CASES)} specs' cmake_args, "
          f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
