#!/usr/bin/env bash
# 10^6 empty files: accepted? Peak RSS (VmHWM) of both sides while the
# offer is read and for 60 s of the transfer. docs/benchmarks/trees.md.
#   docs/benchmarks/trees-million.sh [FERRY_CLI]
set -u
W=/dev/shm/trees/m
B=${1:-/tmp/trees-bin/ferry-cli}
# The default budget (128 MiB) refuses a million files: raise it to measure.
export FERRY_MANIFEST_BUDGET=4000000000
if [[ ! -d $W/tree ]]; then
  mkdir -p $W/tree
  for d in $(seq -w 0 999); do mkdir $W/tree/d$d; (cd $W/tree/d$d && seq -w 0 999 | sed 's/^/file-/' | xargs touch); done
fi
echo "files: $(find $W/tree -type f | wc -l)"
rm -rf $W/rcfg $W/scfg $W/out; mkdir -p $W/out
$B receive --config $W/rcfg --dir $W/out --accept all --once --no-discovery --listen 127.0.0.1:47931 --json > $W/recv.json 2>$W/recv.err &
RP=$!
sleep 1
start=$(date +%s.%N)
$B send --config $W/scfg --to 127.0.0.1:47931 --transport tcp --json $W/tree > $W/send.json 2>$W/send.err &
SP=$!
acc=""
for i in $(seq 1 900); do
  sleep 0.2
  rh=$(grep VmHWM /proc/$RP/status 2>/dev/null | awk '{print $2}'); sh=$(grep VmHWM /proc/$SP/status 2>/dev/null | awk '{print $2}')
  [[ -n $rh ]] && R=$rh; [[ -n $sh ]] && S=$sh
  if [[ -z $acc ]] && grep -q '"state":"active"' $W/send.json 2>/dev/null; then acc=$(echo "$(date +%s.%N) - $start" | bc); echo "accepted (sender active) after $acc s; peak RSS so far: send ${S} KB, recv ${R} KB"; fi
  if [[ -n $acc ]] && (( $(echo "$(date +%s.%N) - $start - $acc > 60" | bc) )); then break; fi
  kill -0 $SP 2>/dev/null || break
done
echo "after 60 s of transfer: peak RSS send ${S} KB, recv ${R} KB"
grep -o '"files":[0-9]*,"total_files":[0-9]*' $W/send.json | tail -1
kill -INT $SP 2>/dev/null; wait $SP; sleep 3; kill -INT $RP 2>/dev/null; wait $RP
tail -1 $W/send.json | cut -c1-300
