#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One fault across "nodes" (docs/reliability.md, "Across nodes"): runs link_fault_test under
# scripts/multinode/nodes.sh on 2 nodes x 2 ranks and judges the verdict each rank wrote.
#
#   fault_case.sh CASE LINK_FAULT_TEST NODES_SH
#
# CASE: link_cut_forward, link_cut_backward (node 1's link cut at the switch 0.5 s into the call,
# back up 8 s later), rank_killed (a rank of node 1 killed 0.5 s into a forward; the runtime lets
# the others go on, though Open MPI's TCP transport may itself end a survivor whose connection to
# the killed rank fails: counted apart, as long as some survivor returns rfa's error), trickle_link (node 1's link slowed to 8 kbit/s 0.5 s into a backward): every
# surviving rank returns RFA_ERROR_TIMEOUT (or RFA_ERROR_MPI, a transport's own error), the fault
# having come after the call started and before it returned, within the bound below after the
# fault, its inputs untouched, and the heap blocks it filled after the call
# intact while the abandoned transfers could still land. slow_link_exact: node 1's link at
# 2 mbit/s from the start and a deadline far above the call's time: every rank's backward (after
# its forward) is exact against float64, and the link's shaper held packets back (tc's overlimits).
#
# The bound after a fault is the deadline T plus one ring step's transfer on the shaped link plus
# 1 s: a rank whose transfer was still arriving when the fault came (legitimately: its sender was
# alive) finishes that step, then waits at most T in the next one for what can no longer come; the
# exchanges the call still had in flight are given up at once once one has timed out
# (docs/reliability.md). The second covers the check's own scheduling on a loaded 2-core machine.
# One step moves 2 MiB of K/V (4096 tokens over 4 ranks, 4 heads of 64 fp32): 0.84 s at
# 20 mbit/s, 2.1 s at 8 mbit/s.
set -uo pipefail
case_name=${1:?case}
program=${2:?link_fault_test}
nodes_sh=${3:?nodes.sh}
deadline=3
step_s=0.84

work=$(mktemp -d /tmp/rfa-fault.XXXXXX)
trap 'rm -rf "$work"' EXIT
harness=(bash "$nodes_sh" --nodes 2 --ranks 2 --limit 120 --dir "$work")
expected=4
expect=error
case $case_name in
  link_cut_forward | link_cut_backward)
    op=${case_name#link_cut_}
    harness+=(--rate 20mbit --until 4 --fault "on=$op,after=0.5,action=down,node=1,for=8")
    args=(--op "$op" --timeout "$deadline" --seq 4096 --linger 8)
    ;;
  rank_killed)
    # One TCP connection per pair of ranks: with four, Open MPI's ob1 aborted a surviving rank
    # whose send to the killed one failed ("writev failed: Connection reset by peer", a FATAL
    # in pml_ob1_sendreq.c) in 1 of 3 runs, before rfa could return; with one, 5 of 5 passed.
    expected=3
    step_s=2.1
    harness+=(--rate 8mbit --tcp-links 1 --keep-going --until 3 --fault "on=forward,after=0.5,action=kill,node=1")
    args=(--op forward --timeout "$deadline" --seq 4096 --linger 2)
    ;;
  trickle_link)
    harness+=(--rate 20mbit --until 4 --fault "on=backward,after=0.5,action=rate,node=1,rate=8kbit")
    args=(--op backward --timeout "$deadline" --seq 4096 --linger 2)
    ;;
  slow_link_exact)
    expect=exact
    harness+=(--link-rate "1=2mbit")
    args=(--op backward --timeout 60 --seq 512 --expect exact)
    ;;
  *)
    echo "fault_case.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

"${harness[@]}" -- "$program" "${args[@]}"
status=$?
[ "$status" -ne 77 ] || exit 77
# A rank that died of a signal during the call left its report (link_fault_test.cpp).
for report in "$work"/crash.*; do
  [ -e "$report" ] || continue
  echo "rank ${report##*.} died of a signal during the call:" >&2
  cat "$report" >&2
  crashed=1
