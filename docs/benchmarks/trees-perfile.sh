#!/usr/bin/env bash
# The receiver's CPU and system calls per file on one tree: one transfer
# between two ferry-cli processes on loopback. docs/benchmarks/trees.md.
#   docs/benchmarks/trees-perfile.sh FERRY_CLI TRANSPORT SRC [DSTBASE]
# SRC: e.g. one copy of workload D (scripts/workload-d.sh /dev/shm/d1 1).
# DSTBASE: where the destination goes (default /tmp: the disk; /dev/shm:
# tmpfs); it is removed afterwards. Prints the receiver's CPU (user + sys,
# /usr/bin/time) per file, its system calls and wake-ups per file (perf
# stat with tracepoints, which need no hardware counters and, unlike
# strace, do not slow the process), the sender's CPU and system calls per
# file, and the load average.
# Run the builds to compare in turns (interleaved), in the same sitting.
set -euo pipefail
bin=$1 tr=$2 src=$3
w=$(mktemp -d "${4:-/tmp}/perfile-XXXX")
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/dst"
/usr/bin/time -f '%U %S %M' -o "$w/time" perf stat -x, -o "$w/perf" \
  -e raw_syscalls:sys_enter,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_epoll_pwait,context-switches -- \
  "$bin" receive --config "$w/recv" --dir "$w/dst" --listen 127.0.0.1:0 --accept all --once --json --no-discovery --localsend=false >"$w/rout" 2>"$w/rerr" &
rp=$!
for _ in $(seq 200); do grep -q '^listening' "$w/rout" 2>/dev/null && break; sleep 0.05; done
addrs=$(grep '^listening' "$w/rout" | grep -o '127.0.0.1:[0-9]*')
if [[ $tr == tcp ]]; then addr=$(echo "$addrs" | tail -1); else addr=$(echo "$addrs" | head -1); fi
/usr/bin/time -f '%U %S' -o "$w/stime" perf stat -x, -o "$w/sperf" -e raw_syscalls:sys_enter -- "$bin" send --config "$w/send" --to "$addr" --transport "$tr" --json "$src" >"$w/sout" 2>"$w/serr"
wait $rp
read -r u s m <"$w/time"
read -r su ss <"$w/stime"
files=$(find "$w/dst" -type f | wc -l)
per() { echo "scale=2; $(grep ",$1" "${2:-$w/perf}" | head -1 | cut -d, -f1)/$files" | bc; }
echo "$(basename "$bin") $tr: $files files, receiver $(echo "$u+$s" | bc) CPU-s (user $u, sys $s), $(echo "($u+$s)*1000000/$files" | bc) µs per file, max RSS $((m / 1024)) MiB;" \
  "per file $(per raw_syscalls:sys_enter) system calls, futex $(per syscalls:sys_enter_futex), nanosleep $(per syscalls:sys_enter_nanosleep)," \
  "epoll_pwait $(per syscalls:sys_enter_epoll_pwait), context switches $(per context-switches); sender $(echo "$su+$ss" | bc) CPU-s, $(echo "($su+$ss)*1000000/$files" | bc) µs and $(per raw_syscalls:sys_enter "$w/sperf") system calls per file; load $(cut -d' ' -f1-3 /proc/loadavg)"
