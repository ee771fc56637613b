#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stands in for "python3 torch_cpu_peer.py ARGS" in the tests of rfa_kernel_bench's peer (no
# torch needed): RFA_PEER_PYTHON="sh fake_serving_peer.sh ANSWER" makes the benchmark run
# "sh fake_serving_peer.sh ANSWER torch_cpu_peer.py ARGS". Without --serve it prints the one-shot
# peer's lines for the dtypes --dtypes names (float32 and bfloat16 without it), every case taking
# ANSWER ms forward and backward (lines the benchmark ignores when ANSWER is not a number), with
# the variant's arguments it was given as the forward's peer ("fake: --window 40 ...") and
# "fake" as the backward's; with it, it greets as the real peer does and then answers every
# request line with ANSWER, or exits at the first request when ANSWER is "exit", and a request
# for a call's name ("name fwd float32 causal") with "fake".
answer=$1
shift
serving=
dtypes="float32 bfloat16"
variant=
while [ $# -gt 0 ]; do
  case "$1" in
    --serve) serving=1 ;;
    --dtypes) dtypes=$(echo "$2" | tr , ' '); shift ;;
    --kv-heads|--window|--softcap|--doc-bounds|--doc-offsets) variant="$variant $1 $2"; shift ;;
  esac
  shift
done
if [ -z "$serving" ]; then
  for dtype in $dtypes; do
    for causal in false true; do
      echo "{\"dtype\": \"$dtype\", \"causal\": $causal, \"fwd_ms\": $answer, \"bwd_ms\": $answer, \"fwd_peer\": \"fake:$variant\", \"bwd_peer\": \"fake\"}"
    done
  done
  exit 0
fi
echo "ready torch=fake"
while IFS= read -r request; do
  [ "$answer" = exit ] && exit 0
  case "$request" in
    name\ *) echo fake ;;
    *) echo "$answer" ;;
  esac
done
