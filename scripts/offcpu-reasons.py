#!/usr/bin/env python3
"""How long a process's threads were off the CPU, and why.

    perf record -e sched:sched_switch -g -p PID -o OUT.data
    perf script -i OUT.data -F tid,time,event,trace,ip,sym | scripts/offcpu-reasons.py

Each switch-out of a recorded thread starts a wait that ends at the next
switch that runs the thread again; the wait is put under a reason: "D:"
(uninterruptible, the device or a kernel lock) with the first kernel
functions below the scheduler, "S: Go idle" (a futex, epoll or sleep: the Go
runtime waiting for work), other "S:" sleeps by their kernel functions, or
"R" (runnable, preempted: waiting for a CPU). Waits still open at the end are
left out. docs/benchmarks/trees-offcpu.sh runs it on a tree transfer.
"""
import collections
import re
import sys

SCHEDULER = {"__schedule", "schedule", "io_schedule", "schedule_timeout", "schedule_preempt_disabled",
             "io_schedule_timeout", "bit_wait_io", "schedule_hrtimeout_range_clock"}
GO_IDLE = re.compile(r"futex|epoll|nanosleep")
HEAD = re.compile(r"^\s*\S+\s+(\d+\.\d+): sched:sched_switch: .*prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)")


def events(lines):
    cur = None
    for line in lines:
        m = HEAD.match(line)
        if m:
            if cur:
                yield cur
            cur = (float(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4)), [])
        elif cur and line.strip():
            parts = line.split(None, 1)
            if len(parts) > 1:
                cur[4].append(parts[1].strip())
    if cur:
        yield cur


def reason(state, stack):
    kernel = [f for f in stack if "." not in f and "/" not in f and f not in SCHEDULER]
    if state.startswith("D"):
        return "D: " + " < ".join(kernel[:3])
    if state.startswith("S"):
        if any(GO_IDLE.search(f) for f in stack[:6]):
            return "S: Go idle (futex, epoll, sleep)"
        return "S: " + " < ".join(kernel[:2])
    return "R: preempted (waiting for a CPU)"


def main():
    waiting, total, count = {}, collections.Counter(), collections.Counter()
    first = last = None
    for t, prev, state, nxt, stack in events(sys.stdin):
        first = t if first is None else first
        last = t
        if nxt in waiting:
            start, why = waiting.pop(nxt)
            total[why] += t - start
            count[why] += 1
        waiting[prev] = (t, reason(state, stack))
    if first is None:
        sys.exit("no sched_switch events")
    print(f"span {last - first:.2f} s; thread-seconds off the CPU by reason:")
    for why, secs in sorted(total.items(), key=lambda kv: -kv[1])[:24]:
        print(f"{secs:8.2f} s {count[why]:7d}  {why}")


if __name__ == "__main__":
    main()
