#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the Spack recipes in packaging/spack without Spack (spack_standin.py stands in for
Spack's package API and records the directives).

rfa: the variants cuda (with cuda_arch), nccl, cudnn, fortran, hwloc and kokkos_host; what
each spec asks of its dependencies (Kokkos's backend and cuda_arch follow rfa's variants; the
Kokkos versions tested are allowed and the untested majors around them are not; Kokkos 5 at
C++20);
the conflicts; cmake_args for several specs, each variable one the project really reads (a
copy of the recipe with a misspelt option must fail that check); every variant changes
cmake_args or a dependency; and the smoke test: what it keeps for `spack test run`, when it
runs, the commands it runs (recorded), and that it fails when the install does not match the
spec or the consumer does not run. cudnn-frontend: a checksummed version, and an install that
puts the wheel's include/ into the prefix (run on a small made-up wheel).
Usage: spack_recipe_test.py SOURCE_DIR"""
import contextlib
import io
import os
import re
import sys
import tempfile
import types
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spack_standin as standin  # noqa: E402
from spack_standin import FakeSpec  # noqa: E402

SMOKE_DIR = os.path.join("tests", "consumer", "smoke")


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
                names.update(re.findall(r"rfa_gpu_option\((RFA_\w+)", text))
                names.update(re.findall(r"find_(?:path|library|program)\((\w+)", text))
    return names


# ---- specs (concrete, as Spack would hand them to the recipe)

def rfa_spec(on, cuda_arch="none", kokkos_host="openmp", kokkos_cuda=None, mpi="openmpi", kokkos="4.6.1"):
    """An rfa spec with the variants in `on`; its Kokkos has CUDA when +cuda unless told."""
    kokkos_cuda = "cuda" in on if kokkos_cuda is None else kokkos_cuda
    mpi_spec = FakeSpec(mpi, mpicc=f"/spack/{mpi}/bin/mpicc")
    deps = {
        "kokkos": FakeSpec("kokkos", on={"cuda"} if kokkos_cuda else set(), version=kokkos),
        "mpi": mpi_spec, mpi: mpi_spec,
        "cudnn": FakeSpec("cudnn"), "cudnn-frontend": FakeSpec("cudnn-frontend"), "cutlass": FakeSpec("cutlass"),
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
    # The Kokkos versions the project is tested against (docs/building.md) are all allowed.
    ranges = [a[0].split("@", 1)[1] for d, a, k in standin.RECORDED
              if d == "depends_on" and a[0].startswith("kokkos@") and not k.get("when")]
    for version in ("3.4.1", "4.6.1", "5.2.2"):
        if not ranges or not all(standin.version_in(version, r) for r in ranges):
            errors.append(f"Kokkos {version} is not allowed (depends_on kokkos@{ranges})")
    # ... and the range ends: a Kokkos major nobody built rfa with is not taken unasked.
    for version in ("3.3.1", "6.0.0"):
        if ranges and all(standin.version_in(version, r) for r in ranges):
            errors.append(f"Kokkos {version}, never tested, is allowed (depends_on kokkos@{ranges})")

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
            ("+cuda cuda_arch=90 ^kokkos@5", rfa_spec(GPU, "90", kokkos="5.2.2"),
             {"+cuda", "+wrapper", "cuda_arch=90", "+openmp", "cxxstd=20"}, {"~cuda", "+cuda_lambda"}),
            ("~cuda ^kokkos@5", rfa_spec(HOST, kokkos="5.2.2"), {"~cuda", "+openmp", "cxxstd=20"}, {"+cuda"}),
            ("+cuda cuda_arch=80 kokkos_host=threads", rfa_spec(GPU, "80", "threads"),
             {"+cuda", "cuda_arch=80", "+threads", "~openmp"}, {"cuda_arch=90"}),
            ("~cuda", rfa_spec(HOST), {"~cuda", "+openmp"}, {"+cuda", "cxxstd=20"}),
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
    ("+cuda+nccl+cudnn+hopper cuda_arch=90", rfa_spec(GPU | {"hopper"}, "90"),
     {"RFA_ENABLE_HOPPER": "ON", "CUTLASS_INCLUDE_DIR": "/spack/cutlass/include"}),
    ("+cuda+nccl+cudnn cuda_arch=90", rfa_spec(GPU, "90"),
     {"RFA_ENABLE_CUDA": "ON", "RFA_ENABLE_NCCL": "ON", "RFA_ENABLE_CUDNN": "ON", "RFA_ENABLE_HOPPER": "OFF",
      "CUTLASS_INCLUDE_DIR": None,
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
            ("hopper", rfa_spec(GPU | {"hopper"}, "90"), rfa_spec(GPU, "90")),
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
        Rfa = standin.load_recipe(path, "Rfa", **recording_tools(Session()))
    del standin.RECORDED[recorded:]
    errors = []
    check_cmake_args(Rfa, known, errors)
    return any("RFA_ENABLE_CUDNN_X, which is no option" in e for e in errors)


# ---- the smoke test, with recorded commands

class Session:
    """What the recorded tools saw and what the smoke program answers."""

    def __init__(self):
        self.commands = []
        self.cached = []
        self.reply = ""
        self.mpiexec_found = True


class Recorder:
    """An Executable that records its command line; a run of rfa_smoke answers session.reply."""

    def __init__(self, path, session):
        self.path, self.session = str(path), session

    def __call__(self, *args, output=None, error=None):
        command = [self.path, *map(str, args)]
        self.session.commands.append(command)
        return self.session.reply if any(c.endswith("rfa_smoke") for c in command) else ""


def recording_tools(session):
    def which(*names, path=None, required=False):
        return Recorder(os.path.join(path, names[0]), session) if session.mpiexec_found else None

    def cache_extra_test_sources(package, sources):
        session.cached.append(list(sources))

    return {"which": which, "Executable": lambda path: Recorder(path, session),
            "cache_extra_test_sources": cache_extra_test_sources}


def smoke_reply(cuda=0, kernels=0, cudnn=0, nccl=0, hwloc=1, fortran=1, context=True):
    lines = ["rfa 0.1.0 (options version 1)", f"RFA_HAVE_CUDA={cuda}", f"RFA_HAVE_CUDA_KERNELS={kernels}",
             f"RFA_HAVE_CUDNN={cudnn}", f"RFA_HAVE_NCCL={nccl}", "RFA_HAVE_MPI=1",
             f"RFA_HAVE_HWLOC={hwloc}", f"RFA_HAVE_FORTRAN={fortran}"]
    if context:
        lines.append("context: created over MPI_COMM_WORLD, forward pass exact to 0")
    return "\n".join(lines) + "\n"


def smoke_package(Rfa, session, spec, root, gpu):
    class NoGpu(Rfa):
        def gpu_visible(self):
            return gpu

    spec.deps["cmake"].command = Recorder("/spack/cmake/bin/cmake", session)
    package = NoGpu(spec)
    package.run_tests = True
    package.prefix = standin.Prefix("/spack/rfa")
    package.stage = types.SimpleNamespace(source_path=root, path="/stage")
    package.test_suite = types.SimpleNamespace(current_test_cache_dir="/test-cache")
    return package


def check_smoke_sources(root, errors):
    folder = os.path.join(root, SMOKE_DIR)
    texts = {f: open(os.path.join(folder, f), encoding="utf-8").read()
             for f in ("CMakeLists.txt", "smoke.c") if os.path.exists(os.path.join(folder, f))}
    for f, needles in (("CMakeLists.txt", ("find_package(rfa REQUIRED)", "rfa::rfa", "rfa_smoke")),
                       ("smoke.c", ("rfa_get_version(", "rfa_options_init(", "rfa_check_version(",
                                    "rfa_context_create(MPI_COMM_WORLD", "rfa_forward(", "RFA_HAVE_CUDNN",
                                    '"context"', "context: created over MPI_COMM_WORLD"))):
        for needle in needles:
            if needle not in texts.get(f, ""):
                errors.append(f"{SMOKE_DIR}/{f} lacks {needle}")


def check_smoke_test(Rfa, root, session, errors):
    if getattr(Rfa, "test_requires_compiler", False) is not True:
        errors.append("test_requires_compiler is not True: `spack test run` could not compile the consumer")
    if getattr(Rfa, "smoke_consumer", None) != SMOKE_DIR:
        errors.append(f"the smoke consumer is not {SMOKE_DIR}")
    check_smoke_sources(root, errors)
    cache = getattr(Rfa, "cache_smoke_consumer", None)
    if getattr(cache, "run_after", None) != "install":
        errors.append("cache_smoke_consumer does not run after install")
    check = getattr(Rfa, "check_smoke_consumer", None)
    if getattr(check, "run_after", None) != "install" or \
            getattr(check, "on_package_attributes", None) != {"run_tests": True}:
        errors.append("check_smoke_consumer is not @run_after('install') @on_package_attributes(run_tests=True)")
    tests = [n for n in dir(Rfa) if n.startswith("test_") and callable(getattr(Rfa, n))]
    if "test_smoke_consumer" not in tests or not (Rfa.test_smoke_consumer.__doc__ or "").strip():
        errors.append("no stand-alone test test_smoke_consumer with a purpose (docstring)")
    if cache is None or check is None or "test_smoke_consumer" not in tests:
        return

    host = smoke_package(Rfa, session, rfa_spec(HOST), root, gpu=False)
    host.cache_smoke_consumer()
    if session.cached != [[SMOKE_DIR]]:
        errors.append(f"cache_smoke_consumer keeps {session.cached}, not [{SMOKE_DIR}]")

    def run(method, reply, mpiexec_found=True):
        """Runs a smoke method; returns its commands and whether it passed."""
        session.commands, session.reply, session.mpiexec_found = [], reply, mpiexec_found
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the recipe prints the program's output
                method()
            return session.commands, True
        except AssertionError as e:
            return session.commands, f"{e}"

    # Install time, host build: configure against the prefix, build, run with a context.
    commands, passed = run(host.check_smoke_consumer, smoke_reply())
    if passed is not True or len(commands) != 3:
        errors.append(f"host smoke test: {passed}; commands {commands}")
    else:
        configure, build, launch = commands
        source = os.path.join(root, SMOKE_DIR)
        if configure[:3] != ["/spack/cmake/bin/cmake", "-S", source] or \
                "-DCMAKE_PREFIX_PATH:STRING=/spack/rfa" not in configure or \
                "-DMPI_C_COMPILER:STRING=/spack/openmpi/bin/mpicc" not in configure:
            errors.append(f"the smoke test configures with {configure}")
        if build[1:3] != ["--build", configure[4]]:
            errors.append(f"the smoke test builds with {build}")
        if launch[:3] != ["/spack/openmpi/bin/mpiexec", "-n", "1"] or launch[-2:] != \
                [os.path.join(configure[4], "rfa_smoke"), "context"]:
            errors.append(f"the smoke test runs {launch}, not rfa_smoke context on one rank")

    # Stand-alone (`spack test run`), +cuda on a machine without a GPU: no context there.
    gpu = smoke_package(Rfa, session, rfa_spec(GPU, "90"), root, gpu=False)
    gpu_reply = smoke_reply(cuda=1, kernels=1, cudnn=1, nccl=1, context=False)
    commands, passed = run(gpu.test_smoke_consumer, gpu_reply)
    if passed is not True or not commands or commands[0][2] != os.path.join("/test-cache", SMOKE_DIR) \
            or commands[-1][-1] == "context":
        errors.append(f"+cuda stand-alone smoke test without a GPU: {passed}; commands {commands}")
    gpu_with_device = smoke_package(Rfa, session, rfa_spec(GPU, "90"), root, gpu=True)
    commands, passed = run(gpu_with_device.test_smoke_consumer, smoke_reply(1, 1, 1, 1))
    if passed is not True or commands[-1][-1] != "context":
        errors.append(f"+cuda smoke test with a GPU runs no context: {passed}; commands {commands}")

    # An MPI without mpiexec: the program runs alone (MPI singleton).
    commands, passed = run(host.check_smoke_consumer, smoke_reply(), mpiexec_found=False)
    if passed is not True or commands[-1][1:] != ["context"] or not commands[-1][0].endswith("rfa_smoke"):
        errors.append(f"smoke test without mpiexec: {passed}; commands {commands}")

    # It fails when the install is not what the spec asked for, or the context did not run.
    for name, method, reply in (
            ("+cudnn spec, install without cuDNN", gpu.test_smoke_consumer,
             smoke_reply(cuda=1, kernels=1, cudnn=0, nccl=1, context=False)),
            ("+fortran spec, install without Fortran", host.check_smoke_consumer, smoke_reply(fortran=0)),
            ("host spec, install with a CUDA engine", host.check_smoke_consumer, smoke_reply(cuda=1)),
            ("host spec, no context ran", host.check_smoke_consumer, smoke_reply(context=False))):
        if run(method, reply)[1] is True:
            errors.append(f"the smoke test passes with {name}")


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
    session = Session()
    Rfa = standin.load_recipe(recipe, "Rfa", **recording_tools(session))
    check_directives(errors)
    known = project_options(root)
    check_cmake_args(Rfa, known, errors)
    check_smoke_test(Rfa, root, session, errors)
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
