#!/usr/bin/env bash
# Installs the newest rsync release (3.5.0) into /usr/local/bin for
# ferry-bench's baseline: Debian 12 ships 3.2.7, and a baseline must be the
# newest release with its default flags. `rsync -e ssh` runs the remote
# `rsync --server` through the ssh session's PATH, where /usr/local/bin comes
# before /usr/bin, so both ends are 3.5.0.
#
# The source is Debian 13's (trixie) copy of the release tarball,
# rsync_3.5.0+ds1.orig.tar.xz (the upstream release without its bundled
# zlib and popt), checked against the SHA-256 below; it is built with the
# system's xxhash, zstd, lz4, OpenSSL, popt and zlib, as Debian builds it.
set -euo pipefail

version=3.5.0
tarball=rsync_${version}+ds1.orig.tar.xz
sha256=d5de0c8a95b00e0f50038ba04526bcbd5fe4f3ff97b4035bb97b084398bfbb60
url=http://deb.debian.org/debian/pool/main/r/rsync/$tarball

if /usr/local/bin/rsync --version 2>/dev/null | grep -q "version $version "; then
	/usr/local/bin/rsync --version | head -n 1
	exit 0
fi
cd "$(dirname "$0")/.."
. scripts/apt-ensure.sh
apt_ensure gcc make curl xz-utils libxxhash-dev libzstd-dev liblz4-dev libssl-dev libpopt-dev zlib1g-dev libacl1-dev libattr1-dev
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsS -o "$work/$tarball" "$url"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet
tar -C "$work" -xf "$work/$tarball"
cd "$work/rsync-$version"
# The +ds1 tarball leaves out zlib/ and popt/, which configure still names.
mkdir -p zlib popt
touch zlib/dummy.in popt/dummy.in
./configure --prefix=/usr/local --with-included-popt=no --with-included-zlib=no >configure.log
make -j"$(nproc)" >make.log
make install >/dev/null
/usr/local/bin/rsync --version | head -n 1
