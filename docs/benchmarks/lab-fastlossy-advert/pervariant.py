#!/usr/bin/env python3
# Per-variant medians from a lab log run with alternate.sh: the lab's Ferry runs
# are numbered in log order; the wrapper's counter gives each one its variant.
import re, sys, statistics, collections
log, nvar, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(',')
rows = collections.defaultdict(list)
n = 0
for line in open(log):
    m = re.search(r'loss=(\S+)\s+A \S+ (ferry-\w+)\s+run \d+:\s+([\d.]+)s\s+([\d.]+) Mbit/s', line)
    if not m:
        continue
    rows[(m.group(1), m.group(2), names[n % nvar])].append(float(m.group(4)))
    n += 1
for k in sorted(rows):
    v = rows[k]
    print(f"{k[0]:>4} {k[1]:<10} {k[2]:<8} median {statistics.median(v):6.1f}  runs {' '.join(f'{x:.0f}' for x in v)}")
