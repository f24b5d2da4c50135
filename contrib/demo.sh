#!/usr/bin/env bash
# A short tour of the strata CLI against a running Strata (the one
# STRATA_MDS names, else 127.0.0.1:7000 as `strata dev` listens): write
# files including a 64 MiB random one, set and show layouts, list, read
# back and compare, copy out, rename, remove, show the capacity. Exits
# non-zero at the first thing that does not work. `make run` runs it.
set -euo pipefail

S=${STRATA:-strata}
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

bold='' plain=''
if [ -t 1 ]; then
	bold=$'\033[1m' plain=$'\033[0m'
fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }
run() {
	step "strata $*"
	"$S" "$@"
}

run mkdir -p /demo
run setstripe --width 4 --unit 1M /demo
run getstripe /demo

echo "hello from strata" >"$work/hello.txt"
run cp "$work/hello.txt" /demo/hello.txt
run cat /demo/hello.txt

step "head -c 64M /dev/urandom > big.bin"
head -c 64M /dev/urandom >"$work/big.bin"
run cp "$work/big.bin" /demo/big.bin
run getstripe /demo/big.bin
run ls -l /demo

step "strata cat /demo/big.bin | cmp - big.bin"
"$S" cat /demo/big.bin | cmp - "$work/big.bin"
echo "identical"

run cp /demo/big.bin "$work/back.bin"
step "cmp back.bin big.bin"
cmp "$work/back.bin" "$work/big.bin"
echo "identical"

run mv /demo/hello.txt /demo/greeting.txt
run stat /demo/greeting.txt
run rm /demo/big.bin
run ls -l /demo
run df

printf '\ndemo: ok\n'
