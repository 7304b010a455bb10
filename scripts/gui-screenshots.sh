#!/usr/bin/env bash
# gui-screenshots.sh: refresh docs/screenshots/ for the README.
#   main, prompt, details, send, text, history, devices, address (self),
#   codeprompt, pairing, keychanged (.png): copies of the golden images in
#             ui/testdata/golden/ (dark, 980x640), which a person reviewed
#             (see ui/golden_test.go; they show a made-up but ordinary
#             session: ~/Downloads, a few devices, one transfer running)
#   tray.png: the real tray menu model drawn by Fyne's software renderer
#             (Xvfb has no tray host to photograph), next to the app icon.
# Also leaves light/dark 1x/2x renderings of every view in testoutput/ui/.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go test -count=1 -run 'TestGolden$' ./ui
CGO_ENABLED=0 FERRY_SCREENSHOT_DIR="$PWD/testoutput/ui" go test -count=1 -run TestRenderAtScalesAndThemes ./ui
mkdir -p docs/screenshots
for v in main prompt details send text history devices codeprompt pairing keychanged; do
	cp "ui/testdata/golden/$v-large-dark.png" "docs/screenshots/$v.png"
done
cp ui/testdata/golden/self-large-dark.png docs/screenshots/address.png
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
convert testoutput/ui/dark-tray-1x.png -trim +repage "$tmp/menu.png"
convert assets/icon.png -resize 48x48 "$tmp/icon.png"
convert -size 300x270 xc:'#2b2b2b' "$tmp/icon.png" -geometry +12+8 -composite "$tmp/menu.png" -geometry +12+64 -composite \
	-fill '#dddddd' -pointsize 16 -annotate +70+38 'Ferry in the tray' docs/screenshots/tray.png
echo "updated docs/screenshots/ from the golden images, and tray.png"
