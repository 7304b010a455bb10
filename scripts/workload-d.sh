#!/usr/bin/env bash
# Builds workload D (issue 30), a real source tree: seven copies of the Go
# 1.26.8 distribution (its GOROOT: 15,036 files and 1,668 folders each, 232.5
# MB of file data, 10,362 files under 4 KiB, 14 empty ones, files up to 14
# folders deep, no symbolic links; seven copies: 105,252 files, 1.63 GB).
#
#   scripts/workload-d.sh DIR [COPIES]
#
# DIR must not exist yet; it gets DIR/go-1 ... DIR/go-COPIES. The version is
# pinned: the tree comes from `GOTOOLCHAIN=go1.26.8 go env GOROOT` (the
# installed Go when it is that version, else the toolchain module from the
# Go module proxy), and the script checks the VERSION file and the number of
# files of the copy it makes, so two sittings move the same tree.
set -euo pipefail

version=go1.26.8
files_per_copy=15036

dir=${1:?usage: scripts/workload-d.sh DIR [COPIES]}
copies=${2:-7}
if [[ -e $dir ]]; then
	echo "workload-d: $dir exists; give a new folder" >&2
	exit 2
fi
goroot=$(GOTOOLCHAIN=$version go env GOROOT)
got=$(head -n 1 "$goroot/VERSION")
if [[ $got != "$version" ]]; then
	echo "workload-d: $goroot is $got, not $version" >&2
	exit 1
fi
mkdir -p "$dir"
# One copy first, checked, then the others copied from it.
cp -R --no-preserve=ownership "$goroot" "$dir/go-1"
chmod -R u+w "$dir/go-1" # the module cache's copy is read-only
n=$(find "$dir/go-1" -type f | wc -l)
if [[ $n -ne $files_per_copy ]]; then
	echo "workload-d: $goroot holds $n files, $version's distribution $files_per_copy" >&2
	exit 1
fi
for i in $(seq 2 "$copies"); do
	cp -R "$dir/go-1" "$dir/go-$i"
done
echo "workload-d: $dir: $((n * copies)) files, $(du -sb "$dir" | cut -f1) bytes ($copies copies of $version)"
