#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The library formats numbers in the classic locale only (src/core/text_stream.hpp): no string
# stream of its own other than TextStream, no printf-family format of a floating-point number
# (%f, %e, %g, %a follow setlocale's decimal comma) and no std::to_string of one (it is %f), in
# src/, capi/ and kernels_cuda/ (whose messages' %g go through one vsnprintf, in the C locale:
# kernels_cuda/src/api_support.cpp). A host program's locale otherwise changes rfa's messages,
# its plan's text (which must read the same on every rank) and the files it writes for programs
# (RFA_TOPO_DUMP: a hash "8cf.370.7b5" under a global de_DE locale). Comments are left out.
#   bash classic_locale_test.sh PROJECT_SOURCE_DIR
set -uo pipefail
root=${1:?usage: classic_locale_test.sh PROJECT_SOURCE_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
code=$(cd "$root" && find src capi kernels_cuda -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' |
  grep -v '^src/core/text_stream.hpp$' | sort | xargs awk -f "$here/code_lines.awk")
found=$(
  grep -E 'std::w?(o|io)?stringstream[[:space:]]+[A-Za-z_]' <<<"$code" | sed 's/^/a stream in the locale of the program: /'
  grep -E 'printf[[:space:]]*\(' <<<"$code" | grep -E '%[-+ #0-9.*]*[lL]?[fFeEgGaA]' |
    sed 's/^/printf formats a floating-point number in the locale of the program: /'
  grep -E 'to_string\([^)]*(seconds_?|_s|ratio|fraction|rate|scale)(\(\))?\)' <<<"$code" |
    sed 's/^/std::to_string of a floating-point number (%f, the locale of the program): /'
)
if [ -n "$found" ]; then
  echo "numbers formatted in the host program's locale (use rfa::TextStream, general_number or fixed_number):"
  echo "$found"
  exit 1
fi
echo "the library formats numbers in the classic locale only"
