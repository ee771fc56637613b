#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Open MPI's launch agent for scripts/multinode/nodes.sh (its --mca plm_rsh_agent, in place of
# ssh): called as `launch_agent.sh HOST COMMAND...`, it runs the command (Open MPI's daemon, orted)
# inside the network namespace of that "node", with the node's own host name (a UTS namespace of
# its own), as ssh would run it on a real node: through a shell, words joined.
# RFA_MULTINODE_PREFIX (set by nodes.sh) names the namespaces: PREFIX-HOST.
set -eu
host=$1
shift
case $host in
  node[0-9]*) ;;
  *)
    echo "launch_agent.sh: '$host' is not a node of this harness (node0, node1, ...)" >&2
    exit 2
    ;;
esac
: "${RFA_MULTINODE_PREFIX:?launch_agent.sh runs under scripts/multinode/nodes.sh}"
# shellcheck disable=SC2016  # $0 and $1 expand in the inner shell, not here
exec ip netns exec "$RFA_MULTINODE_PREFIX-$host" unshare --uts \
  sh -c 'hostname "$1" && exec sh -c "$0"' "$*" "$host"
