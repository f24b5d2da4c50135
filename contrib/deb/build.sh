#!/bin/sh
# Builds strata_VERSION_ARCH.deb from files `make deb` has built, with
# dpkg-deb (no debhelper): the layout is docs/install.md's.
#   contrib/deb/build.sh VERSION STRATA_BINARY SPANK_SO MPIIO_SO OUTDIR
set -eu

version=$1 strata=$2 spank=$3 shim=$4 out=$5
top=$(cd "$(dirname "$0")/../.." && pwd)
arch=$(dpkg --print-architecture)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/strata"
doc="$root/usr/share/doc/strata"
umask 022

# The binary, and the mount(8) helper for type fuse.strata.
install -D -m 755 "$strata" "$root/usr/bin/strata"
mkdir -p "$root/usr/sbin"
ln -s ../bin/strata "$root/usr/sbin/mount.fuse.strata"

# The SPANK plugin where Debian's Slurm loads plugins, and the MPI-IO shim
# (an LD_PRELOAD library, in a private directory).
install -D -m 644 "$spank" "$root/usr/lib/$triplet/slurm-wlm/spank_strata.so"
install -D -m 644 "$shim" "$root/usr/lib/$triplet/strata/libstrata_mpiio.so"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$root/usr/lib/$triplet/slurm-wlm/spank_strata.so" "$root/usr/lib/$triplet/strata/libstrata_mpiio.so"

# systemd units.
for u in "$top"/contrib/systemd/*.service; do
	install -D -m 644 "$u" "$root/lib/systemd/system/$(basename "$u")"
done

# Configuration (conffiles): the daemons' examples, and a plugstack.conf.d
# snippet with the plugin commented out (enabling it on a node without a
# running agent would fail every job's prolog and drain the node).
for f in mds.toml ds.toml.example agent.conf mount.env; do
	install -D -m 644 "$top/contrib/config/$f" "$root/etc/strata/$f"
done
mkdir -p "$root/etc/slurm/plugstack.conf.d"
sed -e 's|^required |#required |' -e "s|/usr/lib/x86_64-linux-gnu/|/usr/lib/$triplet/|" \
	"$top/contrib/slurm/plugstack.conf" >"$root/etc/slurm/plugstack.conf.d/strata.conf"
{
	echo "# Strata's SPANK plugin: uncomment the 'required' line below on every"
	echo "# Slurm node and submit host once strata-agent runs on the compute"
	echo "# nodes (docs/slurm.md, docs/install.md), then restart slurmd."
	cat "$root/etc/slurm/plugstack.conf.d/strata.conf"
} >"$work/plugstack" && mv "$work/plugstack" "$root/etc/slurm/plugstack.conf.d/strata.conf"
chmod 644 "$root/etc/slurm/plugstack.conf.d/strata.conf"

# Documentation and examples.
install -D -m 644 "$top/README.md" "$doc/README.md"
for f in "$top"/docs/*.md; do
	install -m 644 "$f" "$doc/$(basename "$f")"
done
mkdir -p "$doc/examples"
"$strata" mpiio hints --layout width=4,unit=1M --nodes 4 >"$doc/examples/romio-hints"
printf '%s\n' "# /etc/fstab line for a Strata mount (docs/install.md, mount.fuse.strata(8))" \
	"strata:mds1:7000,mds2:7000,mds3:7000 /scratch fuse.strata defaults,_netdev 0 0" >"$doc/examples/fstab"
chmod 644 "$doc/examples/"*
install -m 644 "$top/contrib/deb/copyright" "$doc/copyright"
date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
commit=$(git -C "$top" rev-parse HEAD 2>/dev/null || echo unknown)
printf 'strata (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- Strata developers <strata@strata-hpc.org>  %s\n' \
	"$version" "$commit" "$date" | gzip -9n >"$doc/changelog.gz"
install -D -m 644 "$top/contrib/deb/lintian-overrides" "$root/usr/share/lintian/overrides/strata"

# Man pages from the command table, and the bash completion.
"$strata" __man "$work/man"
for p in "$work"/man/*.1 "$work"/man/*.8; do
	s=${p##*.}
	mkdir -p "$root/usr/share/man/man$s"
	gzip -9n -c "$p" >"$root/usr/share/man/man$s/$(basename "$p").gz"
done
mkdir -p "$root/usr/share/bash-completion/completions"
"$strata" __completion >"$root/usr/share/bash-completion/completions/strata"
chmod 644 "$root/usr/share/bash-completion/completions/strata" "$root"/usr/share/man/man*/*

# Control files.
mkdir -p "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
	-e "s|@DEPENDS@|libc6 (>= 2.34), fuse3|" "$top/contrib/deb/control.in" >"$root/DEBIAN/control"
install -m 644 "$top/contrib/deb/conffiles" "$root/DEBIAN/conffiles"
for s in postinst prerm postrm; do
	install -m 755 "$top/contrib/deb/$s" "$root/DEBIAN/$s"
done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/md5sums"

mkdir -p "$out"
rm -f "$out"/strata_*_"$arch".deb # earlier builds: dist/ holds the latest only
find "$root" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0 touch --no-dereference --date="@$SOURCE_DATE_EPOCH"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/strata_${version}_${arch}.deb" >/dev/null
echo "$out/strata_${version}_${arch}.deb"
