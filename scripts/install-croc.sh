#!/usr/bin/env bash
# Installs the newest croc (11.2.5) for ferry-bench's baseline into
# $(go env GOPATH)/bin/croc.
#
# croc 11.2.5 is module github.com/schollz/croc/v11, tag v11.2.5 (commit
# 1df69d66, "chore: bump version to 11.2.5"), and needs Go 1.27: the build
# runs with GOTOOLCHAIN=go1.27.3, which the Go module proxy serves. Where the
# module proxy does not serve github.com/schollz/croc/v11 (ours answers 403),
# install croc 11.2.5 another way (a release binary, or a build of that tag)
# and give it to ferry-bench with --croc.
set -euo pipefail

version=v11.2.5
export GOTOOLCHAIN=go1.27.3
bin="$(go env GOPATH)/bin"
if ! go install "github.com/schollz/croc/v11@$version"; then
	echo "install-croc: the module proxy did not serve github.com/schollz/croc/v11@$version;" >&2
	echo "install croc $version another way and pass it to ferry-bench with --croc" >&2
	exit 1
fi
"$bin/croc" --version
