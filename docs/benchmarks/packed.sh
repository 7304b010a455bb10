#!/usr/bin/env bash
# A folder sent over a link of RATE, each build in turns: the wall time from
# launching the receiver to the sender's exit, what the sender's summary
# says, and the tree checked against its source after each run (not timed).
# A build before 2026-12-07's second session sends every chunk as it is; one
# since compresses chunks that shrink while the link is what it waits on
# (wire.FeaturePacked, engine/internal/pack).
#   docs/benchmarks/packed.sh OLD_FERRY_CLI NEW_FERRY_CLI SRC BASE [RATE [ROUNDS]]
# SRC is the folder sent (e.g. "$(go env GOROOT)": source code; or a folder of
# photos or random bytes, which does not compress). With RATE (e.g. 100mbit)
# the receiver runs in a network namespace of its own behind a veth pair
# whose two ends are shaped to RATE (tbf; needs root), as a LAN would be;
# without, over loopback. LOSS (e.g. 0.005) drops that share of the packets
# leaving each end at random (iptables statistic). Each sender runs with its
# defaults (auto).
# With CROC=/path/to/croc (the newest is 11.2.5: scripts/install-croc.sh;
# it compresses by default) croc runs in the same rounds: its relay and its
# sender on this side, its receiver behind the link, the relay started
# before the clock (as a public relay would be running).
set -euo pipefail
old=$1 new=$2 src=$3 base=$4 rate=${5:-} rounds=${6:-3}
ns=() host=127.0.0.1
if [ -n "$rate" ]; then
	ip netns add fr-packed
	trap 'ip netns del fr-packed 2>/dev/null; ip link del fr-pa 2>/dev/null || true' EXIT
	ip link add fr-pa type veth peer name fr-pb
	ip link set fr-pb netns fr-packed
	ip addr add 10.78.0.1/24 dev fr-pa; ip link set fr-pa up
	ip netns exec fr-packed ip addr add 10.78.0.2/24 dev fr-pb
	ip netns exec fr-packed ip link set fr-pb up
	ip netns exec fr-packed ip link set lo up
	tc qdisc add dev fr-pa root tbf rate "$rate" burst 256kb latency 50ms
	ip netns exec fr-packed tc qdisc add dev fr-pb root tbf rate "$rate" burst 256kb latency 50ms
	ns=(ip netns exec fr-packed) host=10.78.0.2
	if [ -n "${LOSS:-}" ]; then
		iptables -A OUTPUT -o fr-pa -m statistic --mode random --probability "$LOSS" -j DROP
		ip netns exec fr-packed iptables -A OUTPUT -o fr-pb -m statistic --mode random --probability "$LOSS" -j DROP
		trap 'iptables -D OUTPUT -o fr-pa -m statistic --mode random --probability "$LOSS" -j DROP; ip netns del fr-packed 2>/dev/null; ip link del fr-pa 2>/dev/null || true' EXIT
	fi
fi
mkdir -p "$base"
cd "$base"
cat <(find "$src" -type f -print0 | xargs -0 cat) >/dev/null # the source in the page cache
name=$(basename "$src")
croc_run() { # one croc send of $src over the link, timed as the others
	local here=${host%.2}.1 secret
	[ -n "$rate" ] || here=127.0.0.1
	rm -rf dl; mkdir dl
	"$CROC" relay --host "$here" --ports 9711,9712,9713,9714,9715 >relay.out 2>&1 &
	local relay=$!
	for _ in $(seq 400); do [ "$(grep -c 'starting TCP server' relay.out 2>/dev/null)" -ge 5 ] && break; sleep 0.01; done
	secret=ferrybench-$RANDOM$RANDOM
	t0=$(date +%s.%N)
	CROC_SECRET=$secret "$CROC" --debug --relay "$here:9711" --yes send --no-local "$src" >send.out 2>&1 &
	local sp=$!
	for _ in $(seq 1000); do grep -q 'banner:' send.out 2>/dev/null && break; sleep 0.01; done
	CROC_SECRET=$secret "${ns[@]}" "$CROC" --relay "$here:9711" --yes --out dl >crecv.out 2>&1
	wait "$sp" || true
	t1=$(date +%s.%N)
	kill "$relay"; wait "$relay" 2>/dev/null || true
	same=exact
	diff -rq --no-dereference "$src" "dl/$name" >/dev/null 2>&1 || same=DIFFERS
	echo "round $round $("$CROC" --version | tr -d '\n'): $(echo "$t1 - $t0" | bc) s, $same"
}
for round in $(seq "$rounds"); do
	if [ -n "${CROC:-}" ]; then croc_run; fi
	for bin in "$old" "$new"; do
		tag=$(basename "$bin")
		rm -rf dl cfg-r cfg-s; mkdir dl
		t0=$(date +%s.%N)
		"${ns[@]}" "$bin" receive --config cfg-r --dir dl --listen "$host:0" --accept all --once --no-discovery --localsend=false --name Recv >recv.out 2>&1 &
		rp=$!
		for _ in $(seq 1000); do grep -q '^listening' recv.out 2>/dev/null && break; sleep 0.01; done
		if ! addr=$(grep -o 'tcp=[^ ]*' recv.out | cut -d= -f2); then
			echo "round $round $tag: the receiver did not start: $(cat recv.out)" >&2
			exit 1
		fi
		said=$("$bin" send --config cfg-s --to "$addr" "$src" 2>&1) || said="FAILED: $said"
		said=$(printf '%s\n' "$said" | tail -1)
		t1=$(date +%s.%N)
		wait "$rp" || true
		same=exact
		diff -rq --no-dereference "$src" "dl/$name" >/dev/null 2>&1 || same=DIFFERS
		echo "round $round $tag: $(echo "$t1 - $t0" | bc) s, $same; $said"
	done
done
