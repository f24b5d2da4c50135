#!/usr/bin/env bash
# `make run` and `make demo`: start `strata dev` in the background on the
# default loopback ports (MDS 127.0.0.1:7000, admin 127.0.0.1:7080) with its
# data in a fresh temporary directory, wait until it is up, run
# contrib/demo.sh against it, then
#   (no argument)  keep Strata up until Ctrl-C (or SIGTERM), and stop it;
#   --demo         stop it and exit with the demo's status.
# The temporary directory is removed when Strata stops.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${STRATA_BIN:-$PWD/bin/strata}
mode=${1:-}
data=$(mktemp -d "${TMPDIR:-/tmp}/strata-run.XXXXXX")
log=$data/dev.log
dev=

stop() {
	if [ -n "$dev" ] && kill -0 "$dev" 2>/dev/null; then
		kill -TERM "$dev" 2>/dev/null || true
		wait "$dev" 2>/dev/null || true
	fi
	dev=
	rm -rf "$data"
}
trap 'echo; echo "run: stopping Strata"; stop; exit 130' INT TERM
trap stop EXIT

# Refuse to demo against somebody else's Strata on the default port.
if "$BIN" df >/dev/null 2>&1; then
	echo "run: an MDS already answers on 127.0.0.1:7000; stop it first (is 'strata dev' running?)" >&2
	exit 1
fi

"$BIN" dev --dir "$data/dev" >"$log" 2>&1 &
# Client commands run as root on this node: the cluster secret proves it
# (docs/security.md).
export STRATA_SECRET_FILE=$data/dev/secret
dev=$!

# strata dev prints "try: ..." once the MDS leads and every data server
# has registered.
for _ in $(seq 1 600); do
	if grep -q '^try: ' "$log"; then
		break
	fi
	if ! kill -0 "$dev" 2>/dev/null; then
		echo "run: strata dev failed:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.1
done
if ! grep -q '^try: ' "$log"; then
	echo "run: strata dev did not come up in 60s:" >&2
	cat "$log" >&2
	exit 1
fi
cat "$log"
"$BIN" df >/dev/null

status=0
STRATA=$BIN contrib/demo.sh || status=$?
if [ "$status" -ne 0 ]; then
	echo "run: the demo failed (exit $status)" >&2
	exit "$status"
fi

if [ "$mode" = "--demo" ]; then
	exit 0
fi

cat <<MSG

Strata stays up: MDS 127.0.0.1:7000, admin API http://127.0.0.1:7080/v1/cluster,
data in $data (removed when it stops). In another terminal:

  export PATH=$PWD/bin:\$PATH
  strata ls -l /demo
  curl -s 127.0.0.1:7080/v1/health

Press Ctrl-C here (or kill $$) to stop it.
MSG
wait "$dev" || true
dev=
