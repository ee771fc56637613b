#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Many "nodes" on one machine (docs/testing.md, "Many nodes on one machine"): runs an MPI program
# across N network namespaces with R ranks each, as root.
#
#   bash scripts/multinode/nodes.sh [options] -- PROGRAM [ARGS...]
#   bash scripts/multinode/nodes.sh --probe     # exit 0 if namespaces can be made here, else 77
#
# Each node is a network namespace with its own host name (node0, node1, ...: a UTS namespace of
# its own, set by the launch agent) and one link, a veth pair to a bridge in a switch namespace;
# mpiexec runs in a head namespace on the same bridge and starts Open MPI's daemon on every node
# through scripts/multinode/launch_agent.sh (in place of ssh). Ranks of one node talk through
# shared memory, ranks of different nodes through TCP over their links, on private addresses
# (10.77.0.0/24) that exist only inside these namespaces: nothing else is contacted. Every node
# sees all of the machine's cores and ranks are not bound to cores (each node's daemon would
# bind its ranks from core 0 up, piling the nodes' ranks onto the same cores). Each link
# can be shaped (tc tbf, both directions), cut, or have a rank of its node killed at a moment the
# program marks (--fault). Everything made is removed at exit, on failure, Ctrl-C or a kill
# (TERM); after a SIGKILL the next run removes what a dead harness left (namespaces named
# rfamn<PID>-* and the folder /tmp/rfamn<PID>.dir.*, whose PID is gone).
#
# Options:
#   --nodes N         nodes (default 2, at most 64)
#   --ranks R         ranks per node (default 1)
#   --map-by M        slot: the ranks of one node are consecutive in MPI_COMM_WORLD (default);
#                     node: ranks go round robin over the nodes (rank r on node r % N)
#   --rate RATE       every link's bandwidth each way, in tc's units (e.g. 200mbit); default: not
#                     shaped (a veth pair moves several GB/s)
#   --link-rate K=RATE  node K's link only (repeatable; after --rate)
#   --burst-ms MS     what a shaped link lets through at once after a pause, as milliseconds at
#                     its rate (tbf's burst; at least 16 KiB; default 10, 1 to 1000)
#   --fault SPEC      a fault, as comma-separated key=value (repeatable):
#                       on=MARK     when a rank creates the file $RFA_MULTINODE_DIR/MARK (required)
#                       after=S     seconds after that (default 0)
#                       action=A    down: node's link cut (at the switch); kill: one rank of the
#                                   node killed (SIGKILL); rate: the node's link reshaped
#                       node=K      which node (default 1)
#                       for=S       down only: the link comes back up after S seconds
#                       rate=RATE   rate only: the new bandwidth
#                     when applied, the harness writes the time (seconds since the epoch) to
#                     $RFA_MULTINODE_DIR/fault.I (I counts the --fault options from 0)
#   --until N         end the job once N files verdict.* exist in $RFA_MULTINODE_DIR (2 s later;
#                     the run then counts as ended by the program; for fault tests, whose ranks
#                     may not be able to finish MPI once a link is gone)
#   --limit S         wall-clock limit of the job in seconds (default 300): killed after, exit 124
#   --dir DIR         the folder shared by every rank ($RFA_MULTINODE_DIR; default a temporary one,
#                     removed at exit); when the job ends, the statistics of each shaped link's
#                     shaper (tc -s qdisc of node K's side) are written there as link.K.stats
#   --env NAME=VALUE  set in every rank's environment (repeatable)
#   --keep-going      a rank's death does not end the job: the others go on, as under a runtime that
#                     keeps the survivors (Open MPI's orte_enable_recovery); by default Open MPI's
#                     runtime ends the whole job when a rank dies
#   --tcp-links N     TCP connections Open MPI opens between two ranks on different nodes (its
#                     btl_tcp_links; default 4, 1 to 16). With one, a large message's rendezvous
#                     reply waits in the socket behind the bulk data its sender is sending and the
#                     link idles up to half the time; an RDMA fabric keeps such replies apart
#                     (perf/RESULTS.md, "2026-11-28 (afternoon) — one TCP connection per pair
#                     of ranks")
#   --quiet           no harness lines on stderr
# Every rank sees RFA_MULTINODE_DIR, RFA_MULTINODE_NODES and RFA_MULTINODE_RANKS_PER_NODE.
# Exit: the program's (mpiexec's) exit code; 124 if killed at the limit; 77 if namespaces cannot
# be made here (not root, no ip/tc/unshare, a kernel without network namespaces, a
# program that cannot run inside one, as in a chroot whose / is not a mount point); 2 for bad usage.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

