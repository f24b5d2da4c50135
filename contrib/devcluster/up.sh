#!/usr/bin/env bash
# up.sh - start a real multi-node Slurm (Debian's slurm-wlm 22.05) on this
# one machine, with Strata's SPANK plugin loaded. See README.md.
#
# Everything lives under $STRATA_DEVCLUSTER_DIR (default /tmp/strata-devcluster):
# config, munge key and socket, state, spool, logs, PID files. Idempotent:
# it runs down.sh first. Afterwards:  source $STRATA_DEVCLUSTER_DIR/env.sh
#
# Environment (all optional):
#   STRATA_DEVCLUSTER_DIR      state directory, absolute, short (sockets live in it)
#   STRATA_DEVCLUSTER_NODES    compute nodes n1..nN, 1 to 16 (default 4)
#   STRATA_DEVCLUSTER_MODE     auto (default), netns or multi:
#                                netns: one slurmd per network + UTS namespace, on a
#                                       private bridge (needs CAP_NET_ADMIN, CAP_SYS_ADMIN)
#                                multi: every slurmd on 127.0.0.1 with its own port
#                                       (Debian builds slurmd with --enable-multiple-slurmd)
#                                auto:  netns when this machine allows it, else multi
#   STRATA_DEVCLUSTER_REST     1 (default): slurmrestd on $DIR/run/rest/slurmrestd.sock
#   STRATA_DEVCLUSTER_SPANK    spank_strata.so to load ("" for none; default: the repo's spank/)
#   STRATA_DEVCLUSTER_STRATA   strata binary the plugin runs (default: the repo's bin/strata)
#   STRATA_DEVCLUSTER_AGENT_SOCKET  agent socket pattern, %n = node (default $DIR/run/agent/%n.sock)
#   STRATA_DEVCLUSTER_SPANK_ARGS    more plugstack.conf arguments, e.g. "timeout=30 mount_prefix=/scratch"
#   STRATA_DEVCLUSTER_LICENSES      slurm.conf Licenses= (default strata_bw:100)
#   STRATA_DEVCLUSTER_CRED_EXPIRE   slurm.conf AuthInfo cred_expire= seconds (default: Slurm's 120),
#                                   also how long a requeued job waits before it may start again
#   STRATA_DEVCLUSTER_JWT           1: auth/jwt too, and a second slurmrestd
#                                   (rest_auth/jwt) on 127.0.0.1, its URL in
#                                   $DIR/run/rest/jwt-url (default 0)
#   STRATA_DEVCLUSTER_JOB_SUBMIT    job_submit.lua to install ("" for none;
#                                   default: contrib/slurm/job_submit.lua)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
DIR=${STRATA_DEVCLUSTER_DIR:-/tmp/strata-devcluster}
N=${STRATA_DEVCLUSTER_NODES:-4}
MODE=${STRATA_DEVCLUSTER_MODE:-auto}
REST=${STRATA_DEVCLUSTER_REST:-1}
SPANK=${STRATA_DEVCLUSTER_SPANK-$ROOT/spank/spank_strata.so}
STRATA=${STRATA_DEVCLUSTER_STRATA:-$ROOT/bin/strata}
AGENT_SOCKET=${STRATA_DEVCLUSTER_AGENT_SOCKET:-$DIR/run/agent/%n.sock}
SPANK_ARGS=${STRATA_DEVCLUSTER_SPANK_ARGS:-}
LICENSES=${STRATA_DEVCLUSTER_LICENSES:-strata_bw:100}
CRED_EXPIRE=${STRATA_DEVCLUSTER_CRED_EXPIRE:+,cred_expire=$STRATA_DEVCLUSTER_CRED_EXPIRE}
JOB_SUBMIT=${STRATA_DEVCLUSTER_JOB_SUBMIT-$ROOT/contrib/slurm/job_submit.lua}
JWT=${STRATA_DEVCLUSTER_JWT:-0}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export SLURM_CONF=$DIR/etc/slurm.conf

