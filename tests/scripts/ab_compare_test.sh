#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/gpu/ab_compare.py, the ab phase's report, on stand-in benchmark JSON: both formats a
# baseline may write (the early benchmark's "results", perf/'s "benchmarks" with their medians),
# the ratio per row over the pairs (median and range), rows one side lacks left out, and a file
# it cannot read or nothing in common an exit status of 1. No speed is judged.
#   bash ab_compare_test.sh path/to/ab_compare.py
set -uo pipefail
script=${1:?usage: ab_compare_test.sh path/to/ab_compare.py}
# shellcheck source=tests/scripts/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

early() {  # file, forward full ms, backward causal ms: the early benchmark's format
  printf '{"device": "Fake", "results": [{"pass": "forward", "causal": false, "ms": %s, "tflops": 1},
    {"pass": "backward", "causal": true, "ms": %s, "tflops": 1}, {"pass": "bwd-det", "causal": true, "ms": 99}]}\n' \
    "$2" "$3" >"$1"
}
perf_format() {  # file, forward full ms, backward causal ms: perf/'s format, medians and repetitions
  printf '{"context": {}, "benchmarks": [
    {"name": "cuda/fwd/full", "run_type": "iteration", "pass": "forward", "mask": "none", "path": "sm80", "real_time": 100},
    {"name": "cuda/fwd/full_median", "run_type": "aggregate", "pass": "forward", "mask": "none", "path": "sm80", "real_time": %s},
    {"name": "cuda/bwd/causal_median", "run_type": "aggregate", "pass": "backward", "mask": "causal", "path": "sm80", "real_time": %s},
    {"name": "cuda/fwd_sm90/full_median", "run_type": "aggregate", "pass": "fwd-sm90", "mask": "none", "path": "sm90", "real_time": 0.1}]}\n' \
    "$2" "$3" >"$1"
}
run() { python3 "$script" "$@" >"$tmp/out" 2>&1; }
row() { grep -qE "^$1 +$2 " "$tmp/out"; }

# 1. Three pairs, the early format against perf/'s: the ratio baseline / current per pair.
early "$tmp/b1.json" 2.0 6.0
early "$tmp/b2.json" 2.2 6.0
early "$tmp/b3.json" 1.8 6.3
perf_format "$tmp/c1.json" 1.6 6.0
perf_format "$tmp/c2.json" 2.0 5.0
perf_format "$tmp/c3.json" 2.0 6.3
run --pair "$tmp/b1.json" "$tmp/c1.json" --pair "$tmp/b2.json" "$tmp/c2.json" --pair "$tmp/b3.json" "$tmp/c3.json" \
  --json "$tmp/ab.json"
check "three pairs: exit status 0" [ $? -eq 0 ]
check "forward full: median times and ratios 1.25, 1.1, 0.9 (median 1.1, range 0.9-1.25)" \
  sh -c "grep -qE '^forward +full +2.000 +2.000 +1.100  \[0.900, 1.250\]$' '$tmp/out'"
check "backward causal: ratios 1, 1.2, 1" sh -c "grep -qE '^backward +causal +6.000 +6.000 +1.000  \[1.000, 1.200\]$' '$tmp/out'"
check "the iterations, the Hopper rows and the deterministic backward are not compared" \
  [ "$(grep -cE '^(forward|backward) ' "$tmp/out")" -eq 2 ]
check "the JSON holds every pair's times" python3 -c "
import json, sys
d = json.load(open('$tmp/ab.json'))
r = {(x['pass'], x['mask']): x for x in d['rows']}
f = r[('forward', 'full')]
sys.exit(not (d['pairs'] == 3 and f['baseline_ms'] == [2.0, 2.2, 1.8] and f['current_ms'] == [1.6, 2.0, 2.0]
              and abs(f['ratio_median'] - 1.1) < 1e-12))"
cp "$tmp/out" "$tmp/log"

# 2. A row one side lacks: left out, and said so.
printf '{"results": [{"pass": "forward", "causal": false, "ms": 2.0}]}\n' >"$tmp/b4.json"
run --pair "$tmp/b4.json" "$tmp/c1.json"
check "a row on one side only: exit status 0" [ $? -eq 0 ]
check "... the common row compared" row forward full
check "... the other left out, saying so" grep -qE "^backward +causal +measured on one side only: left out" "$tmp/out"
cat "$tmp/out" >>"$tmp/log"

# 3. An unreadable or foreign file, or nothing in common: exit status 1, saying why.
run --pair "$tmp/b1.json" "$tmp/missing.json"
check "a missing file: exit status 1" [ $? -eq 1 ]
check "... naming the pair" grep -q "cannot read the pair .*missing.json" "$tmp/out"
echo '{"program": "rfa_cuda_kernel_bench"}' >"$tmp/foreign.json"
run --pair "$tmp/foreign.json" "$tmp/c1.json"
check "a file without benchmark rows: exit status 1" [ $? -eq 1 ]
printf '{"results": [{"pass": "backward", "causal": false, "ms": 2.0}]}\n' >"$tmp/b5.json"
run --pair "$tmp/b5.json" "$tmp/c1.json"
check "nothing in common: exit status 1, saying so" sh -c "[ $? -eq 1 ] && grep -q 'no row that both sides' '$tmp/out'"
cat "$tmp/out" >>"$tmp/log"
checks_done "$tmp/log"
