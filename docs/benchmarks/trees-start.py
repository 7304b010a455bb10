#!/usr/bin/env python3
"""The start on a large tree (issue 30, "The start on D"): the time from the
sender's offer event (its walk done) to the receiver's `active` state, and
the CPU each side spends in it, for several ferry-cli builds in interleaved
rounds. docs/benchmarks/trees.md.

    docs/benchmarks/trees-start.py SRC ROUNDS OUTDIR CLI...

One round runs every CLI once, in turn: `receive --accept all --once --json`
(TCP, destination under /dev/shm) and `send --transport tcp --json SRC`.
The times are the events' own: the sender's offer event, the receiver's
pair event (the hello) and its `active` state. The hello is the sender's pair
event (the handshake done), "registered" the receiver's (the offer read and
checked, the transfer registered). The CPU (utime + stime from /proc, 10 ms
ticks) is each side's between the moment the sender's offer line is read
(the CLI prints the offer with its whole file list first, so this is late
by that printing) and the receiver's `active`. Both processes
get SIGTERM once `active` is seen, so the transfer itself is not run; with
FERRY_CPUPROFILE each writes its profile (OUTDIR/ROUND-NAME-{send,recv}.pprof)
then, which holds the start and a few ms of transfer.
"""
import json, os, shutil, signal, subprocess, sys, tempfile, threading, time
from datetime import datetime

src, rounds, outdir, clis = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
os.makedirs(outdir, exist_ok=True)
tick = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


def ts(line):
    t = json.loads(line)["time"]
    # Go writes nanoseconds; Python takes microseconds.
    day, frac = t.rstrip("Z").split(".")
    return datetime.fromisoformat(day).timestamp() + float("0." + frac)


def one(cli, tag):
    w = tempfile.mkdtemp(prefix="start-", dir="/dev/shm")
    name = os.path.basename(cli)
    renv = dict(os.environ, FERRY_CPUPROFILE=f"{outdir}/{tag}-{name}-recv.pprof")
    senv = dict(os.environ, FERRY_CPUPROFILE=f"{outdir}/{tag}-{name}-send.pprof")
    recv = subprocess.Popen([cli, "receive", "--config", f"{w}/recv", "--dir", f"{w}/dst", "--listen", "127.0.0.1:0",
                             "--accept", "all", "--once", "--json", "--no-discovery", "--localsend=false"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=renv)
    addr = None
    for line in recv.stdout:
        if line.startswith(b"listening"):
            addr = [f.split(b"=")[1] for f in line.split() if f.startswith(b"tcp=")][0].decode()
            break
    send = subprocess.Popen([cli, "send", "--config", f"{w}/send", "--to", addr, "--transport", "tcp", "--json", src],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=senv)
    got = {}

    def read_send():
        for line in send.stdout:
            if b'"kind":"offer"' in line and "offer" not in got:
                got["send_cpu_offer"], got["recv_cpu_offer"] = cpu(send.pid), cpu(recv.pid)
                got["offer"] = ts(line)
            if b'"kind":"pair"' in line and "hello" not in got:
                got["hello"] = ts(line)
        send.stdout.close()

    th = threading.Thread(target=read_send)
    th.start()
    for line in recv.stdout:
        if b'"kind":"pair"' in line and "registered" not in got:
            got["registered"] = ts(line)
        if b'"kind":"state"' in line and b'"state":"active"' in line:
            got["recv_cpu"], got["send_cpu_active"] = cpu(recv.pid), cpu(send.pid)
            got["active"] = ts(line)
            break
    for p in (send, recv):
        p.send_signal(signal.SIGTERM)
    for line in recv.stdout:
        pass
    th.join()
    send.wait()
    recv.wait()
    shutil.rmtree(w, ignore_errors=True)
    return got


print(f"# {src}, load {open('/proc/loadavg').read().split()[:3]}")
for r in range(1, rounds + 1):
    for cli in clis:
        g = one(cli, f"r{r}")
        print(f"round {r} {os.path.basename(cli)}: offer->active {g['active'] - g['offer']:.3f} s"
              f" (offer->hello {g['hello'] - g['offer']:.3f}, hello->registered {g['registered'] - g['hello']:.3f},"
              f" registered->active {g['active'] - g['registered']:.3f});"
              f" CPU from the offer line to active: sender {g['send_cpu_active'] - g['send_cpu_offer']:.2f} s,"
              f" receiver {g['recv_cpu'] - g['recv_cpu_offer']:.2f} s (of {g['recv_cpu']:.2f} since its start);"
              f" load {open('/proc/loadavg').read().split()[0]}", flush=True)
