#!/usr/bin/env bash
# Installs the newest croc (11.2.5) for ferry-bench's baseline into
# $(go env GOPATH)/bin/croc.
#
#   scripts/install-croc.sh [CROC_SOURCE_DIR]
#
# croc 11.2.5 is module github.com/schollz/croc/v11, tag v11.2.5 (commit
# 1df69d66, "chore: bump version to 11.2.5"), and needs Go 1.27: the build
# runs with GOTOOLCHAIN=go1.27.3, which the Go module proxy serves. The
# module proxy reachable from our build machines does not serve that module
# (403 for github.com/schollz/croc/v11, list and version alike; only the old
# module github.com/schollz/croc/v10 up to v10.7.0), so the script first
# tries `go install` and otherwise builds from a checkout of croc's public
# repository at that tag, given as CROC_SOURCE_DIR (its dependencies come
# from the module proxy).
set -euo pipefail

version=v11.2.5
export GOTOOLCHAIN=go1.27.3
bin="$(go env GOPATH)/bin"
if go install "github.com/schollz/croc/v11@$version" 2>/dev/null; then
	"$bin/croc" --version
	exit 0
fi
src=${1:-}
if [[ -z $src ]]; then
	echo "install-croc: the module proxy does not serve github.com/schollz/croc/v11@$version;" >&2
	echo "give a checkout of croc's repository: scripts/install-croc.sh DIR" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$src" archive "$version" | tar -x -C "$work"
grep -q '^module github.com/schollz/croc/v11$' "$work/go.mod"
mkdir -p "$bin"
(cd "$work" && go build -o "$bin/croc" .)
"$bin/croc" --version
