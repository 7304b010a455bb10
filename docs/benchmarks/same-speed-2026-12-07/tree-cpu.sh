#!/bin/bash
# Each side's CPU (task-clock, ms, perf stat) and the send's wall time for a tree sent over TCP to a
# receiver on tmpfs, builds in interleaved rounds:
#   tree-cpu.sh ROUNDS SRC BIN...      (SRC: 30,000 files of 1 KiB in 100 folders here, made with
#   python3 -c 'import os; [open(f"T/{d}/f{f}.txt","wb").write(os.urandom(1024)) for d in range(100)
#               if not os.makedirs(f"T/{d}", exist_ok=True) for f in range(300)]')
# Prints per run: build, receiver ms, sender ms, wall s, files received.
set -u
rounds=$1; src=$2; shift 2
mkdir -p /dev/shm/lz && cd /dev/shm/lz || exit 1
for _ in $(seq "$rounds"); do for bin in "$@"; do
  rm -rf dl cfg-r cfg-s; mkdir dl
  perf stat -x, -e task-clock -o rt.txt "$bin" receive --config cfg-r --dir dl --listen 127.0.0.1:0 --accept all --once --no-discovery --localsend=false --name R > recv.out 2>&1 &
  for _ in $(seq 500); do grep -q '^listening' recv.out 2>/dev/null && break; sleep 0.01; done
  addr=$(grep -o 'tcp=[^ ]*' recv.out | cut -d= -f2)
  s0=$(date +%s.%N)
  perf stat -x, -e task-clock -o st.txt "$bin" send --config cfg-s --to "$addr" --transport tcp "$src" >/dev/null 2>&1
  s1=$(date +%s.%N)
  wait
  echo "$(basename "$bin") $(grep task-clock rt.txt | cut -d, -f1) $(grep task-clock st.txt | cut -d, -f1) $(echo "$s1 - $s0" | bc) $(find dl -type f | wc -l)"
done; done
