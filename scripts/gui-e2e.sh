#!/usr/bin/env bash
# gui-e2e.sh: the GUI end-to-end test (app/gui_e2e_linux_test.go) on its own,
# keeping its screenshots in ./testoutput/gui-e2e/ (git-ignored) to look at.
# It starts its own Xvfb and D-Bus session, plays the tray host and the
# notification server, drags files in over XDND (scripts/e2e/x11.py) and
# types with xdotool.
#
#   scripts/gui-e2e.sh          TestGUIEndToEnd (about 70 s; CI runs it too)
#   scripts/gui-e2e.sh --slow   TestGUISlowLink as well (app/gui_slow_linux_test.go:
#                               two instances in network namespaces over a
#                               20 Mbit/s link; pause, cancel and resume, a
#                               receiver killed, a sender killed and started
#                               again; as root, about 2.5 minutes;
#                               not in CI's default run)
#
# Needs: Xvfb, dbus-daemon, xdotool, imagemagick (import), python3-xlib;
# --slow also iproute2 (ip, tc), nftables (nft) and root.
set -euo pipefail
cd "$(dirname "$0")/.."
run='^TestGUIEndToEnd$'
case "${1:-}" in
--slow) run='^(TestGUIEndToEnd|TestGUISlowLink)$'; export FERRY_E2E_SLOW=1 ;;
"") ;;
*) echo "usage: $0 [--slow]" >&2; exit 2 ;;
esac
. scripts/apt-ensure.sh
apt_ensure xvfb dbus-daemon xdotool imagemagick python3-xlib iproute2 nftables
out="$PWD/testoutput/gui-e2e"
rm -rf "$out" && mkdir -p "$out"
FERRY_E2E_OUT="$out" go test -count=1 -timeout 20m -run "$run" -v ./app
echo "screenshots: $out"
