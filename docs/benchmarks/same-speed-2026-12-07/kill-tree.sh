#!/bin/bash
# A receiver of 20,000 small files killed with SIGKILL at a random point (0.25-0.65 s after the
# send starts), started again, the send left to finish: counts files saved twice ("name (1).txt").
#   kill-tree.sh BIN RUNS TRANSPORT      (tree in /dev/shm/kt/src/T, made on the first run)
set -u
bin=$1; runs=$2; tp=$3
mkdir -p /dev/shm/kt && cd /dev/shm/kt || exit 1
if [ ! -d src/T ]; then
  python3 -c '
import os
for d in range(200):
    os.makedirs(f"src/T/{d}", exist_ok=True)
    for f in range(100):
        open(f"src/T/{d}/f{f}.txt", "wb").write(os.urandom(3000))
'
fi
dups=0
for r in $(seq "$runs"); do
  rm -rf dl cfg-r cfg-s; mkdir dl
  "$bin" receive --config cfg-r --dir dl --listen 127.0.0.1:47931 --accept all --once --no-discovery --localsend=false --name R > recv.out 2>&1 &
  rp=$!
  for _ in $(seq 500); do grep -q '^listening' recv.out 2>/dev/null && break; sleep 0.01; done
  "$bin" send --config cfg-s --to 127.0.0.1:47931 --transport "$tp" src/T > send.out 2>&1 &
  sp=$!
  sleep "0.$((RANDOM % 40 + 25))"
  kill -9 "$rp" 2>/dev/null; wait "$rp" 2>/dev/null
  got=$(find dl -type f | wc -l)
  "$bin" receive --config cfg-r --dir dl --listen 127.0.0.1:47931 --accept all --once --no-discovery --localsend=false --name R > recv2.out 2>&1 &
  rp=$!
  wait "$sp"; sc=$?
  ( sleep 10; kill "$rp" 2>/dev/null ) & wait "$rp"
  n=$(find dl -type f -name '*(1)*' | wc -l); tot=$(find dl -type f | wc -l)
  dups=$((dups + n))
  echo "run $r: $got files at the kill, sender exit $sc, $tot files, $n duplicates"
done
echo "duplicates in all: $dups"
