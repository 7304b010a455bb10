#!/usr/bin/env bash
# A folder sent again, a few of its files changed and one added, between
# paired devices of one build, each build in turns: the second send's wall
# time and what it says it sent. A build before 2026-12-07 (wire.FeatureSame)
# sends every byte again; one since sends the chunks that differ.
#   docs/benchmarks/resend-changes.sh OLD_FERRY_CLI NEW_FERRY_CLI DIR [RATE [ROUNDS]]
# The folder: FILES files (default 40) of SIZE bytes (default 4 MiB) in DIR/src/T. With RATE (e.g. 100mbit), the
# receiver runs in a network namespace of its own behind a veth pair whose
# two ends are shaped to RATE (tbf; needs root), as a LAN would be; without,
# over loopback.
set -euo pipefail
old=$1 new=$2 base=$3 rate=${4:-} rounds=${5:-3} files=${FILES:-40} size=${SIZE:-4194304}
ns=() host=127.0.0.1
if [ -n "$rate" ]; then
	ip netns add fr-resend
	trap 'ip netns del fr-resend 2>/dev/null; ip link del fr-a 2>/dev/null || true' EXIT
	ip link add fr-a type veth peer name fr-b
	ip link set fr-b netns fr-resend
	ip addr add 10.77.0.1/24 dev fr-a; ip link set fr-a up
	ip netns exec fr-resend ip addr add 10.77.0.2/24 dev fr-b
	ip netns exec fr-resend ip link set fr-b up
	ip netns exec fr-resend ip link set lo up
	tc qdisc add dev fr-a root tbf rate "$rate" burst 256kb latency 50ms
	ip netns exec fr-resend tc qdisc add dev fr-b root tbf rate "$rate" burst 256kb latency 50ms
	ns=(ip netns exec fr-resend) host=10.77.0.2
fi
mkdir -p "$base/src"
cd "$base"
fresh() { # the folder as first sent
	rm -rf src/T; mkdir -p src/T
	for i in $(seq "$files"); do head -c "$size" /dev/urandom >"src/T/f$i.bin"; done
}
change() { # two files changed in one byte each, one added
	printf 'x' | dd of=src/T/f3.bin bs=1 seek=100 conv=notrunc status=none
	printf 'y' | dd of=src/T/f17.bin bs=1 seek=$((size * 3 / 4)) conv=notrunc status=none
	head -c "$size" /dev/urandom >src/T/new.bin
}
start() { # start BIN CONFIG [ANSWER]: a receiver into dl, its address in $addr
	rm -rf dl in.fifo; mkdir dl; mkfifo in.fifo
	(sleep 2; echo "${3:-}"; exec sleep 600) >in.fifo &
	feeder=$!
	"${ns[@]}" "$1" receive --config "$2" --dir dl --listen "$host:0" --accept all --no-discovery --localsend=false --name Recv <in.fifo >recv.out 2>&1 &
	rp=$!
	for _ in $(seq 200); do grep -q '^listening' recv.out 2>/dev/null && break; sleep 0.05; done
	addr=$(grep -o 'tcp=[^ ]*' recv.out | cut -d= -f2)
}
stop() { kill "$rp" "$feeder" 2>/dev/null || true; wait "$rp" "$feeder" 2>/dev/null || true; }
for bin in "$old" "$new"; do # pair each build's sender with its receiver once
	tag=$(basename "$bin")
	if [ ! -d "s-$tag" ]; then
		start "$bin" "r-$tag" y
		(sleep 2; echo y) | "$bin" pair --config "s-$tag" --name Send --to "$addr" >/dev/null
		stop
	fi
done
for round in $(seq "$rounds"); do
	for bin in "$old" "$new"; do
		tag=$(basename "$bin")
		fresh
		start "$bin" "r-$tag"
		"$bin" send --config "s-$tag" --to "$addr" --transport tcp src/T >/dev/null
		change
		t0=$(date +%s.%N)
		said=$("$bin" send --config "s-$tag" --to "$addr" --transport tcp src/T 2>&1 | tail -1)
		t1=$(date +%s.%N)
		stop
		echo "round $round $tag: second send $(echo "$t1 - $t0" | bc) s; files in T $(find dl/T -type f | wc -l); $said"
	done
done
