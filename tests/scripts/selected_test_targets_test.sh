#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/selected_test_targets.py on this build: what it lists for a few selections.
#   bash selected_test_targets_test.sh PYTHON path/to/selected_test_targets.py BUILD_DIR
set -uo pipefail
python=${1:?usage: selected_test_targets_test.sh PYTHON SCRIPT BUILD_DIR}
script=${2:?}
build=${3:?}
# shellcheck source=tests/scripts/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# A failure of the script prints "failed", so that no check can pass on an empty output.
list() { "$python" "$script" "$build" "$@" >"$tmp/out.txt" 2>&1 && cat "$tmp/out.txt" || echo failed; }
check "an MPI suite: its program alone" [ "$(list -R '^capi_invalid_calls_test[.]np2$')" = capi_invalid_calls_test ]
check "two suites: both programs, sorted, once each" \
  [ "$(list -R '^capi_invalid_calls_test[.]np[12]$|^core_documents_test$' | tr '\n' ' ')" = \
    "capi_invalid_calls_test core_documents_test " ]
check "a check that names the library's file: the library" \
  [ "$(list -R '^capi_abi_symbols_test$')" = rfa ]
check "no test selected: nothing" [ -z "$(list -R '^no such test$')" ]
check "a scripted test naming no program: nothing" [ -z "$(list -R '^scripts[.]mutation_list$')" ]
checks_done "$tmp/out.txt"
