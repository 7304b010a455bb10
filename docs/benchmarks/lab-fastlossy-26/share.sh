#!/bin/bash
B=/tmp/f32/ferry-bench
for r in 1 2; do
  for tr in tcp auto; do
    order="new main"; [ $r = 2 ] && order="main new"
    for b in $order; do
      bin=/tmp/f32/ferry-cli; [ $b = main ] && bin=/tmp/f32/ferry-cli-main
      echo "== share round $r $tr $b $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
      $B share --rtt 2ms --rate 1000 --transport $tr --ferry-cli $bin 2>&1 | tail -8
    done
  done
done
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
