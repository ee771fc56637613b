#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/gpu/variant_costs.py, the ab phase's report of each variant's cost, on stand-in rfa_run
# JSON: each variant beside the run it names (time ratio variant / base, rate ratio over the
# visible scores), the iterations and the other aggregates not read, and a file it cannot read,
# a pass missing, a base not given or a name given twice an exit status of 1. No speed is judged.
#   bash variant_costs_test.sh path/to/variant_costs.py
set -uo pipefail
script=${1:?usage: variant_costs_test.sh path/to/variant_costs.py}
# shellcheck source=tests/scripts/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

main_job() {  # file, forward median ms, its TFLOP/s, backward median ms, its TFLOP/s
  printf '{"context": {}, "benchmarks": [
    {"name": "main_job/fwd/contiguous", "run_type": "iteration", "real_time": 999, "tflops": 1},
    {"name": "main_job/fwd/contiguous_median", "run_type": "aggregate", "aggregate_name": "median", "real_time": %s, "tflops": %s},
    {"name": "main_job/fwd/contiguous_mean", "run_type": "aggregate", "aggregate_name": "mean", "real_time": 999, "tflops": 1},
    {"name": "main_job/bwd/contiguous_median", "run_type": "aggregate", "aggregate_name": "median", "real_time": %s, "tflops": %s}]}\n' \
    "$2" "$3" "$4" "$5" >"$1"
}
run() { python3 "$script" "$@" >"$tmp/out" 2>&1; }

# 1. Two bases and three variants.
main_job "$tmp/plain.json" 2.0 100 5.0 80
main_job "$tmp/sinks.json" 2.2 90 5.0 80
main_job "$tmp/d192.json" 3.0 100 7.5 80
main_job "$tmp/mla.json" 2.7 92 6.0 85
main_job "$tmp/plain_end.json" 2.1 95 4.0 100
run --run plain "$tmp/plain.json" --run d192 "$tmp/d192.json" --variant sinks "$tmp/sinks.json" plain \
  --variant mla "$tmp/mla.json" d192 --variant plain_end "$tmp/plain_end.json" plain --json "$tmp/costs.json"
check "three variants: exit status 0" [ $? -eq 0 ]
check "sinks forward: 2.000 against 2.200 ms, time 1.100, rate 0.900" \
  grep -qE '^sinks +plain +forward +2.000 +2.200 +1.100 +0.900$' "$tmp/out"
check "sinks backward: the same time, the same rate" grep -qE '^sinks +plain +backward +5.000 +5.000 +1.000 +1.000$' "$tmp/out"
check "MLA beside its own base: time 0.900 and 0.800 forward and backward" \
  sh -c "grep -qE '^mla +d192 +forward +3.000 +2.700 +0.900 +0.920$' '$tmp/out' && grep -qE '^mla +d192 +backward +7.500 +6.000 +0.800 +1.062$' '$tmp/out'"
check "the iterations and the means are not read: six rows" [ "$(grep -cE '^(sinks|mla|plain_end) ' "$tmp/out")" -eq 6 ]
check "the JSON holds every row" python3 -c "
import json, sys
d = json.load(open('$tmp/costs.json'))['variants']
r = {(x['variant'], x['pass']): x for x in d}
sys.exit(not (len(d) == 6 and r[('plain_end', 'backward')]['time_ratio'] == 0.8 and r[('sinks', 'forward')]['base'] == 'plain'))"
cp "$tmp/out" "$tmp/log"

# 2. What it cannot report: exit status 1, saying why.
run --run plain "$tmp/plain.json" --variant sinks "$tmp/missing.json" plain
check "a missing file: exit status 1, naming it" sh -c "[ $? -eq 1 ] && grep -q 'cannot read sinks' '$tmp/out'"
printf '{"benchmarks": [{"name": "main_job/fwd/contiguous_median", "run_type": "aggregate", "real_time": 1, "tflops": 1}]}\n' \
  >"$tmp/forward_only.json"
run --run plain "$tmp/plain.json" --variant sinks "$tmp/forward_only.json" plain
check "a file without a backward: exit status 1, saying so" \
  sh -c "[ $? -eq 1 ] && grep -q 'no median of the backward' '$tmp/out'"
run --variant sinks "$tmp/sinks.json" plain
check "a base not given: exit status 1, saying so" sh -c "[ $? -eq 1 ] && grep -q 'not another run given' '$tmp/out'"
run --run sinks "$tmp/plain.json" --variant sinks "$tmp/sinks.json" sinks
check "a name given twice: exit status 1" sh -c "[ $? -eq 1 ] && grep -q 'named twice' '$tmp/out'"
cat "$tmp/out" >>"$tmp/log"
checks_done "$tmp/log"
