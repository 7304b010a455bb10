#!/usr/bin/env bash
# System calls per file of both sides, by call: one transfer between two
# ferry-cli processes on loopback, each under perf stat with one tracepoint
# per system call (which, unlike strace, does not slow the process).
# docs/benchmarks/trees.md.
#   docs/benchmarks/trees-syscalls.sh FERRY_CLI SRC
# SRC: e.g. one copy of workload D (/work/treeD/go-1). The destination is
# on tmpfs (/dev/shm) and removed afterwards.
set -euo pipefail
bin=$1 src=$2
w=$(mktemp -d /dev/shm/dcps-XXXX)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/dst"
ev=$(for s in read write pread64 pwrite64 openat close newfstatat newfstat linkat futex nanosleep epoll_pwait getdents64 fcntl mkdirat sched_yield; do echo -n "syscalls:sys_enter_$s,"; done)raw_syscalls:sys_enter
perf stat -x, -o "$w/rperf" -e "$ev" -- "$bin" receive --config "$w/recv" --dir "$w/dst" --listen 127.0.0.1:0 --accept all --once --json --no-discovery --localsend=false >"$w/rout" 2>"$w/rerr" &
rp=$!
for _ in $(seq 200); do grep -q '^listening' "$w/rout" 2>/dev/null && break; sleep 0.05; done
addr=$(grep '^listening' "$w/rout" | grep -o '127.0.0.1:[0-9]*' | tail -1)
perf stat -x, -o "$w/sperf" -e "$ev" -- "$bin" send --config "$w/send" --to "$addr" --transport tcp --json "$src" >"$w/sout" 2>"$w/serr"
wait $rp
files=$(find "$w/dst" -type f | wc -l)
for side in rperf sperf; do echo -n "$([[ $side == rperf ]] && echo receiver || echo sender) per file ($files files):"; grep 'sys_enter' "$w/$side" | awk -F, -v f=$files '{n=$3; sub(/.*sys_enter_?/,"",n); if (n=="") n="ALL"; printf " %s %.2f", n, $1/f}'; echo; done
