#!/usr/bin/env bash
# strata-up.sh - add Strata to a devcluster that up.sh started: a global
# namespace (one `strata mds`, two `strata ds`) and a `strata agent` on
# every node, so that --storage-tier builds real job tiers. Run it after
# up.sh, as root:
#   contrib/devcluster/up.sh && contrib/devcluster/strata-up.sh
#   source $STRATA_DEVCLUSTER_DIR/strata/env.sh     # STRATA_MDS for the CLI
#   sbatch -N3 --storage-tier=capacity=1G,drain=ckpt/*:strata:/run1 job.sh
# contrib/devcluster/strata-down.sh stops it all (before down.sh).
#
# Every node gets a mount namespace of its own, so that each node mounts
# its tier at the same path (as on a real cluster) without the nodes
# seeing each other's mounts: a slurmd that up.sh started in the host's
# mount namespace is restarted under `unshare --mount --propagation slave`
# (its jobs see that node's mounts), and the node's agent runs in the same
# namespace (nsenter --mount=/proc/SLURMD/ns/mnt), in netns mode also in
# the node's network namespace, so that its tier daemons listen on the
# node's own address.
#
#   strata-up.sh             the global namespace and every node's agent
#   strata-up.sh agent NODE  (re)start one node's agent (after a kill)
#
# Environment: STRATA_DEVCLUSTER_DIR (default /tmp/strata-devcluster);
# STRATA_DEVCLUSTER_STRATA, the strata binary (default: the one the SPANK
# plugin runs, from plugstack.conf); STRATA_AGENT_ARGS, more agent flags
# (e.g. "--drain-settle 500ms --drain-rate 100M").
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
DIR=${STRATA_DEVCLUSTER_DIR:-/tmp/strata-devcluster}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export SLURM_CONF=$DIR/etc/slurm.conf
die() { echo "strata-up: $*" >&2; exit 1; }
T0=$(date +%s%N)
say() { printf 'strata-up [%5.2fs] %s\n' "$(awk -v a="$T0" -v b="$(date +%s%N)" 'BEGIN{print (b-a)/1e9}')" "$*"; }

[ "$(id -u)" = 0 ] || die "must run as root"
[ -f "$SLURM_CONF" ] && [ -f "$DIR/run/mode" ] || die "no devcluster in $DIR: run up.sh first"
MODE=$(cat "$DIR/run/mode")
ID=$(cat "$DIR/run/id")
STRATA=${STRATA_DEVCLUSTER_STRATA:-$(sed -n 's/.* strata=\([^ ]*\).*/\1/p' "$DIR/etc/plugstack.conf")}
[ -x "$STRATA" ] || die "strata binary '$STRATA' not found (make build, or set STRATA_DEVCLUSTER_STRATA)"
SOCKET=$(sed -n 's/.* socket=\([^ ]*\).*/\1/p' "$DIR/etc/plugstack.conf")
[ -n "$SOCKET" ] || die "plugstack.conf has no socket= (was up.sh run with the SPANK plugin?)"
NODES=$(sinfo -h -N -o %N | sort -u -V)
S=$DIR/strata
mkdir -p "$S" "$DIR/log" "$DIR/run" "$DIR/mnt"
chmod 755 "$DIR/mnt"

node_addr() {  # node_addr NODE: the node's NodeAddr
	scontrol show node -o "$1" | tr ' ' '\n' | sed -n 's/^NodeAddr=//p'
}
slurmd_pid() { cat "$DIR/run/slurmd.$1.pid" 2>/dev/null; }

# Where the global namespace listens: the bridge's host side in netns mode
# (the nodes reach it there), else loopback.
if [ "$MODE" = netns ]; then
	HOST=$(ip -4 -o addr show dev "stb$ID" | awk '{split($4, a, "/"); print a[1]; exit}')
else
	HOST=127.0.0.1
fi
[ -n "$HOST" ] || die "cannot find the host's address on bridge stb$ID"

start_agent() {  # start_agent NODE: (re)start a node's agent in its namespaces
	local n=$1 pid addr ns=() addrs="" m
	pid=$(slurmd_pid "$n")
	[ -n "$pid" ] && alive "$pid" || die "slurmd of $n is not running"
	addr=$(node_addr "$n")
	for m in $NODES; do addrs+="$m=$(node_addr "$m"),"; done
	[ "$MODE" = netns ] && ns+=(--net="/run/netns/strata-$ID-$n")
	ns+=(--mount="/proc/$pid/ns/mnt")
	mkdir -p "$S/agent/$n" "$S/nvme/$n"
	# shellcheck disable=SC2086
	setsid nsenter "${ns[@]}" "$STRATA" agent --node "$n" --socket "${SOCKET//%n/$n}" \
		--state-dir "$S/agent/$n" --nvme-dir "$S/nvme/$n" --hints-dir "$S/hints/$n" --global-mds "$(cat "$S/mds.addr")" \
		--secret-file "$S/mds/secret" --munge-socket "$DIR/munge/munge.socket" --addr "$addr" --node-addrs "${addrs%,}" \
		--mount-prefix "$DIR/mnt" --port-base "$(cat "$S/port.base")" --port-slots 100 \
		--default-capacity 4G ${STRATA_AGENT_ARGS:-} \
		</dev/null >>"$DIR/log/agent.$n.log" 2>&1 &
	echo $! > "$DIR/run/agent.$n.pid"
	for _ in $(seq 1 100); do [ -S "${SOCKET//%n/$n}" ] && return 0; sleep 0.05; done
	die "the agent of $n did not start; see $DIR/log/agent.$n.log"
}

