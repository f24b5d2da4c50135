#!/usr/bin/env bash
# down.sh - stop the devcluster that up.sh started in $STRATA_DEVCLUSTER_DIR
# (default /tmp/strata-devcluster). Idempotent. It stops only what that
# cluster started, found by PID, never by name (other clusters and other
# users' Slurm may share this machine):
#   1. jobs (scancel, while slurmctld is up)
#   2. slurmstepd processes whose environment holds this cluster's SLURM_CONF,
#      and their descendants (job scripts, srun, tasks)
#   3. the daemons in $DIR/run/*.pid, after checking /proc/PID/cmdline
#   4. whatever still runs in this cluster's network namespaces, then the
#      namespaces and the bridge
# Logs and the munge key stay in $DIR; delete the directory to forget them.
DIR=${STRATA_DEVCLUSTER_DIR:-/tmp/strata-devcluster}
export SLURM_CONF=$DIR/etc/slurm.conf
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
[ -d "$DIR" ] || exit 0
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$(dirname "$0")/strata-down.sh" ] && "$(dirname "$0")/strata-down.sh" >/dev/null 2>&1   # what strata-up.sh started

descendants() {  # every descendant of the given PIDs, from one ps snapshot
	ps -eo pid=,ppid= | awk -v roots="$*" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
		{ pp[$1] = $2 }
		END { do { ch = 0; for (p in pp) if (!(p in keep) && (pp[p] in keep)) { keep[p] = 1; ch = 1; print p } } while (ch) }'
}

pidfile_pid() {  # pidfile_pid FILE PROGRAM: the PID in FILE if it still runs PROGRAM
	local p
	[ -f "$1" ] || return 0
	p=$(cat "$1" 2>/dev/null)
	[[ $p =~ ^[0-9]+$ ]] || return 0
	if alive "$p" && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$2"; then echo "$p"; fi
}

# 1. cancel jobs so that their steps end cleanly
if [ -n "$(pidfile_pid "$DIR/run/slurmctld.pid" slurmctld)" ] && [ -f "$SLURM_CONF" ]; then
	jobs=$(timeout 3 squeue -h -o %A 2>/dev/null)
	if [ -n "$jobs" ]; then
		timeout 3 scancel $jobs 2>/dev/null
		for _ in $(seq 1 30); do
			[ -z "$(timeout 2 squeue -h -t R,CG -o %A 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
fi

# 2. this cluster's slurmstepds and everything below them (with
#    proctrack/linuxproc, tasks outlive a killed slurmstepd)
stepds=""
for d in /proc/[0-9]*; do
	c=""
	{ read -r c < "$d/comm"; } 2>/dev/null
	[ "$c" = slurmstepd ] || continue
	{ tr '\0' '\n' < "$d/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF" && stepds="$stepds ${d#/proc/}"
done
if [ -n "$stepds" ]; then
	stop_pids 2 $(descendants $stepds)
	stop_pids 3 $stepds
fi

# 3. slurmrestd, the slurmds, slurmctld
stop_pids 3 $(pidfile_pid "$DIR/run/slurmrestd.pid" slurmrestd) $(pidfile_pid "$DIR/run/slurmrestd-jwt.pid" slurmrestd)
sd=""
for f in "$DIR"/run/slurmd.*.pid; do [ -e "$f" ] && sd="$sd $(pidfile_pid "$f" slurmd)"; done
stop_pids 5 $sd
stop_pids 5 $(pidfile_pid "$DIR/run/slurmctld.pid" slurmctld)

# 4. anything left in this cluster's namespaces
ID=$(cat "$DIR/run/id" 2>/dev/null || printf %s "$DIR" | sha256sum | cut -c1-6)
nss=$(ip netns list 2>/dev/null | awk -v p="strata-$ID-" 'index($1, p) == 1 {print $1}')
for ns in $nss; do stop_pids 3 $(ip netns pids "$ns" 2>/dev/null); done

# 5. munged last: the others need it while they stop
stop_pids 3 $(pidfile_pid "$DIR/run/munged.pid" munged)

for ns in $nss; do ip netns del "$ns" 2>/dev/null; done
ip link show "stb$ID" >/dev/null 2>&1 && ip link del "stb$ID" 2>/dev/null
rm -f "$DIR"/run/*.pid "$DIR"/run/rest/*.sock "$DIR"/munge/munge.socket* 2>/dev/null
exit 0
