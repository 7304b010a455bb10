#!/usr/bin/env bash
# gui-reach.sh: the real desktop app with browser links (issue 25) and a
# LocalSend device (issue 24), checked in a real window under Xvfb. The app
# runs inside a network namespace this script makes ("A", 192.168.1.20,
# loopback and one veth); the other devices run in a second one ("B",
# 192.168.1.31 and .44) joined to it by the veth pair, so nothing they serve
# or announce (LocalSend's 53317 and multicast included) reaches this
# machine's own networks. curl plays the browsers; internal/lspeer/lspeerd
# (the independent LocalSend test peer) plays a phone running LocalSend.
#
#   1. a share link (PIN 4821) of a folder: .31 downloads one picture whole
#      and a film slowly, .44 the zip slowly -> link-share.png
#   2. a receive link: .31 uploads a photo (tus, as the page does) and a
#      film slowly -> link-receive.png, then Escape closes the dialog and
#      the window shows the files as transfers and the open link under the
#      devices -> link-receive-window.png
#   3. LocalSend: the phone at .31 announces itself and offers a photo; the
#      app lists it (LocalSend mark, phone icon, model, fingerprint) and
#      prompts -> localsend-prompt.png; Escape declines; meanwhile the app
#      sends a PDF to the phone as a drop on its row would (over LocalSend)
#      -> localsend-device.png, and the phone has the PDF
#
# Screenshots go to testoutput/gui-reach/ (git-ignored), or $REACH_OUT.
# Needs root (ip netns), Xvfb, xdotool, imagemagick (import), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${REACH_OUT:-$PWD/testoutput/gui-reach}"
rm -rf "$out" && mkdir -p "$out"
echo "building ferry..."
go build -o "$out/ferry" .
go build -o "$out/lspeerd" ./internal/lspeer/lspeerd

ns="ferry-reach-$$"
nsb="ferry-reach-b-$$"
display=":$((200 + RANDOM % 100))"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for n in "$ns" "$nsb"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null || true
		ip netns del "$n" 2>/dev/null || true
	done
}
trap cleanup EXIT

ip netns add "$ns"
ip netns add "$nsb"
ip -n "$ns" link set lo up
ip -n "$nsb" link set lo up
ip -n "$ns" link add lan0 type veth peer name lan1 netns "$nsb"
ip -n "$ns" addr add 192.168.1.20/24 dev lan0
for a in 192.168.1.31 192.168.1.44; do ip -n "$nsb" addr add "$a/24" dev lan1; done
ip -n "$ns" link set lan0 up
ip -n "$nsb" link set lan1 up

Xvfb "$display" -screen 0 1400x900x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -e "/tmp/.X11-unix/X${display#:}" ]] && break; sleep 0.1; done

# stop_apps ends everything started since Xvfb, and waits for it (ports
# free). Background jobs are started with ip netns exec itself (which execs
# the program), not through a shell function, so that their pid is the
# program's.
stop_apps() {
	for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]:1}"; do wait "$p" 2>/dev/null || true; done
	pids=("${pids[0]}")
}
inns() { ip netns exec "$ns" "$@"; }   # the app's side
inb() { ip netns exec "$nsb" "$@"; }    # the other devices' side
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
	local t=$1 what=$2
	shift 2
	for _ in $(seq $((t * 10))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "FAIL: timed out waiting for $what" >&2
	return 1
}
window() { DISPLAY=$display xdotool search --onlyvisible --name "^Ferry — $1\$" | head -1; }
snap() { DISPLAY=$display import -window "$1" "$out/$2"; echo "screenshot: $out/$2"; }

# start NAME [LINKSPEC]: one instance with its own config on namespace A's
# network, showing a link (with LINKSPEC; LocalSend off) or with LocalSend
# on (without); SEND_TO="name=path" sends path to the device
# called name once it is listed (FERRY_SMOKE_SEND_TO).
start() {
	local name=$1 spec=${2:-} cfg="$out/cfg-$1" env=()
	mkdir -p "$cfg" "$out/recv-$name"
	if [[ -n $spec ]]; then
		env=(FERRY_SMOKE_LINK="$spec")
	fi
	if [[ -n ${SEND_TO:-} ]]; then
		env+=(FERRY_SMOKE_SEND_TO="$SEND_TO")
	fi
	cat >"$cfg/settings.json" <<JSON
{"device_name": "$name", "download_dir": "$out/recv-$name", "policy": "everyone", "auto_accept_trusted": true, "localsend_off": $([[ -n $spec ]] && echo true || echo false)}
JSON
	ip netns exec "$ns" env -u DBUS_SESSION_BUS_ADDRESS DISPLAY="$display" HOME="$out/home" XDG_CONFIG_HOME="$out/home/.config" FYNE_THEME=dark \
		FERRY_SMOKE_STATUS="$cfg/status.json" "${env[@]}" \
		"$out/ferry" --config "$cfg" >"$out/$name.log" 2>&1 &
	pids+=($!)
	if [[ -n $spec ]]; then
		wait_for 60 "the link of $name" test -s "$cfg/status.json.link"
	fi
	wait_for 60 "the window of $name" window "$name"
}

