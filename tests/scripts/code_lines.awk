# SPDX-License-Identifier: BSD-3-Clause
# C and C++ source without its comments, for the scripts that look for a construct in the code:
# prints "FILE:LINE: code" for each line that holds code once // and /* */ comments are removed
# (a comment's text never matches). Used as: awk -f code_lines.awk FILE...
FNR == 1 { in_comment = 0 }
{
  line = $0
  if (in_comment) {
    if (sub(/.*\*\//, "", line)) in_comment = 0
    else next
  }
  gsub(/\/\*.*\*\//, "", line)
  if (sub(/\/\*.*/, "", line)) in_comment = 1
  sub(/\/\/.*/, "", line)
  if (line ~ /[^ \t]/) print FILENAME ":" FNR ": " line
}
