# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe of rfa. rfa has no public download address yet, so Spack builds it from a
# checkout:  spack repo add packaging/spack
#            spack develop --path $PWD rfa@main   (in an environment)
#            spack add rfa +cuda cuda_arch=90 +cudnn && spack install --test=root
# Host builds: spack add rfa kokkos_host=openmp (or threads, serial). The repository also holds
# cudnn-frontend (the cuDNN frontend's headers, which Spack's builtin repository lacks).
# Checked without Spack by tests/packaging/spack_recipe_test.py; its smoke test is run
# against a real install by tests/packaging/spack_smoke_test.py.
import glob
import os
import tempfile

from spack.package import *


class Rfa(CMakePackage, CudaPackage):
    """Ring (context-parallel) flash attention over MPI: exact softmax attention for sequences
    split across ranks, with a stable C ABI and a Fortran module."""

    license("BSD-3-Clause")

    version("main")  # the checkout `spack develop` points at

    # The smoke test compiles the consumer in smoke_consumer against the install, so it needs
    # the compilers and cmake in `spack test run` too.
    test_requires_compiler = True
    smoke_consumer = os.path.join("tests", "consumer", "smoke")

    variant("nccl", default=True, when="+cuda", description="NCCL ring transport between GPUs")
    variant(
        "cudnn",
        default=False,
        description="cuDNN's fused attention as a second CUDA block kernel (libcudnn is loaded "
        "at run time; spack load cudnn, or RFA_CUDNN_LIBRARY)",
    )
    variant(
        "hopper",
        default=False,
        when="+cuda",
        description="the Hopper (sm_90a) kernels, built on CUTLASS/CuTe (header-only); chosen "
        "at run time on compute capability 9.x",
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

    # The Kokkos majors rfa is built and tested against (docs/building.md: 3.4.1, 4.6.1, 5.2.2):
    # 3.4 to 5.x, not a 6 nobody has built it with. rfa compiles as C++17, or C++20 where the
    # Kokkos asks for it: Kokkos 5 needs C++20, so its cxxstd is pinned there.
    depends_on("kokkos@3.4:5")
    depends_on("kokkos cxxstd=20", when="^kokkos@5:")
    # The Kokkos backend follows the variants. rfa's engine runs on GPUs only over a CUDA
    # Kokkos, and its CMake refuses a CUDA Kokkos without its own CUDA kernels: +cuda and the
    # Kokkos's CUDA backend go together, compiled for the same GPU (Kokkos takes one
    # cuda_arch, so +cuda takes one too). rfa keeps the default C++ compiler: Kokkos's
    # launcher hands the files that need it to the nvcc_wrapper Kokkos was built with.
    depends_on("kokkos~cuda", when="~cuda")
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    # Kokkos 5 always compiles device lambdas and has no cuda_lambda variant.
    depends_on("kokkos+cuda_lambda", when="+cuda ^kokkos@:4")
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    # The default host execution space is the first of OpenMP, Threads, Serial a Kokkos has.
    depends_on("kokkos+openmp", when="kokkos_host=openmp")
    depends_on("kokkos+threads~openmp", when="kokkos_host=threads")
    depends_on("kokkos+serial~openmp~threads", when="kokkos_host=serial")

    # cuDNN: cudnn.h at build time; libcudnn itself is loaded at run time (9.10.2 or newer).
    depends_on("cudnn@9.10.2:", type=("build", "run"), when="+cudnn")
    depends_on("cudnn-frontend", type="build", when="+cudnn")
    # CUTLASS: headers only, at build time.
    depends_on("cutlass@3.5:", type="build", when="+hopper")

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
            self.define("RFA_ENABLE_HOPPER", spec.satisfies("+hopper")),
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
        if spec.satisfies("+hopper"):
            args.append(self.define("CUTLASS_INCLUDE_DIR", spec["cutlass"].prefix.include))
        if self.run_tests:
            # The suite's mpiexec flag (--oversubscribe by default) is Open MPI's alone.
            oversubscribe = "--oversubscribe" if spec.satisfies("^openmpi") else ""
            args.append(self.define("RFA_MPIEXEC_EXTRA_FLAGS", oversubscribe))
        return args

    # ---- smoke test: an outside C project built against the installed prefix, then run

    @run_after("install")
    def cache_smoke_consumer(self):
        """Keeps the consumer's sources for `spack test run`."""
        cache_extra_test_sources(self, [self.smoke_consumer])

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_smoke_consumer(self):
        """spack install --test=root: the consumer builds against the new prefix and runs."""
        with tempfile.TemporaryDirectory(prefix="rfa-smoke-") as build:
            source = os.path.join(self.stage.source_path, self.smoke_consumer)
            self.run_smoke_consumer(source, build)

    def test_smoke_consumer(self):
        """build a C consumer with find_package(rfa) and run it on one MPI rank"""
        source = os.path.join(self.test_suite.current_test_cache_dir, self.smoke_consumer)
        self.run_smoke_consumer(source, os.path.abspath("smoke-build"))

    def gpu_visible(self):
        """Whether this machine shows an NVIDIA GPU (build machines often have none)."""
        return bool(glob.glob("/dev/nvidia[0-9]*"))

    def run_smoke_consumer(self, source, build):
        """Configures the consumer in `source` with find_package(rfa) from this prefix, builds
        it in `build`, runs it on one MPI rank and checks that what the install contains
        (rfa_config.h) is what the spec asked for. The program also creates a context over
        MPI_COMM_WORLD and runs a forward pass, except in a +cuda build on a machine without
        a GPU: a CUDA Kokkos cannot initialize there."""
        spec = self.spec
        cmake = spec["cmake"].command
        cmake(
            "-S",
            source,
            "-B",
            build,
            self.define("CMAKE_PREFIX_PATH", self.prefix),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
        )
        cmake("--build", build)

        program = [os.path.join(build, "rfa_smoke")]
        with_context = spec.satisfies("^kokkos~cuda") or self.gpu_visible()
        if with_context:
            program.append("context")
        mpiexec = which("mpiexec", "mpirun", path=spec["mpi"].prefix.bin)
        if mpiexec:
            flags = ["-n", "1"]
            if spec.satisfies("^openmpi") and os.geteuid() == 0:
                flags.append("--allow-run-as-root")
            out = mpiexec(*flags, *program, output=str)
        else:  # an MPI without a launcher here: a singleton run
            out = Executable(program[0])(*program[1:], output=str)
        print(out)

        built = dict(line.split("=", 1) for line in out.split() if line.startswith("RFA_HAVE_"))
        expected = {
            "RFA_HAVE_CUDA": "^kokkos+cuda",  # the engine runs on GPUs over a CUDA Kokkos
            "RFA_HAVE_CUDA_KERNELS": "+cuda",
            "RFA_HAVE_CUDNN": "+cudnn",
            "RFA_HAVE_NCCL": "+nccl",
            "RFA_HAVE_HWLOC": "+hwloc",
            "RFA_HAVE_FORTRAN": "+fortran",
        }
        for macro, constraint in expected.items():
            want = str(int(spec.satisfies(constraint)))
            got = built.get(macro)
            assert got == want, f"the install has {macro}={got}, the spec asks {want}: {constraint}"
        if with_context:
            assert "context: created over MPI_COMM_WORLD" in out, "the consumer ran no context"
