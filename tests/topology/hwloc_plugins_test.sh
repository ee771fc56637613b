#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rfa's own hwloc load leaves out the plugins that probe displays and accelerators (gl, opencl,
# cuda, nvml, rsmi, levelzero: topology/hwloc_probe.cpp). Runs a program that creates a context
# with the topology's ring order under HWLOC_COMPONENTS_VERBOSE=1, where hwloc prints the
# components each load enables; rfa's load is the program's last (MPI's own come first). Skips
# (a SKIP: line, CTest's skip) where hwloc prints no such list, or where no such plugin is
# installed: there is nothing to check there.
#   hwloc_plugins_test.sh MPIEXEC [MPIEXEC FLAGS...] -- PROGRAM
set -uo pipefail
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
program=$1
output=$(HWLOC_COMPONENTS_VERBOSE=1 RFA_RING_ORDER=topo "${launcher[@]}" -n 1 "$program" 2>&1) || {
  echo "FAIL: the program failed:"; echo "$output"; exit 1; }
lists=$(printf '%s\n' "$output" | grep 'Final list of enabled discovery components')
if [ -z "$lists" ]; then
  echo "SKIP: this hwloc prints no list of its components"; exit 0
fi
plugins='(gl|opencl|cuda|nvml|rsmi|levelzero)\('
if ! printf '%s\n' "$lists" | grep -Eq "$plugins"; then
  echo "SKIP: no load enabled a display or accelerator plugin: none installed"; exit 0
fi
last=$(printf '%s\n' "$lists" | tail -n 1)
if printf '%s\n' "$last" | grep -Eq "$plugins"; then
  echo "FAIL: rfa's hwloc load enables a display or accelerator plugin: $last"; exit 1
fi
echo "PASS: rfa's load: ${last#*: }"
