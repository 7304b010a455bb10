#!/usr/bin/env bash
# One transfer of a tree between two ferry-cli processes on loopback over
# TCP, with perf recording the receiver's context switches (and their call
# stacks), then how long its threads were off the CPU and why, by the
# kernel function they waited in (scripts/offcpu-reasons.py). The source
# should be page-cached first. docs/benchmarks/trees.md, "A second floor".
#   docs/benchmarks/trees-offcpu.sh FERRY_CLI SRC DSTBASE OUT.data [NAME=VALUE...]
# The destination stays (a deletion would slow the next run's creates for
# minutes: see trees.md); remove DSTBASE/o-* when done.
set -euo pipefail
bin=$1 src=$2 base=$3 out=$4; shift 4
here=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d "$base/o-XXXX"); mkdir -p "$w/dst"
env "$@" "$bin" receive --config "$w/recv" --dir "$w/dst" --listen 127.0.0.1:0 --accept all --once --no-discovery --localsend=false >"$w/rout" 2>"$w/rerr" &
rp=$!
for _ in $(seq 400); do grep -q '^listening' "$w/rout" 2>/dev/null && break; sleep 0.02; done
addr=$(grep '^listening' "$w/rout" | grep -o '127.0.0.1:[0-9]*' | tail -1)
perf record -q -e sched:sched_switch -g -p "$rp" -o "$out" &
pp=$!
env "$@" /usr/bin/time -f '%e s wall' "$bin" send --config "$w/send" --to "$addr" --transport tcp "$src" >"$w/sout" 2>"$w/serr"
wait "$rp"
kill -INT "$pp"; wait "$pp" || true
echo "$(tail -1 "$w/serr"), $(find "$w/dst" -type f | wc -l) files landed"
perf script -i "$out" -F tid,time,event,trace,ip,sym 2>/dev/null | "$here/scripts/offcpu-reasons.py"