if [ "${1:-}" = agent ]; then
	[ -n "${2:-}" ] || die "usage: strata-up.sh agent NODE"
	# A restarted agent gets the flags the others got (agent.args), unless
	# STRATA_AGENT_ARGS is set: nodes that disagree on port_slots would not
	# find their tiers' MDS.
	[ -n "${STRATA_AGENT_ARGS+set}" ] || STRATA_AGENT_ARGS=$(cat "$S/agent.args" 2>/dev/null || true)
	start_agent "$2"
	exit 0
fi
"$HERE/strata-down.sh" >/dev/null 2>&1 || true
mkdir -p "$S" "$DIR/mnt"
# This script's client commands run as root on a trusted node: the cluster
# secret proves it. Users' commands prove their uid with this cluster's
# munged (docs/security.md).
export STRATA_SECRET_FILE=$S/mds/secret STRATA_MUNGE_SOCKET=$DIR/munge/munge.socket

# ---------- the global namespace: one MDS, two data servers ----------
BASE=$((19200 + (16#$ID % 100) * 10))
while in_use $(seq "$BASE" $((BASE + 5))); do BASE=$((BASE + 10)); done
mkdir -p "$S/mds" "$S/ds1" "$S/ds2"
echo "$HOST:$BASE" > "$S/mds.addr"
setsid "$STRATA" mds --listen "$HOST:$BASE" --raft-addr "$HOST:$((BASE + 1))" --admin-listen "$HOST:$((BASE + 2))" \
	--dir "$S/mds" --munge-socket "$DIR/munge/munge.socket" --raft-timeout 100ms --heartbeat-interval 250ms --heartbeat-timeout 2s --log-level warn \
	</dev/null >>"$DIR/log/strata-mds.log" 2>&1 &
echo $! > "$DIR/run/strata-mds.pid"
for _ in $(seq 1 100); do [ -s "$S/mds/secret" ] && break; sleep 0.05; done
[ -s "$S/mds/secret" ] || die "strata mds did not start; see $DIR/log/strata-mds.log"
for i in 1 2; do
	setsid "$STRATA" ds --id "g$i" --listen "$HOST:$((BASE + 2 + i))" --dir "$S/ds$i" --mds "$HOST:$BASE" \
		--secret-file "$S/mds/secret" --heartbeat-interval 250ms --log-level warn \
		</dev/null >>"$DIR/log/strata-ds$i.log" 2>&1 &
	echo $! > "$DIR/run/strata-ds$i.pid"
done
for _ in $(seq 1 200); do
	[ "$("$STRATA" df --mds "$HOST:$BASE" 2>/dev/null | grep -c ' up')" -ge 2 ] && break
	sleep 0.05
done
[ "$("$STRATA" df --mds "$HOST:$BASE" 2>/dev/null | grep -c ' up')" -ge 2 ] || die "the global namespace is not up; see $DIR/log/strata-*.log"
say "global namespace up: mds $HOST:$BASE, admin http://$HOST:$((BASE + 2))"

# Tier MDS ports: per cluster, so that two devclusters in multi mode
# (every node on 127.0.0.1) do not collide.
echo $((30000 + (16#$ID % 100) * 200)) > "$S/port.base"

# ---------- a mount namespace per node, and its agent ----------
restarted=""
for n in $NODES; do
	pid=$(slurmd_pid "$n")
	[ -n "$pid" ] && alive "$pid" || die "slurmd of $n is not running"
	[ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && continue
	kill -TERM "$pid"
	for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.05; done
	if [ "$MODE" = netns ]; then
		nsenter --net="/run/netns/strata-$ID-$n" unshare --uts --mount --propagation slave \
			sh -c "hostname $n && exec slurmd -N $n"
	else
		unshare --mount --propagation slave slurmd -N "$n"
	fi
	restarted+=" $n"
done
if [ -n "$restarted" ]; then
	want=$(echo "$NODES" | wc -w)
	for _ in $(seq 1 200); do
		[ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" = "$want" ] && break
		sleep 0.05
	done
	say "slurmd restarted in mount namespaces of their own:$restarted"
fi
printf '%s\n' "${STRATA_AGENT_ARGS:-}" > "$S/agent.args"
for n in $NODES; do start_agent "$n"; done
say "agents up on $(echo $NODES | tr '\n' ' ')"

cat > "$S/env.sh" <<ENV
# source me: Strata on the devcluster in $DIR
export STRATA_MDS=$HOST:$BASE
export STRATA_ADMIN=http://$HOST:$((BASE + 2))
export STRATA_MUNGE_SOCKET=$DIR/munge/munge.socket
# root only: client commands as root on a trusted node (others use MUNGE)
[ "\$(id -u)" = 0 ] && export STRATA_SECRET_FILE=$S/mds/secret
ENV
say "ready: source $S/env.sh"
