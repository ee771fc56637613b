# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe of rfa. rfa has no public download address yet, so Spack builds it from a
# checkout:  spack repo add packaging/spack
#            spack develop --path $PWD rfa@main   (in an environment)
#            spack add rfa +cuda cuda_arch=90 ^kokkos+cuda && spack install
# Checked without Spack by tests/packaging/spack_recipe_test.py.
from spack.package import *


class Rfa(CMakePackage, CudaPackage):
    """Ring (context-parallel) flash attention over MPI: exact softmax attention for sequences
    split across ranks, with a stable C ABI and a Fortran module."""

    license("BSD-3-Clause")

    version("main")  # the checkout `spack develop` points at

    variant("nccl", default=True, when="+cuda", description="NCCL ring transport between GPUs")
    variant("fortran", default=True, description="Fortran module rfa (needs mpi_f08)")
    variant("hwloc", default=True, description="Ring order from the hwloc topology")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build", when="+hwloc")
    depends_on("kokkos@3.4:")
    depends_on("kokkos+cuda+cuda_lambda", when="+cuda")
    depends_on("mpi")
    depends_on("hwloc@2:", when="+hwloc")
    depends_on("nccl@2:", when="+nccl")

    conflicts("+nccl", when="~cuda", msg="the NCCL transport moves GPU buffers: it needs +cuda")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("RFA_ENABLE_CUDA", "cuda"),
            self.define("RFA_ENABLE_NCCL", spec.satisfies("+nccl")),
            self.define_from_variant("RFA_ENABLE_FORTRAN", "fortran"),
            self.define_from_variant("RFA_ENABLE_HWLOC", "hwloc"),
            self.define("RFA_ENABLE_MPI", True),
            self.define("RFA_ENABLE_TESTS", self.run_tests),
            self.define("RFA_ENABLE_BENCHMARKS", False),
            self.define("RFA_ENABLE_DOCS", False),
            # Spack builds for a target it names; -march=native would bind to the build host.
            self.define("RFA_ENABLE_NATIVE", False),
        ]
        if spec.satisfies("+cuda"):
            archs = spec.variants["cuda_arch"].value
            if archs and archs[0] != "none":
                args.append(self.define("RFA_CUDA_ARCHITECTURES", ";".join(archs)))
        return args
