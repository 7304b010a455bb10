#!/bin/bash
C=/tmp/lab30b/counter2
if [ "$1" = receive ]; then n=$(( $(cat $C 2>/dev/null || echo -1) + 1 )); echo $n > $C; fi
n=$(cat $C)
IFS=';' read -ra V <<< "$VARIANTS"
b=${V[$(( n % ${#V[@]} ))]}
echo "$RUNTAG $n $1 $b $(date -u +%T.%N)" >> /tmp/lab30b/wrap2.log
if [ "$1" = send ]; then
  $b "$@" | tee /tmp/lab30b/out-$RUNTAG-$n.jsonl
  exit ${PIPESTATUS[0]}
fi
exec $b "$@"
