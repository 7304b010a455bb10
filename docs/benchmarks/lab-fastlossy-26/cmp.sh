#!/bin/bash
# Interleaved rounds: main's ferry-cli and this branch's, in turn, same cells.
B=/tmp/f32/ferry-bench
common="lab --rate 1000 --rtt 2ms --loss 0,0.5,1 --bursty=false --workloads A --bbr=false --budget 20s --timeout 120s"
for r in 1 2 3 4; do
  order="main new"; [ $((r%2)) = 0 ] && order="new main"
  for b in $order; do
    bin=/tmp/f32/ferry-cli; [ $b = main ] && bin=/tmp/f32/ferry-cli-main
    echo "== round $r $b $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
    $B $common --tools ferry-tcp,ferry-auto --runs 1 --ferry-cli $bin --out /tmp/f32/cmp/$b-$r 2>&1 | grep -v "^results"
  done
done
echo "== iperf3 $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
$B $common --tools iperf3-p16,iperf3-p32 --runs 1 --out /tmp/f32/cmp/iperf 2>&1 | grep -v "^results"
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
