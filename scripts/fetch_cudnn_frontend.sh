#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Puts the cuDNN frontend's C++ headers (header-only; PyPI package nvidia-cudnn-frontend, pinned
# below) under BUILD_DIR/_deps/cudnn-frontend/include, where cmake/RfaCudnn.cmake looks for them,
# so that a CUDA build compiles the cuDNN block kernel. It downloads the wheel with pip and
# unpacks only include/; nothing is installed into any Python. Idempotent: a second run with
# the headers in place does nothing. Exits 0 without the headers (and says why) when pip or
# PyPI is unavailable: the build then goes on without the cuDNN block kernel.
#   bash scripts/fetch_cudnn_frontend.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: fetch_cudnn_frontend.sh BUILD_DIR}
version=1.32.0
dest=$build/_deps/cudnn-frontend
stamp=$dest/version
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] && [ -f "$dest/include/cudnn_frontend.h" ]; then
  exit 0
fi
python=${PYTHON:-python3}
wheels=$build/_deps/wheels
mkdir -p "$wheels"
if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$wheels" \
     "nvidia-cudnn-frontend==$version" >"$wheels/pip.log" 2>&1; then
  echo "fetch_cudnn_frontend: could not download nvidia-cudnn-frontend $version (see $wheels/pip.log);" \
       "the cuDNN block kernel will not be built" >&2
  exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"
"$python" - "$wheels" "$dest" "$version" <<'PY'
import glob, os, sys, zipfile
wheels, dest, version = sys.argv[1:4]
wheel = sorted(glob.glob(os.path.join(wheels, f"nvidia_cudnn_frontend-{version}-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith("include/")]
    z.extractall(dest, members)
PY
echo "$version" >"$stamp"
echo "fetch_cudnn_frontend: cuDNN frontend $version headers in $dest/include"
