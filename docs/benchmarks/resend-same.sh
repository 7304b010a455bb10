#!/usr/bin/env bash
# A folder sent again by a paired device: the second send's wall time, with
# a receiver of each build in turns (the sender is the newer build). A build
# before 2026-12-07 saves every file again as "name (1)"; one since keeps
# the files already there with the same bytes (README, "Safety").
#   docs/benchmarks/resend-same.sh OLD_FERRY_CLI NEW_FERRY_CLI DSTBASE [FILES [ROUNDS]]
# FILES files of 16 KiB (default 3000) in DSTBASE/src/T; DSTBASE/dl is the
# download folder (put DSTBASE on a tmpfs to leave the disk out).
set -euo pipefail
old=$1 new=$2 base=$3 files=${4:-3000} rounds=${5:-3}
mkdir -p "$base/src/T"
count() { find "$1" -type f -name "$2" | wc -l; }
if [ "$(count "$base/src/T" '*')" -ne "$files" ]; then
	rm -rf "$base/src/T"; mkdir -p "$base/src/T"
	for i in $(seq "$files"); do head -c 16384 /dev/urandom >"$base/src/T/f$i.bin"; done
fi
cd "$base"
start() { # start BIN [ANSWER]: a receiver into dl (ANSWER on its input after 2 s), its address in $addr
	rm -rf dl; mkdir dl
	(sleep 2; echo "${2:-}"; sleep 30) | "$1" receive --config r --dir dl --listen 127.0.0.1:0 --accept all --no-discovery --localsend=false --name Recv >recv.out 2>&1 &
	rp=$!
	for _ in $(seq 200); do grep -q '^listening' recv.out 2>/dev/null && break; sleep 0.05; done
	addr=$(grep -o 'tcp=[^ ]*' recv.out | cut -d= -f2)
}
if [ ! -d s ]; then # pair the sender s with the receiver r once
	start "$new" y
	(sleep 2; echo y) | "$new" pair --config s --name Send --to "$addr" >/dev/null
	kill $rp; wait $rp 2>/dev/null || true
fi
for round in $(seq "$rounds"); do
	for bin in "$old" "$new"; do
		start "$bin"
		"$new" send --config s --to "$addr" --transport tcp src/T >/dev/null
		t0=$(date +%s.%N)
		"$new" send --config s --to "$addr" --transport tcp src/T >/dev/null
		t1=$(date +%s.%N)
		kill $rp; wait $rp 2>/dev/null || true
		echo "round $round $bin: second send $(echo "$t1 - $t0" | bc) s; files in T $(count dl/T '*'), numbered $(count dl/T '* (1)*')"
	done
done