nodes=2
ranks=1
map_by=slot
rate=""
burst_ms=10
declare -A link_rate=()
faults=()
until_files=0
limit=300
dir=""
envs=()
keep_going=0
tcp_links=4
quiet=0
probe=0
usage() {
  sed -n '4,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d;s/^# \{0,1\}//'
  exit "${1:-2}"
}
say() { [ "$quiet" = 1 ] || echo "nodes.sh: $*" >&2; }
die() {
  echo "nodes.sh: $*" >&2
  exit 2
}
is_count() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "${2:-1}" ]; }
is_seconds() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_rate() { [[ $1 =~ ^[0-9]+([.][0-9]+)?(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)$ ]]; }

while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=${2:-}; shift 2 ;;
    --ranks) ranks=${2:-}; shift 2 ;;
    --map-by) map_by=${2:-}; shift 2 ;;
    --rate) rate=${2:-}; shift 2 ;;
    --burst-ms) burst_ms=${2:-}; shift 2 ;;
    --link-rate)
      [[ ${2:-} =~ ^([0-9]+)=(.+)$ ]] || die "--link-rate takes K=RATE, not '${2:-}'"
      link_rate[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
      shift 2
      ;;
    --fault) faults+=("${2:-}"); shift 2 ;;
    --until) until_files=${2:-}; shift 2 ;;
    --limit) limit=${2:-}; shift 2 ;;
    --dir) dir=${2:-}; shift 2 ;;
    --env)
      [[ ${2:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env takes NAME=VALUE, not '${2:-}'"
      envs+=("$2")
      shift 2
      ;;
    --keep-going) keep_going=1; shift ;;
    --tcp-links) tcp_links=${2:-}; shift 2 ;;
    --quiet) quiet=1; shift ;;
    --probe) probe=1; shift ;;
    -h | --help) usage 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (--help lists them; the program follows --)" ;;
  esac
done
if ! is_count "$nodes" || [ "$nodes" -gt 64 ]; then die "--nodes takes 1 to 64, not '$nodes'"; fi
is_count "$ranks" || die "--ranks takes a count of at least 1, not '$ranks'"
if ! is_count "$tcp_links" || [ "$tcp_links" -gt 16 ]; then die "--tcp-links takes 1 to 16, not '$tcp_links'"; fi
case $map_by in slot | node) ;; *) die "--map-by takes slot or node, not '$map_by'" ;; esac
[ -z "$rate" ] || is_rate "$rate" || die "--rate takes a tc rate such as 200mbit, not '$rate'"
if ! is_count "$burst_ms" || [ "$burst_ms" -gt 1000 ]; then die "--burst-ms takes 1 to 1000, not '$burst_ms'"; fi
for k in "${!link_rate[@]}"; do
  [ "$k" -lt "$nodes" ] || die "--link-rate names node $k of $nodes"
  is_rate "${link_rate[$k]}" || die "--link-rate $k takes a tc rate such as 200mbit, not '${link_rate[$k]}'"
