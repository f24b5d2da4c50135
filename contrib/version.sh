#!/bin/sh
# Prints Strata's version from git, as a Debian version string: a tag
# vX.Y.Z gives X.Y.Z; N commits after it, X.Y.Z+N.gHASH; no tag yet,
# 0.0.0+gitYYYYMMDDhhmmss.HASH (the commit's date, so that later builds
# sort higher). Uncommitted changes add ".dirty". With --commit it prints
# the full commit hash instead. Outside a git tree: 0.0.0+unknown.
set -eu
cd "$(dirname "$0")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	[ "${1:-}" = --commit ] && echo unknown || echo 0.0.0+unknown
	exit 0
fi
if [ "${1:-}" = --commit ]; then
	git rev-parse HEAD
	exit 0
fi
dirty=""
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	dirty=".dirty"
fi
if d=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
	d=${d#v}
	case "$d" in
	*-*-g*) base=${d%-*-g*}; rest=${d#"$base"-}; n=${rest%%-*}; h=${rest#*-}; echo "$base+$n.$h$dirty" ;;
	*) if [ -n "$dirty" ]; then echo "$d+0$dirty"; else echo "$d"; fi ;;
	esac
else
	echo "0.0.0+git$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd).$(git rev-parse --short=7 HEAD)$dirty"
fi
