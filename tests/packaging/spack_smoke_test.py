#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs the Spack recipe's smoke test for real, without Spack: installs this build into a fresh
prefix, then calls the recipe's own methods as Spack would after `spack install --test=root`
(cache_smoke_consumer, check_smoke_consumer) and in `spack test run` (test_smoke_consumer,
from a test stage folder), with the spec this build corresponds to. Their commands run for
real (cmake, the MPI launcher, the consumer), so the consumer in tests/consumer/smoke is built
with find_package(rfa) against the install and run on one rank.
Usage: spack_smoke_test.py SOURCE_DIR BUILD_DIR WORK_DIR --cmake CMAKE --cc CC --mpicc MPICC
       --mpiexec MPIEXEC --variants cuda,nccl,cudnn,fortran,hwloc (those on) --kokkos-cuda 0|1"""
import argparse
import os
import shutil
import subprocess
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spack_standin as standin  # noqa: E402
from spack_standin import FakeSpec  # noqa: E402


class Executable:
    """Spack's Executable in short: runs the program, fails on a non-zero exit, and returns
    the standard output when called with output=str."""

    def __init__(self, path):
        self.path = str(path)

    def __call__(self, *args, output=None, error=None):
        command = [self.path, *map(str, args)]
        print("$", " ".join(command), flush=True)
        run = subprocess.run(command, stdout=subprocess.PIPE if output is str else None,
                             stderr=subprocess.STDOUT if output is str else None, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({run.returncode})\n{run.stdout or ''}")
        return run.stdout if output is str else None


def which(*names, path=None, required=False):
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return Executable(found)
    if required:
        raise RuntimeError(f"none of {names} in {path}")
    return None


def mpi_provider(mpiexec):
    """The name of the Spack package providing this MPI (openmpi, mpich), from its launcher."""
    version = subprocess.run([mpiexec, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        return "openmpi"
    return "mpich" if "HYDRA" in version or "MPICH" in version else "mpi"


def main():
    parser = argparse.ArgumentParser()
    for name in ("source", "build", "work"):
        parser.add_argument(name)
    for name in ("--cmake", "--cc", "--mpicc", "--mpiexec", "--variants", "--kokkos-cuda"):
        parser.add_argument(name, required=True)
    a = parser.parse_args()
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    prefix, cache, stage = (os.path.join(work, d) for d in ("prefix", "test-cache", "test-stage"))
    for d in (cache, stage):
        os.makedirs(d)
    Executable(a.cmake)("--install", a.build, "--prefix", prefix, output=str)

    def cache_extra_test_sources(package, sources):
        """Spack keeps these in the install's test cache and copies them to the test stage."""
        for source in sources:
            shutil.copytree(os.path.join(package.stage.source_path, source), os.path.join(cache, source))

    Rfa = standin.load_recipe(os.path.join(a.source, "packaging", "spack", "packages", "rfa", "package.py"),
                              "Rfa", which=which, Executable=Executable,
                              cache_extra_test_sources=cache_extra_test_sources)
    provider = mpi_provider(a.mpiexec)
    mpi = FakeSpec(provider, prefix=os.path.dirname(os.path.dirname(os.path.abspath(a.mpiexec))),
                   mpicc=a.mpicc)
    spec = FakeSpec("rfa", on=[v for v in a.variants.split(",") if v],
                    values={"cuda_arch": ["none"], "kokkos_host": ["openmp"]},
                    deps={"kokkos": FakeSpec("kokkos", on={"cuda"} if a.kokkos_cuda == "1" else set()),
                          "mpi": mpi, provider: mpi, "cmake": FakeSpec("cmake", command=Executable(a.cmake))})
    os.environ["CC"] = a.cc  # as Spack's build and test environments set it

    package = Rfa(spec)
    package.run_tests = True
    package.prefix = standin.Prefix(prefix)
    package.stage = types.SimpleNamespace(source_path=os.path.abspath(a.source), path=work)
    package.test_suite = types.SimpleNamespace(current_test_cache_dir=cache)
    package.cache_smoke_consumer()
    package.check_smoke_consumer()  # spack install --test=root
    os.chdir(stage)
    package.test_smoke_consumer()  # spack test run
    print(f"spack_smoke_test: the recipe's smoke test passed at install time and stand-alone "
          f"(spec {' '.join('+' + v for v in sorted(spec.on))} ^kokkos{'+' if a.kokkos_cuda == '1' else '~'}cuda "
          f"^{provider})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
