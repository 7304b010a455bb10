#!/usr/bin/env bash
# One transfer of a tree between two ferry-cli processes on loopback, with
# perf recording the whole machine (CPU samples with call stacks), then the
# CPU each process used in half-second steps and the share of the samples in
# ext4's search past recently deleted inodes. docs/benchmarks/trees.md, "Why
# D's rounds spread".
#   docs/benchmarks/trees-perf.sh FERRY_CLI SRC DSTBASE OUT.data
# The destination stays (a deletion would slow the next run's creates for
# minutes: see trees.md); remove DSTBASE/perf-* when done.
set -euo pipefail
bin=$1 src=$2 base=$3 out=$4
w=$(mktemp -d "$base/perf-XXXX")
mkdir -p "$w/dst"
"$bin" receive --config "$w/recv" --dir "$w/dst" --listen 127.0.0.1:0 --accept all --once --no-discovery --localsend=false >"$w/rout" 2>"$w/rerr" &
rp=$!
for _ in $(seq 200); do grep -q '^listening' "$w/rout" 2>/dev/null && break; sleep 0.05; done
addr=$(grep '^listening' "$w/rout" | grep -o '127.0.0.1:[0-9]*' | tail -1)
echo "receiver pid $rp"
perf record -q -e cpu-clock -F 999 -a -g -o "$out" -- \
  /usr/bin/time -f '%e s wall' "$bin" send --config "$w/send" --to "$addr" --transport tcp "$src" >"$w/sout" 2>"$w/serr"
wait $rp
echo "$(tail -1 "$w/serr"), $(find "$w/dst" -type f | wc -l) files landed"
echo "CPU by process, half-second steps (100 % = one CPU):"
perf script -i "$out" -F pid,time 2>/dev/null | awk '{t=$2; sub(":","",t); if(!t0) t0=t; b=int((t-t0)*2); c[b","$1]++; if(b>mb)mb=b; p[$1]=1}
  END{for(b=0;b<=mb;b++){printf "%5.1fs", b/2; for(q in p) if (c[b","q]>20) printf "  %s:%3d%%", (q==0?"idle":q), c[b","q]*100/500; printf "\n"}}'
echo "samples under ext4's recently_deleted (all processes):"
perf report -i "$out" --children --sort sym --stdio 2>/dev/null | grep -E '\] (recently_deleted|ext4_tmpfile|__x64_sys_pwrite64)$' || true