done
if [ "$status" -ne 0 ]; then
  echo "FAILED: the job exited with $status" >&2
  exit 1
fi

fault_time=""
[ ! -e "$work/fault.0" ] || fault_time=$(cat "$work/fault.0")
failures=0
returned_errors=0
fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}
[ "${crashed:-0}" = 0 ] || fail "a rank died of a signal during the call (its report is above)"
count=$(find "$work" -maxdepth 1 -name 'verdict.*' ! -name '*.tmp' | wc -l)
[ "$count" -eq "$expected" ] || fail "$count rank(s) wrote a verdict, $expected expected"
if [ "$expect" = error ] && [ -z "$fault_time" ]; then fail "the fault was never applied"; fi
# A key's value in the verdict line being judged ($line).
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $line"; }
for verdict in "$work"/verdict.*; do
  [ -e "$verdict" ] || continue
  case $verdict in *.tmp) continue ;; esac
  line=$(cat "$verdict")
  echo "$line"
  rank=$(field rank)
  rc=$(field rc)
  if [ "$rc" != ENDED_BY_MPI ]; then
    [ "$(field inputs)" = untouched ] || fail "rank $rank: the call changed its inputs"
    [ "$(field canaries)" = intact ] || fail "rank $rank: a heap block filled after the call was overwritten"
  fi
  started=$(field started) returned=$(field returned)
  if [ "$expect" = exact ]; then
    [ "$rc" = RFA_SUCCESS ] || fail "rank $rank returned $rc on a slowed link"
    awk -v e="$(field error)" 'BEGIN { exit !(e != "-" && e + 0 <= 1e-5) }' ||
      fail "rank $rank: error $(field error) against float64 (fp32: at most 1e-5)"
    continue
  fi
  case $rc in
    RFA_ERROR_TIMEOUT | RFA_ERROR_MPI) returned_errors=$((returned_errors + 1)) ;;
    ENDED_BY_MPI)
      # Open MPI's TCP transport ends a process whose connection to the killed rank fails
      # (pml_ob1: fatal whatever the error handler), with exit(): the process neither hung nor
      # crashed (link_fault_test.cpp's exit handler wrote this), but rfa could not return.
      [ "$case_name" = rank_killed ] || fail "rank $rank was ended by its MPI library ($case_name)"
      echo "rank $rank: ended by its MPI library (Open MPI's TCP transport) during the call" ;;
    *) fail "rank $rank returned $rc, not RFA_ERROR_TIMEOUT or RFA_ERROR_MPI" ;;
  esac
  [ -n "$(field message)" ] || fail "rank $rank: no message with $rc"
  awk -v s="$started" -v f="$fault_time" -v r="$returned" 'BEGIN { exit !(s < f && f < r) }' ||
    fail "rank $rank: the fault (at $fault_time) did not come during its call ($started to $returned)"
  after=$(awk -v f="$fault_time" -v r="$returned" 'BEGIN { printf "%.2f", r - f }')
  bound=$(awk -v t="$deadline" -v s="$step_s" 'BEGIN { print t + s + 1 }')
  awk -v a="$after" -v b="$bound" 'BEGIN { exit !(a <= b) }' ||
    fail "rank $rank returned $after s after the fault, beyond the deadline plus a step plus 1 s ($bound s)"
  echo "rank $rank: $rc $after s after the fault (bound $bound s)"
done
# rfa itself returned its error on at least one survivor (the others, if any, were ended by MPI).
if [ "$expect" = error ] && [ "${returned_errors:-0}" -eq 0 ]; then
  fail "no rank returned rfa's error"
fi
if [ "$expect" = exact ]; then
  # The shaper on node 1's link held packets back (the call ran over a slowed link, not past it).
  overlimits=$(sed -n 's/.*overlimits \([0-9]*\).*/\1/p' "$work/link.1.stats" 2>/dev/null | head -1)
  [ "${overlimits:-0}" -gt 0 ] || fail "node 1's link shaper never held a packet back: the link was not slowed"
  echo "node 1's shaper held packets back $overlimits time(s)"
fi
[ "$failures" -eq 0 ] || exit 1
echo "$case_name: passed"
