#!/usr/bin/env bash
# Installs with apt the system packages `make test` needs, only those that
# are missing, so that it is a no-op on a machine that has them: Go itself
# (not from apt: Debian's is too old, see README.md), a C compiler for the
# race detector and the C plugins, FUSE and fio for the mount tests,
# OpenMPI for the MPI-IO tests, Slurm with munge, slurmrestd and auth/jwt for the
# job-tier tests, qemu with a Debian 6.1 kernel and a static busybox for
# the NFS tests, which boot the real Linux NFS client (internal/nfsguest),
# and lintian and dpkg-repack for the Debian package's test
# (internal/debpkg).
set -euo pipefail

PACKAGES=(
	gcc libc6-dev git make
	fuse3 fio attr
	openmpi-bin libopenmpi-dev
	slurm-wlm slurmrestd slurm-wlm-jwt-plugin libslurm-dev munge
	qemu-system-x86 linux-image-amd64 busybox-static xz-utils
	lintian dpkg-repack
)

if ! command -v go >/dev/null 2>&1; then
	echo "test-deps: go is not installed; install Go 1.26 or later from https://go.dev/dl (see README.md)" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if ((${#missing[@]} == 0)); then
	exit 0
fi

echo "test-deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