done
is_count "$until_files" 0 || die "--until takes a count, not '$until_files'"
is_seconds "$limit" || die "--limit takes seconds, not '$limit'"
[ "$probe" = 1 ] || [ $# -gt 0 ] || die "no program given (after --)"

# Faults, parsed and checked before anything is made.
declare -a f_on f_after f_action f_node f_for f_rate
for i in "${!faults[@]}"; do
  f_on[i]=""; f_after[i]=0; f_action[i]=""; f_node[i]=1; f_for[i]=""; f_rate[i]=""
  IFS=, read -r -a kv <<<"${faults[i]}"
  for pair in "${kv[@]}"; do
    key=${pair%%=*} value=${pair#*=}
    [ "$key" != "$pair" ] || die "--fault '${faults[i]}': '$pair' is not key=value"
    case $key in
      on) [[ $value =~ ^[A-Za-z0-9._-]+$ ]] || die "--fault on= takes a file name, not '$value'"; f_on[i]=$value ;;
      after) is_seconds "$value" || die "--fault after= takes seconds, not '$value'"; f_after[i]=$value ;;
      action) case $value in down | kill | rate) f_action[i]=$value ;; *) die "--fault action= takes down, kill or rate, not '$value'" ;; esac ;;
      node)
        if ! is_count "$value" 0 || [ "$value" -ge "$nodes" ]; then die "--fault node= takes 0 to $((nodes - 1)), not '$value'"; fi
        f_node[i]=$value
        ;;
      for) is_seconds "$value" || die "--fault for= takes seconds, not '$value'"; f_for[i]=$value ;;
      rate) is_rate "$value" || die "--fault rate= takes a tc rate such as 1mbit, not '$value'"; f_rate[i]=$value ;;
      *) die "--fault '${faults[i]}': unknown key '$key' (on, after, action, node, for, rate)" ;;
    esac
  done
  [ -n "${f_on[i]}" ] || die "--fault '${faults[i]}' needs on=MARK"
  [ -n "${f_action[i]}" ] || die "--fault '${faults[i]}' needs action=down|kill|rate"
  [ "${f_action[i]}" != rate ] || [ -n "${f_rate[i]}" ] || die "--fault '${faults[i]}': action=rate needs rate=RATE"
  [ "${f_node[i]}" -lt "$nodes" ] || die "--fault '${faults[i]}' names node ${f_node[i]} of $nodes"
done

skip() {
  echo "nodes.sh: cannot make nodes here: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (this is uid $(id -u))"
for tool in ip tc unshare mpiexec; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed (Debian: iproute2, util-linux, openmpi-bin)"
done

prefix=rfamn$$
# What a harness killed by SIGKILL left: its namespaces, with every process still in them.
remove_namespace() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null)
  # shellcheck disable=SC2086  # one word per process
  [ -z "$pids" ] || kill -9 $pids 2>/dev/null
  ip netns delete "$1" 2>/dev/null
}
for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
  if [[ $ns =~ ^rfamn([0-9]+)- ]] && ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
    remove_namespace "$ns"
  fi
done
# ... and its shared folder, named for its PID too (only the harness's own: --dir is the caller's).
for stale in /tmp/rfamn[0-9]*.dir.*; do
  if [[ $stale =~ ^/tmp/rfamn([0-9]+)[.]dir[.] ]] && ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
    rm -rf "$stale"
  fi
done

made=()
own_dir=0
job=""
watchers=()
# shellcheck disable=SC2317  # called through the trap
# It runs to its end whatever arrives meanwhile: a second signal, or a write (the shell's notice
# of the job it kills) to output whose reader is gone, which would otherwise end the shell. The
# commands it runs ignore INT and TERM too: a removal that blocks yields to SIGKILL alone, and
# the next run removes what it left.
cleanup() {
  trap - EXIT
  trap '' INT TERM HUP PIPE
  for w in "${watchers[@]}"; do kill "$w" 2>/dev/null; done
  [ -z "$job" ] || kill -9 "$job" 2>/dev/null
  local ns
  for ns in "${made[@]}"; do remove_namespace "$ns"; done
  [ "$own_dir" = 0 ] || rm -rf "$dir"
}
trap cleanup EXIT
# A signal ends the harness through cleanup, ignoring the next ones from the first: a second
# signal before cleanup starts would end the EXIT trap itself. A write to output whose reader is
# gone (the limit's message, the shell's notice of a job it kills) ends it the same way.
trap 'trap "" INT TERM HUP PIPE; exit 130' INT
trap 'trap "" INT TERM HUP PIPE; exit 143' TERM
trap 'trap "" INT TERM HUP PIPE; exit 129' HUP
trap 'trap "" INT TERM HUP PIPE; exit 141' PIPE