T0=$(date +%s%N)
say() { printf 'devcluster [%5.2fs] %s\n' "$(awk -v a="$T0" -v b="$(date +%s%N)" 'BEGIN{print (b-a)/1e9}')" "$*"; }
die() { echo "devcluster: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (slurmd runs jobs as their users): sudo $0"
case $DIR in /*) ;; *) die "STRATA_DEVCLUSTER_DIR must be absolute: $DIR";; esac
[ ${#DIR} -le 64 ] || die "STRATA_DEVCLUSTER_DIR is ${#DIR} characters; keep it under 65 (unix socket paths live in it)"
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] && [ "$N" -le 16 ] || die "STRATA_DEVCLUSTER_NODES must be 1 to 16"
case $MODE in auto|netns|multi) ;; *) die "STRATA_DEVCLUSTER_MODE must be auto, netns or multi";; esac
for b in munged slurmctld slurmd sbatch scontrol sinfo nsenter; do
	command -v $b >/dev/null || die "$b not found: apt-get install slurm-wlm slurmrestd munge util-linux (contrib/test-deps.sh)"
done
if [ -n "$SPANK" ] && [ ! -f "$SPANK" ]; then
	die "SPANK plugin $SPANK not found: run 'make spank' (or set STRATA_DEVCLUSTER_SPANK= for none)"
fi
if [ -n "$SPANK" ] && [ ! -x "$STRATA" ]; then
	echo "devcluster: warning: $STRATA not found; --storage-tier will be refused until it exists (make build)" >&2
fi

"$HERE/down.sh" >/dev/null 2>&1 || true

# Names of this cluster's network objects, from its directory, so that
# several devclusters (a user's, tests') never collide.
ID=$(printf %s "$DIR" | sha256sum | cut -c1-6)
NSP=strata-$ID BR=stb$ID

mkdir -p "$DIR"/{etc,munge,log,run/agent,spool,state,out}
chmod 755 "$DIR" "$DIR/munge" "$DIR/etc" "$DIR/run"   # jobs run as their users; munge needs a+x on its socket dir
chmod 1777 "$DIR/out"                                # job output of any user
rm -rf "${DIR:?}"/state/* "${DIR:?}"/spool/* "$DIR"/log/*.log
echo "$ID" > "$DIR/run/id"

# ---------- munge: its own key and socket, never /run/munge ----------
[ -s "$DIR/munge/munge.key" ] || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$DIR/munge/munge.key"
munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
	--log-file="$DIR/log/munged.log" --pid-file="$DIR/run/munged.pid" --seed-file="$DIR/munge/munged.seed"
say "munged up"

# ---------- network: netns when allowed, else 127.0.0.1 ports ----------
if [ "$MODE" != multi ]; then
	exec 9>/tmp/.strata-devcluster-net.lock
	flock 9
	# a /24 of 10.251.0.0/16 that no interface here uses yet
	SUB=$((16#$ID % 250))
	for _ in $(seq 1 250); do
		ip -4 -o addr show | grep -q " 10\.251\.$SUB\." || break
		SUB=$(((SUB + 1) % 250))
	done
	NET=10.251.$SUB
	if ip link add "$BR" type bridge 2>/dev/null; then
		MODE=netns
	elif [ "$MODE" = netns ]; then
		die "cannot create a bridge (need CAP_NET_ADMIN); try STRATA_DEVCLUSTER_MODE=multi"
	else
		MODE=multi
	fi
fi
if [ "$MODE" = netns ]; then
	ip addr add "$NET.254/24" dev "$BR"   # the host's side: client commands reach slurmctld here
	ip link set "$BR" up
	addns() {  # addns NAME VETH ADDR
		ip netns add "$NSP-$1"
		ip link add "$2" type veth peer name eth0 netns "$NSP-$1"
		ip link set "$2" master "$BR" up
		ip -n "$NSP-$1" addr add "$3/24" dev eth0
		ip -n "$NSP-$1" link set eth0 up
		ip -n "$NSP-$1" link set lo up
	}
	addns ctl "stv${ID}c" "$NET.1"
	for i in $(seq 1 "$N"); do addns "n$i" "stv$ID$i" "$NET.$((10 + i))"; done
	exec 9>&-
	CTLD_ADDR=$NET.1 CTLD_PORT=16817
	NODES="NodeName=DEFAULT CPUs=2 RealMemory=1000 State=UNKNOWN Port=16818"
	for i in $(seq 1 "$N"); do NODES+=$'\n'"NodeName=n$i NodeAddr=$NET.$((10 + i))"; done
	COMM=""
	say "netns mode: bridge $BR $NET.0/24, namespaces $NSP-ctl $NSP-n1..n$N"
else
	exec 9>&-
	BASE=$((17100 + (16#$ID % 100) * 20))
	while in_use $(seq "$BASE" $((BASE + N))); do BASE=$((BASE + 20)); done
	CTLD_ADDR=127.0.0.1 CTLD_PORT=$BASE
	NODES="NodeName=DEFAULT CPUs=2 RealMemory=1000 State=UNKNOWN"
	for i in $(seq 1 "$N"); do NODES+=$'\n'"NodeName=n$i NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$((BASE + i))"; done
	COMM="CommunicationParameters=NoCtldInAddrAny,NoInAddrAny"   # bind 127.0.0.1, never 0.0.0.0
	say "multi mode: slurmctld 127.0.0.1:$BASE, slurmd ports $((BASE + 1))-$((BASE + N))"
fi
echo "$MODE" > "$DIR/run/mode"

# ---------- plugstack.conf, job_submit.lua, slurm.conf ----------
: > "$DIR/etc/plugstack.conf"
if [ -n "$SPANK" ]; then
	mkdir -p "$(dirname "$AGENT_SOCKET")"
	# default_mount: where strata-up.sh's agents mount tiers (--mount-prefix $DIR/mnt)
	echo "required $SPANK strata=$STRATA socket=$AGENT_SOCKET default_mount=$DIR/mnt/%j $SPANK_ARGS" > "$DIR/etc/plugstack.conf"
fi
SUBMIT=""
JWTCONF=""
if [ "$JWT" = 1 ]; then   # auth/jwt beside munge: scontrol token, slurmrestd rest_auth/jwt
	[ -s "$DIR/etc/jwt_hs256.key" ] || dd if=/dev/urandom of="$DIR/etc/jwt_hs256.key" bs=32 count=1 2>/dev/null
	chmod 600 "$DIR/etc/jwt_hs256.key"
	JWTCONF="AuthAltTypes=auth/jwt"$'\n'"AuthAltParameters=jwt_key=$DIR/etc/jwt_hs256.key"
fi
if [ -n "$JOB_SUBMIT" ]; then
	cp "$JOB_SUBMIT" "$DIR/etc/job_submit.lua"
	SUBMIT="JobSubmitPlugins=lua"
fi
cat > "$SLURM_CONF" <<CONF
# Written by contrib/devcluster/up.sh ($MODE mode). Regenerated on every up.sh.
ClusterName=strata
SlurmctldHost=$(hostname)($CTLD_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket$CRED_EXPIRE
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd.%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
PlugStackConfig=$DIR/etc/plugstack.conf
# The prolog (and the SPANK job prolog) runs on every allocated node at allocation.
PrologFlags=Alloc
# A node drained by a failed prolog comes back when its slurmd re-registers healthy.
ReturnToService=2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
Licenses=$LICENSES
$SUBMIT
$JWTCONF
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
$COMM
$NODES
PartitionName=debug Nodes=n[1-$N] Default=YES MaxTime=INFINITE State=UP
CONF
chmod 644 "$SLURM_CONF" "$DIR/etc/plugstack.conf"
say "slurm.conf written"

# ---------- slurmctld, then the slurmd of every node ----------
if [ "$MODE" = netns ]; then
	nsenter --net="/run/netns/$NSP-ctl" slurmctld -i
else
	slurmctld -i
fi
for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.1; done
scontrol ping 2>/dev/null | grep -q 'is UP' || die "slurmctld is not up; see $DIR/log/slurmctld.log"
say "slurmctld up"
for i in $(seq 1 "$N"); do
	mkdir -p "$DIR/spool/slurmd.n$i"
	if [ "$MODE" = netns ]; then
		# nsenter, not 'ip netns exec': that remounts /sys and slurmd then
		# finds no /sys/fs/cgroup. The UTS namespace gives each node its hostname.
		nsenter --net="/run/netns/$NSP-n$i" unshare --uts sh -c "hostname n$i && exec slurmd -N n$i"
	else
		slurmd -N "n$i"
	fi
done
for _ in $(seq 1 300); do
	[ "$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" = "$N" ] && break
	sleep 0.1
done
[ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" = "$N" ] || { sinfo -N >&2; die "not all $N nodes are idle; see $DIR/log/slurmd.*.log"; }
say "$N nodes idle"

# ---------- slurmrestd: local auth on a unix socket ----------
if [ "$REST" = 1 ] && command -v slurmrestd >/dev/null; then
	install -d -o nobody -g nogroup -m 755 "$DIR/run/rest"   # it binds after dropping to nobody
	# The dbv0.0.3x plugins need slurmdbd; load only the openapi ones.
	setsid slurmrestd -u nobody -s openapi/v0.0.36,openapi/v0.0.37,openapi/v0.0.38 -a rest_auth/local \
		"unix:$DIR/run/rest/slurmrestd.sock" </dev/null >"$DIR/log/slurmrestd.log" 2>&1 &
	echo $! > "$DIR/run/slurmrestd.pid"
	for _ in $(seq 1 50); do [ -S "$DIR/run/rest/slurmrestd.sock" ] && break; sleep 0.1; done
	[ -S "$DIR/run/rest/slurmrestd.sock" ] || die "slurmrestd did not start; see $DIR/log/slurmrestd.log"
	say "slurmrestd up"
	if [ "$JWT" = 1 ]; then
		# A second slurmrestd for JWT on 127.0.0.1: without SLURM_JWT=daemon it
		# rejects valid tokens, and with it it cannot serve rest_auth/local.
		JWT_PORT=$((19200 + (16#$ID % 100) * 5))
		while in_use "$JWT_PORT"; do JWT_PORT=$((JWT_PORT + 1)); done
		SLURM_JWT=daemon setsid slurmrestd -u nobody -s openapi/v0.0.36,openapi/v0.0.37,openapi/v0.0.38 -a rest_auth/jwt \
			"127.0.0.1:$JWT_PORT" </dev/null >"$DIR/log/slurmrestd-jwt.log" 2>&1 &
		echo $! > "$DIR/run/slurmrestd-jwt.pid"
		for _ in $(seq 1 50); do in_use "$JWT_PORT" && break; sleep 0.1; done
		in_use "$JWT_PORT" || die "slurmrestd (jwt) did not start; see $DIR/log/slurmrestd-jwt.log"
		echo "http://127.0.0.1:$JWT_PORT" > "$DIR/run/rest/jwt-url"
		say "slurmrestd (jwt) up on 127.0.0.1:$JWT_PORT"
	fi
fi

cat > "$DIR/env.sh" <<ENV
# source me: the devcluster in $DIR ($MODE mode, $N nodes)
export STRATA_DEVCLUSTER_DIR=$DIR
export SLURM_CONF=$SLURM_CONF
export SLURMRESTD_SOCKET=$DIR/run/rest/slurmrestd.sock
$( [ -s "$DIR/run/rest/jwt-url" ] && echo "export SLURMRESTD_URL=$(cat "$DIR/run/rest/jwt-url")   # JWT: eval \$(scontrol token username=root)" )
export STRATA_AGENT_SOCKET='$AGENT_SOCKET'
ENV
say "ready: source $DIR/env.sh"
if [ "${STRATA_DEVCLUSTER_AGENTS:-0}" = 1 ]; then "$HERE/strata-up.sh"; fi   # Strata: global namespace and an agent per node
