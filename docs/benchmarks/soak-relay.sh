#!/bin/bash
# The relay part of the second soak (docs/benchmarks/soak.md): one long-lived
# `ferry-cli receive --anywhere` in a network namespace of its own, reached only
# through a `ferry-cli relay` beside it, driven by N sends through the relay from
# fresh `ferry-cli send --relay` processes of three paired devices (their last LAN
# address of it taken out of their trust stores, so that they call it through the
# relay): whole, killed with SIGKILL mid-way, stopped with SIGINT mid-way. Sampled
# every STEP sends like soak.sh. ICE offers no loopback address outside tests,
# hence the namespace: a veth pair PREFIX-a (10.250.2.1, the host: relay and
# senders) / PREFIX-b (10.250.2.2, the receiver), removed at the end. Run as root.
#
#   docs/benchmarks/soak-relay.sh FERRY_CLI WORKDIR [N [STEP [PREFIX]]]
set -u
LIB=$(dirname "$(realpath "$0")")/soak-lib.sh
trap "" PIPE
F=$(realpath "$1"); W=$2; N=${3:-300}; STEP=${4:-50}; P=${5:-soak2}
NS=${P}rx HOST=10.250.2.1 RXIP=10.250.2.2
mkdir -p "$W" && cd "$W" || exit 1
mkdir -p prof dl relaycfg src
[ -f src/small.bin ] || head -c 300000 /dev/urandom > src/small.bin
[ -f src/big.bin ] || head -c 200000000 /dev/urandom > src/big.bin
[ -f relay.secret ] || { head -c 24 /dev/urandom | base64 > relay.secret; chmod 600 relay.secret; }
ip netns add $NS && ip link add $P-a type veth peer name $P-b && ip link set $P-b netns $NS || exit 1
ip addr add $HOST/30 dev $P-a && ip link set $P-a up
ip -n $NS addr add $RXIP/30 dev $P-b && ip -n $NS link set $P-b up && ip -n $NS link set lo up
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null; sleep 1; ip link del $P-a 2>/dev/null; ip netns del $NS; }
trap cleanup EXIT
RELAY=$HOST:48263 RX=$RXIP:48264
FERRY_HEAPPROFILE=$PWD/prof/relay "$F" relay --config relaycfg --listen $RELAY --secret-file relay.secret > relay.log 2>&1 &
PIDS+=($!); RELAYPID=$!
until grep -q 'relay listening' relay.log; do sleep 0.1; done
rm -f rx.in; mkfifo rx.in; exec 3<> rx.in
FERRY_HEAPPROFILE=$PWD/prof/rx ip netns exec $NS "$F" receive --accept all --config rxcfg --dir dl --listen $RX --no-discovery \
	--localsend=false --anywhere --relay $RELAY --relay-secret-file relay.secret --name soakrx <&3 > rx.log 2>&1 &
PIDS+=($!); RXPID=$! # ip netns exec execs the command itself
until grep -q 'reachable from anywhere' rx.log; do sleep 0.1; done
for s in s1 s2 s3; do
	rm -f p.in; mkfifo p.in
	"$F" pair --config $s --to $RX --name $s < p.in > pair-$s.log 2>&1 & p=$!
	exec 4> p.in
	until grep -q 'same code' pair-$s.log && grep -q "$s .* asks to pair, with" rx.log; do sleep 0.1; done
	echo y >&3; echo y >&4; exec 4>&-; wait $p
	python3 -c 'import json,sys; p=sys.argv[1]+"/trust.json"; d=json.load(open(p)); [e.pop("last_addrs", None) for e in d]; json.dump(d, open(p, "w"))' $s
done
sleep 1 # the receiver puts its presence for a device it pairs at once (it was within 30 s until 2026-12-06)
. "$LIB"
sample() {
	local line="$1" n p d
	for n in rx relay; do
		case $n in rx) p=$RXPID d=rxcfg ;; relay) p=$RELAYPID d=relaycfg ;; esac
		line="$line $(profile $n $p $1 | tr ' ' /)/$(awk '/VmRSS/{print $2}' /proc/$p/status)/$(ls /proc/$p/fd | wc -l)/$(find $d -type f | wc -l)/$(du -sk $d | cut -f1)"
	done
	# TURN allocations the relay holds: its goroutines reading their sockets
	local allocs=$(awk '/^[0-9]+ @/{n=$1} /allocation.*packetConnHandler/{s+=n} END{print s+0}' prof/relay.goroutines)
	echo "$line $allocs $(find dl -name '*.partial' | wc -l) $(du -sk dl | cut -f1)" >> samples.txt
}
echo "sends rx:goroutines/heapKB/rssKB/fds/cfgfiles/cfgKB relay:... allocations partials dlKB" > samples.txt
sample 0
for i in $(seq 1 "$N"); do
	s=s$((i % 3 + 1))
	f=src/small.bin; [ $((i % 5)) -ge 3 ] && f=src/big.bin
	"$F" send --config $s --relay $RELAY --relay-secret-file relay.secret --to soakrx --retry-for 5s $f >> send.log 2>&1 & p=$!
	case $((i % 5)) in
	3) sleep 1.5; kill -9 $p ;;
	4) sleep 1.5; kill -INT $p ;;
	esac
	wait $p 2>/dev/null
	echo "$i $(date +%T)" >> rounds.log
	[ $((i % STEP)) -eq 0 ] && sample "$i"
done
# What the last sends left, once their ICE sessions had the time to fail.
sleep ${SETTLE:-60}; sample "$N+${SETTLE:-60}s"