# A namespace with its loopback up.
make_namespace() {
  local err
  err=$(ip netns add "$1" 2>&1) || skip "ip netns add: $err"
  made+=("$1")
  ip -n "$1" link set lo up
}
# What every run needs beyond making a namespace, tried in NAMESPACE with each tool's own message
# where it fails: running a program inside it (`ip netns exec` remounts /sys in a mount namespace
# of its own, which fails in a chroot whose / is not a mount point), a UTS namespace (each node's
# host name) and a bridge (the switch).
check_namespaces_work() { # NAMESPACE
  local err
  err=$(ip netns exec "$1" true 2>&1) || skip "ip netns exec: ${err:-exit status $?}"
  err=$(unshare --uts true 2>&1) || skip "unshare --uts: ${err:-exit status $?}"
  err=$(ip -n "$1" link add br0 type bridge 2>&1) || skip "a bridge: ${err:-exit status $?}"
}
sw=$prefix-sw
make_namespace "$sw"
check_namespaces_work "$sw"
if [ "$probe" = 1 ]; then
  echo "nodes.sh: network namespaces, programs inside them, bridges and UTS namespaces work here"
  exit 0
fi

head_ns=$prefix-head
subnet=10.77.0
ip -n "$sw" link set br0 up || exit 1
# One link: a veth pair, "eth0" in the namespace and PORT at the bridge.
attach() { # NAMESPACE PORT ADDRESS
  ip link add "$2" netns "$sw" type veth peer name eth0 netns "$1" &&
    ip -n "$sw" link set "$2" master br0 up &&
    ip -n "$1" addr add "$3/24" dev eth0 &&
    ip -n "$1" link set eth0 up
}
# tc tbf on both ends of node K's link; a burst of --burst-ms at the rate (at least 16 KiB).
shape() { # K RATE
  local bits burst
  bits=$(awk -v r="$2" 'BEGIN {
      n = r + 0; u = substr(r, length(n "") + 1)
      m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9
      m["bps"] = 8; m["kbps"] = 8e3; m["mbps"] = 8e6; m["gbps"] = 8e9
      printf "%.0f", n * m[u] }')
  burst=$((bits * burst_ms / 8000 > 16384 ? bits * burst_ms / 8000 : 16384))
  ip netns exec "$prefix-node$1" tc qdisc replace dev eth0 root tbf rate "$2" burst "$burst" latency 200ms &&
    ip netns exec "$sw" tc qdisc replace dev "p$1" root tbf rate "$2" burst "$burst" latency 200ms
}
make_namespace "$head_ns"
attach "$head_ns" head "$subnet.254" || exit 1
hosts=""
for ((k = 0; k < nodes; k++)); do
  make_namespace "$prefix-node$k"
  attach "$prefix-node$k" "p$k" "$subnet.$((k + 1))" || exit 1
  r=${link_rate[$k]:-$rate}
  if [ -n "$r" ]; then shape "$k" "$r" || exit 1; fi
  hosts+="${hosts:+,}node$k:$ranks"
done
say "$nodes node(s) x $ranks rank(s), links ${rate:-unshaped}$(for k in "${!link_rate[@]}"; do printf ', node%s %s' "$k" "${link_rate[$k]}"; done)"

if [ -z "$dir" ]; then
  dir=$(mktemp -d "/tmp/$prefix.dir.XXXXXX") || exit 1
  own_dir=1
else
  mkdir -p "$dir" || die "cannot make --dir $dir"
  dir=$(cd "$dir" && pwd)
fi
chmod 0777 "$dir"

