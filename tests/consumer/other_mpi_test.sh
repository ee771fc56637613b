#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A program built with the other MPI family than librfa's (tests/consumer/other_mpi.c) is
# refused at creation with RFA_ERROR_VERSION_MISMATCH, naming both, instead of aborting in the
# first collective. Usage: other_mpi_test.sh FAMILY OTHER_MPICC WORK_DIR LIBRFA_DIR INCLUDE_DIR...
# FAMILY is librfa's ("Open MPI" or "MPICH"); OTHER_MPICC the other family's C wrapper, or
# a name that is not found: the test is then skipped (exit 77), saying what to install.
set -euo pipefail
family=$1 other_mpicc=$2 work=$3 lib_dir=$4
shift 4
if ! command -v "$other_mpicc" >/dev/null 2>&1; then
  echo "other_mpi_test: SKIP: no $other_mpicc (Debian: apt-get install libmpich-dev for a librfa on Open MPI)"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
includes=()
for d in "$@"; do includes+=(-I "$d"); done
"$other_mpicc" "${includes[@]}" "$here/other_mpi.c" -L "$lib_dir" -Wl,-rpath,"$lib_dir" -lrfa -o "$work/other_mpi"
# Run alone (an MPI singleton), in the work folder (MPICH may leave files there), bounded.
status=0
out=$(cd "$work" && timeout 120 ./other_mpi 2>&1) || status=$?
if [ "$status" != 0 ]; then
  echo "other_mpi_test: FAIL: the program ended with status $status; its output:"
  echo "$out"
  exit 1
fi
echo "$out"
case "$family" in
  "Open MPI") other="MPICH" ;;
  MPICH) other="Open MPI" ;;
  *) echo "other_mpi_test: unknown family '$family'"; exit 2 ;;
esac
failed=0
for call in rfa_context_create rfa_context_create_fint; do
  line=$(grep "^$call " <<<"$out" || true)
  # "<call> 11 1 <message>": RFA_ERROR_VERSION_MISMATCH, the handle set to NULL.
  if [[ "$line" != "$call 11 1 "* ]]; then
    echo "other_mpi_test: FAIL: $call did not return RFA_ERROR_VERSION_MISMATCH with a NULL handle: '$line'"
    failed=1
  elif [[ "$line" != *"compiled against $family"* || "$line" != *"$other"* ]]; then
    echo "other_mpi_test: FAIL: $call's message does not name both families ($family, $other): '$line'"
    failed=1
  fi
done
[ "$failed" = 0 ] && echo "other_mpi_test: PASS"
exit "$failed"
