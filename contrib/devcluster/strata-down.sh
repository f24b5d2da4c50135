#!/usr/bin/env bash
# strata-down.sh - stop what strata-up.sh started in the devcluster
# $STRATA_DEVCLUSTER_DIR, by PID, never by name: the agents, the tier
# daemons they left (processes whose command line names this cluster's
# agent state directory), their mounts, and the global namespace. Run it
# before down.sh. Idempotent.
DIR=${STRATA_DEVCLUSTER_DIR:-/tmp/strata-devcluster}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
S=$DIR/strata
[ -d "$S" ] || exit 0
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

pidfile_pid() {  # pidfile_pid FILE WORD: the PID in FILE if its command line holds WORD
	local p
	[ -f "$1" ] || return 0
	p=$(cat "$1" 2>/dev/null)
	[[ $p =~ ^[0-9]+$ ]] || return 0
	if alive "$p" && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$2"; then echo "$p"; fi
}
with_cmdline() {  # PIDs whose command line holds WORD
	local d
	for d in /proc/[0-9]*; do
		{ tr '\0' ' ' < "$d/cmdline"; } 2>/dev/null | grep -qF -- "$1" && echo "${d#/proc/}"
	done
}

# 1. the agents (tiers keep running without them)
agents=""
for f in "$DIR"/run/agent.*.pid; do [ -e "$f" ] && agents+=" $(pidfile_pid "$f" "$S/agent/")"; done
stop_pids 3 $agents

# 2. tier mounts, in each node's mount namespace (the slurmd's), then the
#    tier daemons (their command lines name $S/agent/NODE/jobs/JOB/)
for f in "$DIR"/run/slurmd.*.pid; do
	[ -e "$f" ] || continue
	p=$(cat "$f" 2>/dev/null)
	alive "$p" 2>/dev/null || continue
	for m in $(nsenter --mount="/proc/$p/ns/mnt" awk '$5 ~ "^'"$DIR"'/mnt/" {print $5}' /proc/self/mountinfo 2>/dev/null); do
		nsenter --mount="/proc/$p/ns/mnt" umount -l "$m" 2>/dev/null
	done
done
stop_pids 3 $(with_cmdline "$S/agent/" | grep -vx "$$")

# 3. the global namespace
stop_pids 3 $(pidfile_pid "$DIR/run/strata-ds1.pid" "$S/ds1") $(pidfile_pid "$DIR/run/strata-ds2.pid" "$S/ds2")
stop_pids 3 $(pidfile_pid "$DIR/run/strata-mds.pid" "$S/mds")
rm -f "$DIR"/run/agent.*.pid "$DIR"/run/strata-*.pid
rm -rf "$S"
exit 0
