#!/usr/bin/env bash
# gui-screenshots.sh: refresh docs/screenshots/ for the README.
#   main.png, prompt.png, details.png: the real app under Xvfb (from
#             scripts/gui-smoke.sh; details.png is the sender's details view
#             after a 1 GB transfer, with the connection's metrics)
#   tray.png: the real tray menu model drawn by Fyne's software renderer
#             (Xvfb has no tray host to photograph), next to the app icon.
# Also leaves light/dark 1x/2x renderings of every view in testoutput/ui/.
set -euo pipefail
cd "$(dirname "$0")/.."
SMOKE_OUT="$PWD/testoutput/gui-smoke" SMOKE_MB=1000 scripts/gui-smoke.sh
CGO_ENABLED=0 FERRY_SCREENSHOT_DIR="$PWD/testoutput/ui" go test -count=1 -run TestRenderAtScalesAndThemes ./ui
mkdir -p docs/screenshots
cp testoutput/gui-smoke/a-done.png docs/screenshots/main.png
cp testoutput/gui-smoke/a-prompt.png docs/screenshots/prompt.png
cp testoutput/gui-smoke/b-details.png docs/screenshots/details.png
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
convert testoutput/ui/dark-tray-1x.png -trim +repage "$tmp/menu.png"
convert assets/icon.png -resize 48x48 "$tmp/icon.png"
convert -size 300x250 xc:'#2b2b2b' "$tmp/icon.png" -geometry +12+8 -composite "$tmp/menu.png" -geometry +12+64 -composite \
	-fill '#dddddd' -pointsize 16 -annotate +70+38 'Ferry in the tray' docs/screenshots/tray.png
echo "updated docs/screenshots/{main,prompt,details,tray}.png"
