#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/multinode/nodes.sh itself: host names and placement, exit codes passed through, the
# limit, nothing left behind after a normal end, a failure (a pending fault's watcher included),
# a TERM or a SIGKILL (the next run removes what a killed harness left), nothing made in this
# machine's own namespace, bad usage refused. Skips (77) where namespaces cannot be made.
#   harness_test.sh NODES_SH
set -uo pipefail
nodes_sh=${1:?nodes.sh}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/scripts/checks.sh
source "$here/../scripts/checks.sh"
bash "$nodes_sh" --probe >"$tmp/probe" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
  cat "$tmp/probe"
  exit 77
fi

ours() { ip netns list | awk '{print $1}' | grep -c '^rfamn' || true; }
# The programs' output without Open MPI's launcher warning of a benign race (its setpgid on a
# child that has already started its program fails with EACCES now and then).
output() { grep -v 'plm:rsh: Warning: setpgid' "$1" || true; }
links_before=$(ip -o link | wc -l)

bash "$nodes_sh" --quiet --nodes 3 --ranks 2 -- hostname >"$tmp/slot" 2>&1
check "3 nodes x 2 ranks: every rank reports its node's host name" \
  test "$(output "$tmp/slot" | sort | tr '\n' ' ')" = "node0 node0 node1 node1 node2 node2 "
bash "$nodes_sh" --quiet --nodes 2 --ranks 2 --map-by node -- sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' \
  >"$tmp/rr" 2>&1
check "--map-by node puts rank r on node r % N" \
  test "$(output "$tmp/rr" | sort | tr '\n' ' ')" = "0 node0 1 node1 2 node0 3 node1 "
bash "$nodes_sh" --quiet --nodes 2 -- sh -c 'ip -o -4 addr show | awk "{print \$2, \$4}"' >"$tmp/addr" 2>&1
check "each node has loopback and one link on the private subnet, nothing else" \
  test "$(output "$tmp/addr" | sort -u | tr '\n' ' ')" = "eth0 10.77.0.1/24 eth0 10.77.0.2/24 lo 127.0.0.1/8 "
bash "$nodes_sh" --quiet --nodes 2 --env RFA_HARNESS_PROBE=seen -- sh -c 'echo "$RFA_HARNESS_PROBE $RFA_MULTINODE_NODES $RFA_MULTINODE_RANKS_PER_NODE"' \
  >"$tmp/env" 2>&1
check "--env and the harness's variables reach every rank" test "$(output "$tmp/env" | sort -u)" = "seen 2 1"
bash "$nodes_sh" --quiet --nodes 2 -- sh -c 'echo "$OMPI_MCA_btl_tcp_links"' >"$tmp/links" 2>&1
bash "$nodes_sh" --quiet --nodes 2 --tcp-links 1 -- sh -c 'echo "$OMPI_MCA_btl_tcp_links"' >>"$tmp/links" 2>&1
check "Open MPI gets 4 TCP connections per pair of ranks, or --tcp-links" \
  test "$(output "$tmp/links" | tr '\n' ' ')" = "4 4 1 1 "

# The shaper's burst: 10 ms at the rate by default, or --burst-ms (tc prints it in bytes).
mkdir "$tmp/burst10" "$tmp/burst20" "$tmp/burst1"
bash "$nodes_sh" --quiet --nodes 2 --rate 100mbit --dir "$tmp/burst10" -- sh -c true >/dev/null 2>&1
bash "$nodes_sh" --quiet --nodes 2 --rate 100mbit --burst-ms 20 --dir "$tmp/burst20" -- sh -c true >/dev/null 2>&1
bash "$nodes_sh" --quiet --nodes 2 --rate 100mbit --burst-ms 1 --dir "$tmp/burst1" -- sh -c true >/dev/null 2>&1
check "a shaped link lets 10 ms at its rate through at once (125000 bytes at 100 Mbit/s)" \
  grep -q "burst 125000b" "$tmp/burst10/link.1.stats"
check "... or --burst-ms of it" grep -q "burst 250000b" "$tmp/burst20/link.1.stats"
check "... and never less than 16 KiB (1 ms at 100 Mbit/s is 12500 bytes)" grep -q "burst 16Kb" "$tmp/burst1/link.1.stats"

bash "$nodes_sh" --quiet --nodes 2 -- sh -c 'exit 3' >/dev/null 2>&1
check "a failing program's exit code comes back" test $? -eq 3
check "nothing is left after a failure" test "$(ours)" -eq 0
# A fault whose mark never appears (the program fails first): its watcher ends with the harness.
bash "$nodes_sh" --quiet --nodes 2 --fault "on=never$$,action=down" -- sh -c 'exit 3' >/dev/null 2>&1
check "a failing program's exit code comes back beside a pending fault" test $? -eq 3
sleep 0.5
check "... and no fault watcher outlives the harness" test "$(pgrep -c -f "on=never$$")" -eq 0
pkill -f "on=never$$"  # where the check failed: the watcher would wait for its mark for good
start=$SECONDS
bash "$nodes_sh" --quiet --nodes 2 --limit 2 -- sleep 60 >/dev/null 2>&1
status=$?
check "a job past --limit is killed with exit 124" test "$status" -eq 124
check "... within a few seconds of the limit" test $((SECONDS - start)) -le 10
check "nothing is left after the limit" test "$(ours)" -eq 0

