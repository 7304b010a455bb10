#!/usr/bin/env bash
# gui-e2e.sh: the GUI end-to-end test (app/gui_e2e_linux_test.go) on its own,
# keeping its screenshots in ./testoutput/gui-e2e/ (git-ignored) to look at.
# It starts its own Xvfb and D-Bus session, plays the tray host and the
# notification server, drags files in over XDND (scripts/e2e/x11.py) and
# types with xdotool.
#
# Needs: Xvfb, dbus-daemon, xdotool, imagemagick (import), python3-xlib.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/apt-ensure.sh
apt_ensure xvfb dbus-daemon xdotool imagemagick python3-xlib
out="$PWD/testoutput/gui-e2e"
rm -rf "$out" && mkdir -p "$out"
FERRY_E2E_OUT="$out" go test -count=1 -run '^TestGUIEndToEnd$' -v ./app
echo "screenshots: $out"
