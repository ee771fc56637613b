# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe of rfa. rfa has no public download address yet, so Spack builds it from a
# checkout:  spack repo add packaging/spack
#            spack develop --path $PWD rfa@main   (in an environment)
#            spack add rfa +cuda cuda_arch=90 +cudnn && spack install --test=root
# Host builds: spack add rfa kokkos_host=openmp (or threads, serial). The repository also holds
# cudnn-frontend (the cuDNN frontend's headers, which Spack's builtin repository lacks).
# Checked without Spack by tests/packaging/spack_recipe_test.py.

from spack.package import *


class Rfa(CMakePackage, CudaPackage):
    """Ring (context-parallel) flash attention over MPI: exact softmax attention for sequences
    split across ranks, with a stable C ABI and a Fortran module."""

    license("BSD-3-Clause")

    version("main")  # the checkout `spack develop` points at

    variant("nccl", default=True, when="+cuda", description="NCCL ring transport between GPUs")
    variant(
        "cudnn",
        default=False,
        description="cuDNN's fused attention as a second CUDA block kernel (libcudnn is loaded "
        "at run time; spack load cudnn, or RFA_CUDNN_LIBRARY)",
    )
    variant("fortran", default=True, description="Fortran module rfa (needs mpi_f08)")
    variant("hwloc", default=True, description="Ring order from the hwloc topology")
    variant(
        "kokkos_host",
        default="openmp",
        values=("openmp", "threads", "serial"),
        multi=False,
        description="Kokkos's host backend: the default host execution space rfa's host "
        "kernels run on",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build", when="+hwloc")
    depends_on("mpi")
    depends_on("hwloc@2:", when="+hwloc")
    depends_on("nccl@2:", when="+nccl")

    # Kokkos 3.4 to 4.x: the APIs rfa is written against (C++17; Kokkos 5 needs C++20).
    depends_on("kokkos@3.4:4")
    # The Kokkos backend follows the variants. rfa's engine runs on GPUs only over a CUDA
    # Kokkos, and its CMake refuses a CUDA Kokkos without its own CUDA kernels: +cuda and the
    # Kokkos's CUDA backend go together, compiled for the same GPU (Kokkos takes one
    # cuda_arch, so +cuda takes one too). rfa keeps the default C++ compiler: Kokkos's
    # launcher hands the files that need it to the nvcc_wrapper Kokkos was built with.
    depends_on("kokkos~cuda", when="~cuda")
    depends_on("kokkos+cuda+cuda_lambda+wrapper", when="+cuda")
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    # The default host execution space is the first of OpenMP, Threads, Serial a Kokkos has.
    depends_on("kokkos+openmp", when="kokkos_host=openmp")
    depends_on("kokkos+threads~openmp", when="kokkos_host=threads")
    depends_on("kokkos+serial~openmp~threads", when="kokkos_host=serial")

    # cuDNN: cudnn.h at build time; libcudnn itself is loaded at run time (9.10.2 or newer).
    depends_on("cudnn@9.10.2:", type=("build", "run"), when="+cudnn")
    depends_on("cudnn-frontend", type="build", when="+cudnn")

    # `spack install --test=root` builds and runs the project's test suite as well.
    depends_on("googletest", type="test")
    depends_on("python@3:", type="test")
    depends_on("pkgconfig", type="test")

    conflicts("+nccl", when="~cuda", msg="the NCCL transport moves GPU buffers: it needs +cuda")
    conflicts("+cudnn", when="~cuda", msg="the cuDNN block kernel is a CUDA kernel: it needs +cuda")
    conflicts(
        "cuda_arch=none",
        when="+cuda",
        msg="+cuda needs cuda_arch=<compute capability>: rfa's kernels and Kokkos are built for it",
    )

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("RFA_ENABLE_CUDA", "cuda"),
            self.define("RFA_ENABLE_NCCL", spec.satisfies("+nccl")),
            # ON or OFF, never AUTO: what is built follows the spec, not what the build
            # environment happens to hold.
            self.define("RFA_ENABLE_CUDNN", spec.satisfies("+cudnn")),
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
            args.append(
                self.define("RFA_CUDA_ARCHITECTURES", ";".join(spec.variants["cuda_arch"].value))
            )
        if spec.satisfies("+cudnn"):
            args.append(self.define("CUDNN_INCLUDE_DIR", spec["cudnn"].prefix.include))
            args.append(
                self.define("CUDNN_FRONTEND_INCLUDE_DIR", spec["cudnn-frontend"].prefix.include)
            )
        if self.run_tests:
            # The suite's mpiexec flag (--oversubscribe by default) is Open MPI's alone.
            oversubscribe = "--oversubscribe" if spec.satisfies("^openmpi") else ""
            args.append(self.define("RFA_MPIEXEC_EXTRA_FLAGS", oversubscribe))
        return args
