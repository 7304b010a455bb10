#!/bin/bash
# Runs the binaries of VARIANTS (separated by ';') in turn, one per run: the
# counter moves on at each receive, the send that follows uses the same one.
D=${ALT_DIR:-/tmp/s33/lab}
C=$D/counter
if [ "$1" = receive ]; then n=$(( $(cat $C 2>/dev/null || echo -1) + 1 )); echo $n > $C; fi
n=$(cat $C)
IFS=';' read -ra V <<< "$VARIANTS"
b=${V[$(( n % ${#V[@]} ))]}
echo "$n $1 $b $(date -u +%T.%N)" >> $D/wrap.log
if [ "$1" = send ]; then
  $b "$@" | tee $D/out-$n.jsonl
  exit ${PIPESTATUS[0]}
fi
exec $b "$@"
