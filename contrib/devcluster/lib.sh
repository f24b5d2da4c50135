# lib.sh - shell functions the devcluster scripts share; source it.

alive() {  # alive PID: exists and is not a zombie (kill -0 succeeds on zombies)
	local line s
	{ read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1
	s=${line##*) }; s=${s%% *}
	[ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}

stop_pids() {  # stop_pids SECONDS PID...: TERM, wait up to SECONDS, then KILL
	local t=$1 p left
	shift
	[ $# -gt 0 ] || return 0
	for p in "$@"; do alive "$p" && kill -TERM "$p" 2>/dev/null; done
	for _ in $(seq 1 $((t * 20))); do
		left=0
		for p in "$@"; do alive "$p" && left=1; done
		[ $left = 0 ] && return 0
		sleep 0.05
	done
	for p in "$@"; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
	return 0
}

in_use() {  # in_use PORT...: true if any is a listening TCP port here
	local hex p
	for p in "$@"; do
		hex=$(printf ':%04X ' "$p")
		awk 'NR > 1 && $4 == "0A" {print $2" "}' /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q "$hex" && return 0
	done
	return 1
}
