#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stands in for "python3 torch_cpu_peer.py ARGS" in the tests of rfa_kernel_bench --rfa_paired
# (no torch needed): RFA_PEER_PYTHON="sh fake_serving_peer.sh ANSWER" makes the benchmark run
# "sh fake_serving_peer.sh ANSWER torch_cpu_peer.py ARGS". Without --serve it prints the one-shot
# peer's lines, every case taking ANSWER ms forward and backward (lines the benchmark ignores
# when ANSWER is not a number); with it, it greets as the real peer does and then answers every
# request line with ANSWER, or exits at the first request when ANSWER is "exit".
answer=$1
serving=
for arg in "$@"; do
  [ "$arg" = --serve ] && serving=1
done
if [ -z "$serving" ]; then
  for dtype in float32 bfloat16; do
    for causal in false true; do
      echo "{\"dtype\": \"$dtype\", \"causal\": $causal, \"fwd_ms\": $answer, \"bwd_ms\": $answer}"
    done
  done
  exit 0
fi
echo "ready torch=fake"
while IFS= read -r request; do
  [ "$answer" = exit ] && exit 0
  echo "$answer"
done
