#!/usr/bin/env bash
# Builds and starts the Ferry desktop app. On Debian/Ubuntu it first installs
# the system packages Fyne needs to build (as root, or through sudo).
#   scripts/run.sh [--config DIR] [--minimized]
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(gcc pkg-config libgl1-mesa-dev xorg-dev)
if command -v apt-get >/dev/null && command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
mkdir -p bin
echo "building (the first build compiles the GUI toolkit and takes a few minutes)..."
go build -o bin/ferry .
exec bin/ferry "$@"
