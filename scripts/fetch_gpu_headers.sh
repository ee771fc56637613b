#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Puts the header-only GPU dependencies, pinned below, under BUILD_DIR/_deps, where CMake looks
# for them (cmake/RfaCudnn.cmake, cmake/RfaCutlass.cmake):
#   _deps/cudnn-frontend/include   the cuDNN frontend (PyPI nvidia-cudnn-frontend): the cuDNN block kernel
#   _deps/cutlass/include          CUTLASS and CuTe (PyPI nvidia-cutlass): the Hopper kernels
# Each wheel is downloaded with pip and only its headers are unpacked; nothing is installed into
# any Python. Idempotent: headers already in place at the pinned version are kept. Exits 0 without
# a package (and says why) when pip or PyPI is unavailable: the build then goes on without the
# kernels that need it.
#   bash scripts/fetch_gpu_headers.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: fetch_gpu_headers.sh BUILD_DIR}
python=${PYTHON:-python3}
wheels=$build/_deps/wheels

# name, PyPI package, version, folder inside the wheel, a header that must be there, what needs it
fetch() {
  local name=$1 package=$2 version=$3 inside=$4 probe=$5 user=$6
  local dest=$build/_deps/$name stamp=$build/_deps/$name/version
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] && [ -f "$dest/include/$probe" ]; then
    return 0
  fi
  mkdir -p "$wheels"
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$wheels" \
       "$package==$version" >"$wheels/pip-$name.log" 2>&1; then
    echo "fetch_gpu_headers: could not download $package $version (see $wheels/pip-$name.log); $user will not be built" >&2
    return 0
  fi
  rm -rf "$dest"
  mkdir -p "$dest/include"
  "$python" - "$wheels" "$dest/include" "${package//-/_}-$version" "$inside" <<'PY'
import glob, os, shutil, sys, zipfile
wheels, dest, stem, inside = sys.argv[1:5]
wheel = sorted(glob.glob(os.path.join(wheels, stem + "-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    for member in z.namelist():
        if member.startswith(inside) and not member.endswith("/"):
            target = os.path.join(dest, member[len(inside):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
PY
  echo "$version" >"$stamp"
  echo "fetch_gpu_headers: $package $version headers in $dest/include"
}

fetch cudnn-frontend nvidia-cudnn-frontend 1.32.0 include/ cudnn_frontend.h "the cuDNN block kernel"
fetch cutlass nvidia-cutlass 4.2.0.0 cutlass_library/source/include/ cute/tensor.hpp "the Hopper kernels"
