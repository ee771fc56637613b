# SPDX-License-Identifier: BSD-3-Clause
# The cuDNN frontend's C++ headers, which rfa+cudnn compiles against (Spack's builtin
# repository has no such package). NVIDIA publishes them in the PyPI wheels of
# nvidia-cudnn-frontend under include/: this recipe installs that folder from one wheel. The
# headers are the same in every platform's wheel, so the x86_64 one serves any machine.
# The version is the one scripts/fetch_gpu_headers.sh pins for quickstart.sh.
# Checked without Spack by tests/packaging/spack_recipe_test.py.
import zipfile

from spack.package import *


class CudnnFrontend(Package):
    """NVIDIA's cuDNN frontend: a header-only C++ API over cuDNN (its headers alone)."""

    homepage = "https://github.com/NVIDIA/cudnn-frontend"

    license("MIT")

    version(
        "1.32.0",
        sha256="c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0",
        url="https://files.pythonhosted.org/packages/11/02/"
        "660e2dd9f9d9f940e1641443771730612c3aadaafbc5ef7a93cc313d519d/"
        "nvidia_cudnn_frontend-1.32.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        expand=False,
    )

    sanity_check_is_file = ["include/cudnn_frontend.h", "include/cudnn_frontend_version.h"]

    def install(self, spec, prefix):
        with zipfile.ZipFile(self.stage.archive_file) as wheel:
            headers = [m for m in wheel.namelist() if m.startswith("include/")]
            wheel.extractall(prefix, headers)
