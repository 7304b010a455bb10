#!/bin/bash
# The soak of docs/benchmarks/soak.md: one long-lived `ferry-cli receive --accept all`
# on loopback, driven by N short sends from fresh `ferry-cli send` processes (files,
# folders, texts over tcp, quic and auto; LocalSend files, folders and texts; big files
# killed with SIGKILL or stopped with SIGINT mid-way; a device new to the receiver every
# 20 sends), sampled every STEP transfers: the receiver's goroutines and live heap (its
# SIGUSR1 heap profile, FERRY_HEAPPROFILE), RSS, open files, config folder, partials
# and download folder, and the three senders' config folders.
#
#   docs/benchmarks/soak.sh FERRY_CLI WORKDIR [N [STEP [PORT]]]
#
# WORKDIR gets rcfg/ (receiver config), dl/ (downloads), s1..s3/ (senders' configs),
# prof/ (heap profiles and goroutine dumps per sample) and samples.txt (one line per
# sample). The big file is 40 MB; each interrupted send leaves a partial of that size
# (preallocated), so give dl/ some GB.
set -u
F=$(realpath "$1"); W=$2; N=${3:-1500}; STEP=${4:-100}; PORT=${5:-47963}
mkdir -p "$W" && cd "$W" || exit 1
mkdir -p dl prof src/u fresh
[ -f src/big.bin ] || head -c 40000000 /dev/urandom > src/big.bin
for i in 1 2 3 4 5; do [ -f src/f$i.bin ] || head -c $((20000 + i * 15000)) /dev/urandom > src/f$i.bin; done
mkdir -p src/folder/sub
for i in 1 2 3 4 5; do head -c 4000 /dev/urandom > src/folder/sub/x$i.dat; echo hi > src/folder/a$i.txt; done
TO=127.0.0.1:$PORT; LS=127.0.0.1:$((PORT + 1))
FERRY_HEAPPROFILE=$PWD/prof/heap "$F" receive --accept all --config rcfg --dir dl --listen "$TO" \
	--no-discovery --localsend-port $((PORT + 1)) --name soakrx > rx.log 2>&1 &
PID=$!
trap 'kill $PID' EXIT
until grep -q '^listening' rx.log; do sleep 0.1; done
sample() {
	local before after
	before=$(cat prof/heap.json 2>/dev/null | md5sum)
	kill -USR1 $PID
	for _ in $(seq 100); do sleep 0.1; after=$(cat prof/heap.json 2>/dev/null | md5sum); [ "$after" != "$before" ] && break; done
	cp prof/heap.goroutines prof/g-$1.txt; cp prof/heap prof/heap-$1.pprof
	local gh fds rss cfgn res part dln dlk sn
	gh=$(python3 -c 'import json; d=json.load(open("prof/heap.json")); print(d["Goroutines"], d["LiveHeap"]>>10)')
	fds=$(ls /proc/$PID/fd | wc -l); rss=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
	cfgn=$(find rcfg -type f | wc -l); res=$(find rcfg/resume -type f | wc -l)
	part=$(find dl -name '*.partial' | wc -l); dln=$(find dl -type f | wc -l); dlk=$(du -sk dl | cut -f1)
	sn=$(find s1 s2 s3 -type f 2>/dev/null | wc -l)
	echo "$1 $gh $rss $fds $cfgn $res $part $dln $dlk $sn" >> samples.txt
}
echo "transfers goroutines liveheapKB rssKB fds cfgfiles resumefiles partials dlfiles dlKB senderfiles" > samples.txt
sample 0
for i in $(seq 1 "$N"); do
	big=src/u/big$i.bin p=
	case $((i % 20)) in
	0) "$F" send --config s1 --to $TO --transport tcp --text "t$i" ;;
	1) "$F" send --config s1 --to $TO --transport quic src/folder ;;
	2) ln -f src/f1.bin src/u/a$i.bin; "$F" send --config s1 --to $TO --transport tcp src/u/a$i.bin ;;
	3) ln -f src/f2.bin src/u/b$i.bin; "$F" send --config s1 --to $TO --transport quic src/u/b$i.bin ;;
	4) ln -f src/f3.bin src/u/c$i.bin; "$F" send --config s1 --to $TO --transport auto src/u/c$i.bin ;;
	5) ln -f src/f4.bin src/u/d$i.bin; "$F" send --config s1 --protocol localsend --to $LS src/u/d$i.bin ;;
	6) ln -f src/big.bin $big; "$F" send --config s1 --to $TO --transport tcp $big & p=$!; sleep 0.3; kill -9 $p ;;
	7) ln -f src/f5.bin src/u/e$i.bin; "$F" send --config s2 --to $TO --transport auto src/u/e$i.bin ;;
	8) ln -f src/big.bin $big; "$F" send --config s2 --to $TO --transport quic $big & p=$!; sleep 0.3; kill -INT $p ;;
	9) "$F" send --config s2 --to $TO --transport auto src/folder ;;
	10) "$F" send --config s2 --protocol localsend --to $LS --text "ls$i" ;;
	11) ln -f src/f1.bin src/u/g$i.bin; "$F" send --config s2 --to $TO --transport quic src/u/g$i.bin ;;
	12) ln -f src/f2.bin src/u/h$i.bin; "$F" send --config s3 --to $TO --transport tcp src/u/h$i.bin ;;
	13) ln -f src/f3.bin src/u/k$i.bin; "$F" send --config s3 --to $TO --transport auto src/u/k$i.bin src/f5.bin ;;
	14) ln -f src/big.bin $big; "$F" send --config s3 --to $TO --transport auto $big & p=$!; sleep 0.3; kill -9 $p ;;
	15) rm -rf fresh/c; "$F" send --config fresh/c --to $TO --transport auto src/f4.bin ;;
	16) "$F" send --config s3 --to $TO --transport tcp src/f1.bin ;;
	17) "$F" send --config s3 --protocol localsend --to $LS src/folder ;;
	18) ln -f src/f4.bin src/u/m$i.bin; "$F" send --config s1 --to $TO --transport quic src/u/m$i.bin src/f2.bin ;;
	19) "$F" send --config s1 --to $TO --transport quic --text "q$i" ;;
	esac > /dev/null 2>> send.err
	[ -n "$p" ] && wait $p 2> /dev/null
	rm -f $big
	[ $((i % STEP)) -eq 0 ] && sample "$i"
done
