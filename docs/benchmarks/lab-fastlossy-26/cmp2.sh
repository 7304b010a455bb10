#!/bin/bash
# More interleaved rounds, lossy cells only.
B=/tmp/f32/ferry-bench
common="lab --rate 1000 --rtt 2ms --loss 0.5,1 --bursty=false --workloads A --bbr=false --budget 20s --timeout 120s"
for r in 5 6 7 8; do
  order="main new"; [ $((r%2)) = 0 ] && order="new main"
  for b in $order; do
    bin=/tmp/f32/ferry-cli; [ $b = main ] && bin=/tmp/f32/ferry-cli-main
    echo "== round $r $b $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
    $B $common --tools ferry-tcp,ferry-auto --runs 1 --ferry-cli $bin --out /tmp/f32/cmp/$b-$r 2>&1 | grep -v "^results"
  done
done
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