# A harness sent SIGNAL 3 s into a job that would run for a minute. The job's sleep carries this
# script's pid in its duration, so the count below sees only this job's processes, never another
# test's sleep running beside it.
# With a second argument, a fifo, the harness writes there and its reader goes before the signal
# (a caller that captured its output and was killed first). Returns the harness's exit status.
job_sleep="sleep 60.$$"
signal_harness() {
  local out=${2:-/dev/null}
  # shellcheck disable=SC2086  # the command and its argument
  bash "$nodes_sh" --quiet --nodes 2 -- $job_sleep >"$out" 2>&1 &
  local harness=$!
  [ -z "${2:-}" ] || exec 9<"$out"
  sleep 3
  [ -z "${2:-}" ] || exec 9<&-
  kill "-$1" "$harness"
  wait "$harness" 2>/dev/null
}
signal_harness TERM
check "nothing is left after the harness is sent TERM" test "$(ours)" -eq 0
check "no process of the job survives TERM" test "$(pgrep -c -f "^$job_sleep\$")" -eq 0

# The same where the harness's output is a pipe whose reader is gone: the shell's notice of the
# job it kills must not end its cleanup.
mkfifo "$tmp/pipe" || exit 1
signal_harness TERM "$tmp/pipe"
status=$?
check "a harness sent TERM with its reader gone ends as sent TERM (143, not SIGPIPE's 141)" test "$status" -eq 143
check "nothing is left after TERM with the harness's reader gone" test "$(ours)" -eq 0
check "... nor a process of the job" test "$(pgrep -c -f "^$job_sleep\$")" -eq 0

folders() { find /tmp -maxdepth 1 -name 'rfamn[0-9]*.dir.*' | wc -l; }
signal_harness KILL
check "a harness killed by SIGKILL leaves its namespaces" test "$(ours)" -gt 0
check "... and its shared folder" test "$(folders)" -gt 0
bash "$nodes_sh" --quiet --nodes 1 -- true >/dev/null 2>&1
check "... which the next run removes, with their processes" test "$(ours)" -eq 0
check "... and the folder" test "$(folders)" -eq 0
check "nothing was added to this machine's own network namespace" test "$(ip -o link | wc -l)" -eq "$links_before"

# Where a program cannot run inside a namespace (`ip netns exec` fails, as in a chroot whose / is
# not a mount point), the harness skips with ip's own message, for --probe and for a run alike,
# and leaves nothing behind. An `ip` in front of the real one fails that command alone.
mkdir "$tmp/shim"
real_ip=$(command -v ip)
cat >"$tmp/shim/ip" <<EOF
#!/bin/sh
if [ "\$1" = netns ] && [ "\$2" = exec ]; then
  echo '"mount --make-rslave /" failed: Invalid argument' >&2
  exit 1
fi
exec "$real_ip" "\$@"
EOF
chmod +x "$tmp/shim/ip"
PATH="$tmp/shim:$PATH" bash "$nodes_sh" --probe >"$tmp/noexec" 2>&1
check "--probe skips (77) where ip netns exec fails" test $? -eq 77
PATH="$tmp/shim:$PATH" bash "$nodes_sh" --quiet --nodes 2 -- true >>"$tmp/noexec" 2>&1
check "... and so does a run, instead of failing" test $? -eq 77
check "... saying so with ip's message" test "$(grep -c 'cannot make nodes here: ip netns exec: "mount --make-rslave /"' "$tmp/noexec")" -eq 2
check "... and nothing is left" test "$(ours)" -eq 0

for bad in "--nodes 0" "--nodes 65" "--ranks x" "--map-by cyclic" "--rate fast" "--link-rate 5=1mbit" \
  "--fault action=down" "--fault on=m,action=explode" "--fault on=m,action=rate" "--fault on=m,action=down,node=2" \
  "--until -1" "--limit soon" "--tcp-links 0" "--tcp-links 17" "--burst-ms 0" "--burst-ms 1001"; do
  # shellcheck disable=SC2086  # each entry is a list of words
  bash "$nodes_sh" $bad -- true >"$tmp/bad" 2>&1
  check "refused with exit 2: $bad" test $? -eq 2
done
check "... and nothing was made for them" test "$(ours)" -eq 0
checks_done "$tmp/slot"