# ---- 1. share link ----
mkdir -p "$out/share/Holiday 2026"
head -c 4200000 /dev/urandom >"$out/share/Holiday 2026/IMG_2041.jpg"
head -c 40000000 /dev/urandom >"$out/share/Holiday 2026/beach.mov"
head -c 86000 /dev/urandom >"$out/share/Holiday 2026/route.gpx"
start "Sam's laptop" "share=$out/share/Holiday 2026:4821"
url=$(cat "$out/cfg-Sam's laptop/status.json.link")
echo "share link: $url"
for dev in 31 44; do
	inb curl -fsS --interface "192.168.1.$dev" -c "$out/jar$dev" -d pin=4821 -o /dev/null "${url}pin"
done
page=$(inb curl -fsS --interface 192.168.1.31 -b "$out/jar31" "$url")
# The page links each file as f/<index>/<name>; find the two by name.
file_link() { grep -o "f/[0-9]*/$1" <<<"$page" | head -1; }
inb curl -fsS --interface 192.168.1.31 -b "$out/jar31" -o "$out/got.jpg" "${url}$(file_link IMG_2041.jpg)"
cmp "$out/got.jpg" "$out/share/Holiday 2026/IMG_2041.jpg"
ip netns exec "$nsb" curl -fsS --interface 192.168.1.31 -b "$out/jar31" --limit-rate 1M -o /dev/null "${url}$(file_link beach.mov)" &
pids+=($!)
ip netns exec "$nsb" curl -fsS --interface 192.168.1.44 -b "$out/jar44" --limit-rate 1M -o /dev/null "${url}all.zip" &
pids+=($!)
sleep 4 # let the slow downloads show progress (a picture, not a readiness wait)
snap "$(window "Sam's laptop")" link-share.png

# ---- 2. receive link ----
stop_apps
start "Alice's desktop" "receive"
url=$(cat "$out/cfg-Alice's desktop/status.json.link")
echo "receive link: $url"
# tus_upload FILE NAME [CURL ARGS...]: create the upload, then send it in
# 4 MiB chunks (a link takes at most one 8 MiB chunk per request), as the
# page's tus-js-client does.
tus_upload() {
	local file=$1 name=$2 size loc off=0 chunk=$((4 << 20))
	shift 2
	size=$(stat -c %s "$file")
	loc=$(inb curl -fsS --interface 192.168.1.31 -D - -o /dev/null -X POST -H 'Tus-Resumable: 1.0.0' \
		-H "Upload-Length: $size" -H "Upload-Metadata: filename $(printf %s "$name" | base64 -w0)" "${url}tus/" |
		tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
	while ((off < size)); do
		dd if="$file" of="$out/chunk-$name" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$chunk" status=none
		inb curl -fsS --interface 192.168.1.31 -X PATCH -H 'Tus-Resumable: 1.0.0' -H "Upload-Offset: $off" \
			-H 'Content-Type: application/offset+octet-stream' --data-binary "@$out/chunk-$name" "$@" "$loc"
		off=$((off + $(stat -c %s "$out/chunk-$name")))
	done
}
head -c 3100000 /dev/urandom >"$out/IMG_0420.jpg"
tus_upload "$out/IMG_0420.jpg" IMG_0420.jpg
wait_for 20 "the photo in the download folder" cmp "$out/IMG_0420.jpg" "$out/recv-Alice's desktop/IMG_0420.jpg"
tus_upload "$out/share/Holiday 2026/beach.mov" VID_0421.mov --limit-rate 1M &
pids+=($!)
sleep 4
win=$(window "Alice's desktop")
snap "$win" link-receive.png
DISPLAY=$display xdotool key --window "$win" Escape
sleep 1
snap "$win" link-receive-window.png
stop_apps

# ---- 3. a LocalSend phone ----
head -c 2400000 /dev/urandom >"$out/IMG_20261202_0931.jpg"
head -c 1300000 /dev/urandom >"$out/Trip notes.pdf"
SEND_TO="Galaxy S24=$out/Trip notes.pdf" start "Dana's laptop"
ip netns exec "$nsb" "$out/lspeerd" -iface lan1 -alias "Galaxy S24" -model Samsung -type mobile -send "$out/IMG_20261202_0931.jpg" >"$out/lspeerd.log" 2>&1 &
pids+=($!)
win=$(window "Dana's laptop")
wait_for 20 "the LocalSend phone" grep -q fingerprint "$out/lspeerd.log"
sleep 8 # the phone's announcements and its offer arrive (a picture, not a readiness wait)
snap "$win" localsend-prompt.png
DISPLAY=$display xdotool key --window "$win" Escape
sleep 2
snap "$win" localsend-device.png
grep -q "answered 403" "$out/lspeerd.log" || { echo "FAIL: the phone's offer was not declined:" >&2; cat "$out/lspeerd.log" >&2; exit 1; }
wait_for 30 "the PDF on the phone" grep -q "received Trip notes.pdf (1300000 bytes)" "$out/lspeerd.log"
echo "ok: both links and a LocalSend phone worked in the real window; look at the screenshots in $out"
