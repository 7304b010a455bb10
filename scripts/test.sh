#!/usr/bin/env bash
# Runs Ferry's test suite. On Debian/Ubuntu it first installs the system
# packages the suite needs (as root, or through sudo when available).
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(gcc pkg-config libgl1-mesa-dev xorg-dev xvfb imagemagick xdotool dunst dbus-x11 dbus-daemon util-linux python3
      avahi-daemon avahi-utils iproute2 iptables iperf3 openssh-server openssh-client rsync)
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

echo "== go vet"
go vet ./...
echo "== go test"
# -race on the engine and discovery (where the concurrency lives); the rest plain.
go test -race -count=1 -timeout 20m ./engine/... ./discovery/...
go test -count=1 -timeout 20m $(go list ./... | grep -v -e /engine -e /discovery)
