#!/usr/bin/env bash
# One transfer of a tree between two ferry-cli processes on loopback over
# TCP, without perf: the wall time from the receiver's launch to the
# sender's exit, each side's CPU (user + system, from /usr/bin/time) and how
# idle the machine was meanwhile (/proc/stat; 100 % = every CPU idle). Run
# two builds in turns to compare them. docs/benchmarks/trees.md, "A stream's
# reader no longer waits for its lander".
#   docs/benchmarks/trees-run.sh LABEL FERRY_CLI SRC DSTBASE [NAME=VALUE...]
# NAME=VALUE settings go into both processes' environment. The destination
# stays (a deletion would slow the next run's creates for minutes: see
# trees.md); remove DSTBASE/d-* when done.
set -euo pipefail
label=$1 bin=$2 src=$3 base=$4; shift 4
w=$(mktemp -d "$base/d-XXXX"); mkdir -p "$w/dst"
idle0=$(awk '/^cpu /{print $5+$6}' /proc/stat)
t0=$(date +%s.%N)
env "$@" /usr/bin/time -f '%U %S %M' -o "$w/rtime" "$bin" receive --config "$w/recv" --dir "$w/dst" --listen 127.0.0.1:0 --accept all --once --no-discovery --localsend=false >"$w/rout" 2>"$w/rerr" &
rp=$!
for _ in $(seq 400); do grep -q '^listening' "$w/rout" 2>/dev/null && break; sleep 0.02; done
addr=$(grep '^listening' "$w/rout" | grep -o '127.0.0.1:[0-9]*' | tail -1)
env "$@" /usr/bin/time -f '%U %S %M' -o "$w/stime" "$bin" send --config "$w/send" --to "$addr" --transport tcp "$src" >"$w/sout" 2>"$w/serr"
t1=$(date +%s.%N)
wait $rp
idle1=$(awk '/^cpu /{print $5+$6}' /proc/stat)
n=$(find "$w/dst" -type f | wc -l)
read -r ru rs _ < "$w/rtime"; read -r su ss _ < "$w/stime"
awk -v l="$label" -v t0="$t0" -v t1="$t1" -v i0="$idle0" -v i1="$idle1" -v ru="$ru" -v rs="$rs" -v su="$su" -v ss="$ss" -v n="$n" -v hz="$(getconf CLK_TCK)" -v cpus="$(nproc)" \
 'BEGIN{wall=t1-t0; idle=(i1-i0)/hz; printf "%-10s wall %6.2f s  recv %5.2f (u %.2f s %.2f)  send %5.2f  idle %4.1f%%  files %d\n", l, wall, ru+rs, ru, rs, su+ss, 100*idle/(cpus*wall), n}'
