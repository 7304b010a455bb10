#!/usr/bin/env bash
# Builds and starts the Ferry desktop app. On Debian/Ubuntu it first installs
# the system packages Fyne needs to build (as root, or through sudo).
#   scripts/run.sh [--config DIR] [--minimized]
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(gcc pkg-config libgl1-mesa-dev xorg-dev)
. scripts/apt-ensure.sh
apt_ensure "${pkgs[@]}"
mkdir -p bin
echo "building (the first build compiles the GUI toolkit and takes a few minutes)..."
go build -o bin/ferry .
exec bin/ferry "$@"
