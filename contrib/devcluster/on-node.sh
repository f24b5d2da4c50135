#!/usr/bin/env bash
# on-node.sh NODE COMMAND [ARGS...] - run a command as if on a devcluster
# node: in netns mode inside that node's network and UTS namespaces (its
# address and hostname), in multi mode on this host. Either way with
# SLURM_CONF and STRATA_NODE=NODE set. For example, an agent per node:
#   contrib/devcluster/on-node.sh n2 strata agent --node n2 --socket "$DIR/run/agent/n2.sock" ...
set -euo pipefail
DIR=${STRATA_DEVCLUSTER_DIR:-/tmp/strata-devcluster}
[ $# -ge 2 ] || { echo "usage: $0 NODE COMMAND [ARGS...]" >&2; exit 2; }
node=$1
shift
[ -f "$DIR/run/mode" ] || { echo "on-node: no devcluster in $DIR (run up.sh)" >&2; exit 1; }
export SLURM_CONF=$DIR/etc/slurm.conf STRATA_NODE=$node
if [ "$(cat "$DIR/run/mode")" = netns ]; then
	pid=$(cat "$DIR/run/slurmd.$node.pid" 2>/dev/null) || { echo "on-node: no slurmd for $node" >&2; exit 1; }
	exec nsenter --target "$pid" --net --uts -- "$@"
fi
exec "$@"