program=$1
[[ $program == */* ]] || program=$(command -v "$program") || die "'$1' is not a program"
program=$(realpath "$program") || die "'$1' is not a program"
shift

# A fault: wait for its mark, then act; the time it was applied goes to fault.I.
apply_fault() { # I
  local i=$1 k=${f_node[$1]} pids pid
  while [ ! -e "$dir/${f_on[i]}" ]; do sleep 0.02; done
  sleep "${f_after[i]}"
  case ${f_action[i]} in
    down) ip -n "$sw" link set "p$k" down ;;
    rate) shape "$k" "${f_rate[i]}" ;;
    kill)
      pids=$(ip netns pids "$prefix-node$k")
      for pid in $pids; do
        # The same file, not the same path string: a process's exe link reads relative to its
        # own root, which differs from this shell's in a chroot.
        if [ "/proc/$pid/exe" -ef "$program" ]; then
          kill -9 "$pid"
          break
        fi
      done
      ;;
  esac
  date +%s.%N >"$dir/fault.$i"
  say "fault $i applied: ${f_action[i]} on node$k${f_rate[i]:+ to ${f_rate[i]}}"
  if [ "${f_action[i]}" = down ] && [ -n "${f_for[i]}" ]; then
    sleep "${f_for[i]}"
    ip -n "$sw" link set "p$k" up
    date +%s.%N >"$dir/restored.$i"
    say "fault $i ended: node$k's link up again"
  fi
}
for i in "${!faults[@]}"; do
  apply_fault "$i" &
  watchers+=($!)
done

mpi_args=(--host "$hosts" -np $((nodes * ranks)) --map-by "$map_by" --allow-run-as-root
  --mca plm_rsh_agent "$here/launch_agent.sh" --mca plm_rsh_no_tree_spawn 1
  --mca oob_tcp_if_include "$subnet.0/24" --mca btl_tcp_if_include "$subnet.0/24"
  --mca btl "self,vader,tcp" --mca pml ob1 --mca btl_tcp_links "$tcp_links" --bind-to none --wdir "$PWD"
  -x RFA_MULTINODE_DIR -x RFA_MULTINODE_NODES -x RFA_MULTINODE_RANKS_PER_NODE)
[ "$keep_going" = 0 ] || mpi_args+=(--mca orte_enable_recovery 1 --mca orte_abort_on_non_zero_status 0)
for e in "${envs[@]}"; do
  export "${e?}"
  mpi_args+=(-x "${e%%=*}")
done
export RFA_MULTINODE_PREFIX=$prefix RFA_MULTINODE_DIR=$dir RFA_MULTINODE_NODES=$nodes RFA_MULTINODE_RANKS_PER_NODE=$ranks
ip netns exec "$head_ns" mpiexec "${mpi_args[@]}" "$program" "$@" &
job=$!
start=$SECONDS
status=""
while kill -0 "$job" 2>/dev/null; do
  if [ "$until_files" -gt 0 ]; then
    written=$(find "$dir" -maxdepth 1 -name 'verdict.*' | wc -l)
    if [ "$written" -ge "$until_files" ]; then
      sleep 2
      if kill -0 "$job" 2>/dev/null; then
        say "$written verdict(s) written; the job's remaining processes are ended"
        kill -9 "$job" 2>/dev/null
        wait "$job" 2>/dev/null
        job=""
        status=0
      fi
      break
    fi
  fi
  if awk -v e=$((SECONDS - start)) -v l="$limit" 'BEGIN { exit !(e >= l) }'; then
    echo "nodes.sh: the job passed its limit of $limit s and was killed" >&2
    kill -9 "$job" 2>/dev/null
    wait "$job" 2>/dev/null
    job=""
    status=124
    break
  fi
  sleep 0.1
done
if [ -z "$status" ]; then
  wait "$job"
  status=$?
  job=""
fi
# What each shaped link's shaper did (tc -s: bytes sent, packets dropped, times it held packets
# back as over the rate), for a caller that keeps --dir.
for ((k = 0; k < nodes; k++)); do
  stats=$(ip netns exec "$prefix-node$k" tc -s qdisc show dev eth0 2>/dev/null)
  if grep -q "qdisc tbf" <<<"$stats"; then echo "$stats" >"$dir/link.$k.stats"; fi
done
exit "$status"
