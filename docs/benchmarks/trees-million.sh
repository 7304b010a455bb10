#!/usr/bin/env bash
# 10^6 empty files: accepted? Peak RSS (VmHWM) of both sides while the
# offer is read and for 60 s of the transfer, and their CPU seconds.
# docs/benchmarks/trees.md.
#   docs/benchmarks/trees-million.sh [FERRY_CLI] [WORKDIR]
# The tree (1000 folders x 1000 empty files) is made once in WORKDIR (on
# tmpfs by default: 10^6 inodes cost about 1 GB of RAM, no disk writes) and
# kept for the next run; rm -rf WORKDIR when done. HEAP=1 writes heap
# profiles of both sides (WORKDIR/recv.heap, send.heap) 20 s after the offer
# was accepted (FERRY_HEAPPROFILE, SIGUSR1; with FULL=1 the receiver's only,
# as SIGUSR1 pauses a sender). FULL=1 waits for the whole tree
# (not 60 s of it) and checks that it arrived exact: every file and folder,
# each file's size. TREE=DIR sends DIR instead of the million files (workload
# D: scripts/workload-d.sh DIR).
set -u
B=${1:-/tmp/trees-bin/ferry-cli}
W=${2:-/dev/shm/trees/m}
# The default budget takes a million files since the list spills to disk
# (issue 30); builds before refuse them: FERRY_MANIFEST_BUDGET=4000000000
# raises it for them.
export FERRY_MANIFEST_BUDGET=${FERRY_MANIFEST_BUDGET:-}
T=${TREE:-$W/tree}
N=$(basename $T)
if [[ ! -d $T ]]; then
  mkdir -p $W/tree
  for d in $(seq -w 0 999); do mkdir $W/tree/d$d; (cd $W/tree/d$d && seq -w 0 999 | sed 's/^/file-/' | xargs touch); done
fi
echo "files: $(find $T -type f | wc -l)"
rm -rf $W/rcfg $W/scfg $W/out; mkdir -p $W/out
H=${HEAP:-}
/usr/bin/time -f 'receiver CPU %U user %S sys, max RSS %M KB' -o $W/recv.time \
  env ${H:+FERRY_HEAPPROFILE=$W/recv.heap} $B receive --config $W/rcfg --dir $W/out --accept all --once --no-discovery --localsend=false --listen 127.0.0.1:0 > $W/recv.out 2>$W/recv.err &
TP=$!
for i in $(seq 1 100); do grep -q 'tcp=127' $W/recv.out 2>/dev/null && break; sleep 0.1; done
TO=$(grep -o 'tcp=127.0.0.1:[0-9]*' $W/recv.out | head -1 | cut -d= -f2)
for i in $(seq 1 100); do RP=$(pgrep -P $TP | head -1); [[ -n $RP ]] && break; sleep 0.1; done
start=$(date +%s.%N)
/usr/bin/time -f 'sender CPU %U user %S sys, max RSS %M KB' -o $W/send.time \
  env ${H:+FERRY_HEAPPROFILE=$W/send.heap} $B send --config $W/scfg --to $TO --transport tcp --json $T > $W/send.json 2>$W/send.err &
ST=$!
for i in $(seq 1 100); do SP=$(pgrep -P $ST | head -1); [[ -n $SP ]] && break; sleep 0.1; done
acc=""
R=0; S=0
for i in $(seq 1 3000); do
  sleep 0.2
  rh=$(grep VmHWM /proc/$RP/status 2>/dev/null | awk '{print $2}'); sh=$(grep VmHWM /proc/$SP/status 2>/dev/null | awk '{print $2}')
  [[ -n $rh ]] && R=$rh; [[ -n $sh ]] && S=$sh
  if [[ -z $acc ]] && grep -q '"state":"active"' $W/send.json 2>/dev/null; then acc=$(echo "$(date +%s.%N) - $start" | bc); echo "accepted (sender active) after $acc s; peak RSS so far: send ${S} KB, recv ${R} KB"; fi
  if [[ -n $H && -n $acc && ! -e $W/heap.taken ]] && (( $(echo "$(date +%s.%N) - $start - $acc > 20" | bc) )); then
    # SIGUSR1 also pauses a sender (ferry-cli send): with FULL=1 only the receiver's is taken.
    if [[ -n ${FULL:-} ]]; then kill -USR1 $RP; else kill -USR1 $RP $SP; fi
    touch $W/heap.taken; echo "heap profiles taken"
  fi
  if [[ -z ${FULL:-} && -n $acc ]] && (( $(echo "$(date +%s.%N) - $start - $acc > 60" | bc) )); then break; fi
  kill -0 $SP 2>/dev/null || break
done
echo "after 60 s of transfer (or the end): peak RSS send ${S} KB, recv ${R} KB, $(echo "$(date +%s.%N) - $start" | bc) s after the send started"
grep -o '"files_done":[0-9]*,"total_files":[0-9]*' $W/send.json | tail -1
if [[ -n ${FULL:-} ]]; then
  # Exact: the same folders and files, each of the same size.
  if diff <(cd $T && find . -printf '%y %s %p\n' | grep -v '^d' | sort) <(cd $W/out/$N 2>/dev/null && find . -printf '%y %s %p\n' | grep -v '^d' | sort) >/dev/null &&
     diff <(cd $T && find . -type d | sort) <(cd $W/out/$N 2>/dev/null && find . -type d | sort) >/dev/null; then
    echo "the tree arrived exact: $(find $W/out/$N -type f | wc -l) files"
  else
    echo "the tree did NOT arrive exact: $(find $W/out/$N -type f 2>/dev/null | wc -l) files"
  fi
fi
kill -INT $SP 2>/dev/null; wait $ST; sleep 3; kill -INT $RP 2>/dev/null; wait $TP
cat $W/send.time $W/recv.time
tail -1 $W/send.json | cut -c1-300
rm -rf $W/out $W/rcfg $W/scfg $W/heap.taken
