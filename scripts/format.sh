#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# clang-format over rfa's C, C++ and CUDA sources, with the style in .clang-format:
#   format.sh          rewrites every file that differs from the style
#   format.sh --check  changes nothing; names each file that differs and exits 1 if any does
# The style is checked with Debian 12's clang-format (14), which CI installs; another major
# version may break lines differently, so the check says which version it ran.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-write}
case "$mode" in
  write|--check) ;;
  *) echo "usage: format.sh [--check]" >&2; exit 2 ;;
esac

if ! command -v clang-format >/dev/null; then
  # shellcheck source=scripts/install_debian_packages.sh
  source "$here/scripts/install_debian_packages.sh"
  install_debian_packages format clang-format
fi
version=$(clang-format --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)
[ "${version%%.*}" = 14 ] || echo "format: clang-format $version here; the style is checked with 14" >&2

cd "$here"
# tests/readme/preludes/ are templates (an @FRAGMENT@ line stands for a README block), not C.
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' ':(exclude)tests/readme/preludes/*')
if [ "$mode" = write ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
differ=0
for f in "${files[@]}"; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    echo "format: $f differs from .clang-format (bash scripts/format.sh rewrites it)" >&2
    differ=$((differ + 1))
  fi
done
echo "format: ${#files[@]} files checked with clang-format $version, $differ differ"
[ "$differ" -eq 0 ]
