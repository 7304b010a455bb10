#!/usr/bin/env python3
"""Splits a perf profile of a Ferry transfer into where the CPU goes, per process.

    perf record -F 1999 -g -o OUT.perf -- COMMAND   # COMMAND starts the receiver and the sender
    perf script -i OUT.perf -F pid,ip,sym | scripts/cpu-categories.py [--tree] [LABEL...]

Each sample is put in the first category below whose pattern matches a frame
of its stack (leaf to root), categories tried in this order; the processes
are printed in the order of their IDs (LABELs name them: the receiver starts
first). Processes with fewer than 100 samples (the shells, perf itself) are
left out. docs/benchmarks/loopback.md ("Where the CPU goes") shows the
output and what each category holds.

--tree splits by the system call or library a sample is under instead
(TREE_RULES), for a tree of many files such as workload D, where each
file's create, write, name and close are most of the receiver's work
(docs/benchmarks/trees.md, "The sender's reading of the receiver's results").
"""
import collections
import re
import sys

RULES = [(name, re.compile(pattern)) for name, pattern in [
    ("hash: BLAKE3", r"zeebo/blake3|lukechampine"),
    ("hash: CRC32C", r"crc32"),
    ("crypto: AES-GCM", r"gcmAes|aes\.encryptBlock|aes/gcm\.|ghash"),
    ("page faults (first touch of memory)", r"exc_page_fault"),
    ("kernel: copy to user", r"_copy_to_iter|copy_user_generic|_copy_to_user"),
    ("kernel: copy from user", r"_copy_from_iter|_copy_from_user"),
    ("user: memmove/memclr", r"^runtime\.memmove|^runtime\.memclrNoHeapPointers"),
    ("kernel: direct write (O_DIRECT pwrite)",
     r"iomap|blkdev|bio_|__blockdev_direct|ext4_dio|virtio_blk|submit_bio|gup_fast|pin_user_pages"),
    ("kernel: file read (page cache)", r"filemap_read|shmem_file_read|filemap_get"),
    ("kernel: TCP/UDP/IP",
     r"tcp_|udp_|ip_|__dev_queue|net_rx|skb|sock_|__netif|loopback_xmit|sendmsg|recvmsg|___sys_|inet_|mmsg"),
    ("scheduling: futex/epoll/sleep/switch",
     r"futex|epoll|nanosleep|schedule|finish_task_switch|try_to_wake_up|sched_yield|runtime\.usleep|runtime\.osyield"),
    ("go: GC", r"runtime\.gcBgMarkWorker|runtime\.gcDrain|runtime\.scanobject|runtime\.markroot|runtime\.bgsweep|runtime\.bgscavenge"),
    ("quic-go (its own code)", r"quic-go"),
    ("go: runtime", r"^runtime\.(?!goexit|main|mstart)"),
    ("ferry, crypto/tls, bufio and other Go code", r"ferrydrop|crypto/tls|bufio|^io\.|bytes\."),
]]


TREE_RULES = [(name, re.compile(pattern)) for name, pattern in [
    # A buffered write's first touch of each new page-cache page: on this VM
    # the host backs the page then (see trees.md).
    ("write: zeroing a new page's rest", r"zero_user_segments"),
    ("write: copy into the page cache", r"copy_folio_from_iter"),
    ("write: the rest of pwrite", r"sys_pwrite64"),
    ("openat (a source opened; a copy created, O_TMPFILE)", r"sys_openat"),
    ("name (linkat)", r"sys_linkat"),
    ("new folders (mkdirat)", r"sys_mkdirat"),
    ("fstatat (the walk; moved-folder checks)", r"sys_newfstatat|sys_statx"),
    ("close", r"sys_close"),
    ("list folders (getdents)", r"getdents"),
    ("read files (pread)", r"sys_pread64"),
    ("socket read", r"ksys_read|sys_read$"),
    ("socket write", r"ksys_write|sys_write$"),
    ("hash: BLAKE3", r"blake3"),
    ("hash: CRC32C", r"crc32"),
    ("crypto: AES-GCM", r"gcmAes|aes/gcm"),
    ("scheduling: futex/epoll/sleep/switch",
     r"futex|epoll|nanosleep|schedule|finish_task_switch|try_to_wake_up|runtime\.usleep|runtime\.osyield"),
    ("page faults (first touch of memory)", r"exc_page_fault"),
    ("go: GC", r"runtime\.gcBgMarkWorker|runtime\.gcDrain|runtime\.scanobject|runtime\.bgsweep|runtime\.bgscavenge"),
    ("user: memmove", r"^runtime\.memmove"),
    ("go: runtime", r"^runtime\.(?!goexit|main|mstart)"),
    ("ferry, crypto/tls, bufio and other Go code", r"ferrydrop|crypto/tls|bufio|^io\.|bytes\."),
]]


def category(stack, rules=RULES):
    for name, pattern in rules:
        if any(pattern.search(frame) for frame in stack):
            return name
    return "other"


def main():
    procs = collections.defaultdict(collections.Counter)
    pid, stack = None, []

    args = sys.argv[1:]
    rules = RULES
    if args[:1] == ["--tree"]:
        args, rules = args[1:], TREE_RULES

    def flush():
        if pid is not None:
            procs[pid][category(stack, rules)] += 1

    for line in sys.stdin:
        if not line.strip():
            flush()
            pid, stack = None, []
        elif not line.startswith("\t"):
            pid, stack = int(line.split()[0]), []
        else:
            parts = line.split(None, 1)
            if len(parts) == 2:
                stack.append(parts[1].strip().split(" (")[0].split("+0x")[0])
    flush()
    labels = args
    big = [p for p in sorted(procs) if sum(procs[p].values()) >= 100]
    for i, p in enumerate(big):
        counts = procs[p]
        total = sum(counts.values())
        label = labels[i] if i < len(labels) else "process"
        print(f"{label} (pid {p}): {total} samples")
        for name, n in counts.most_common():
            print(f"  {name:45s} {100 * n / total:5.1f} %")


if __name__ == "__main__":
    main()
