#!/usr/bin/env python3
"""The floor of a session fork (issue 26): what the Linux fork alone costs,
natively, with no sentry: a Python holding a 100 MB pandas DataFrame forks
(raw clone via ctypes, wrapped in PyOS_BeforeFork / PyOS_AfterFork_* as
os.fork is) plainly and into six new namespaces (user, pid, net, ipc, uts,
mnt), the set a forked session's child gets (sentry/session/FORK.md).

    /usr/bin/python3 bench/session_fork_floor.py [--mib 100] [--children 100]

- one fork: time until clone returns in the parent, p50/p90 of 40;
- per namespace: which flag costs what (a small process);
- N children held alive together: the time to make them all, a child's PSS
  and Private_Dirty (smaps_rollup) after it touched one value, the parent's.
Run as root or as a user who may make user namespaces. A session fork adds
the sentry's part to this floor (re-listen, ptrace hand-off, the VFS copy).
"""
import argparse
import ctypes
import os
import statistics
import time

SYS_CLONE = 56
SIGCHLD = 17
FLAGS = {"user": 0x10000000, "pid": 0x20000000, "net": 0x40000000, "ipc": 0x08000000,
         "uts": 0x04000000, "mnt": 0x00020000}
ALL_NS = sum(FLAGS.values())

libc = ctypes.CDLL(None, use_errno=True)
py = ctypes.pythonapi


def raw_fork(flags):
    py.PyOS_BeforeFork()
    pid = libc.syscall(SYS_CLONE, ctypes.c_ulong(flags | SIGCHLD), None, None, None, None)
    if pid == 0:
        py.PyOS_AfterFork_Child()
    else:
        py.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone")
    return pid


CPU = []  # the parent's thread CPU time of each timed fork, ms (steadier than wall on a busy machine)


def timed_fork(flags, child):
    c0, t0 = time.thread_time(), time.perf_counter()
    pid = raw_fork(flags)
    if pid == 0:
        child()
        os._exit(0)
    CPU.append((time.thread_time() - c0) * 1e3)
    return pid, (time.perf_counter() - t0) * 1e3


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Pss", "Private_Dirty"):
                out[key] = int(value.split()[0]) / 1024
    return out


def p50_p90(values):
    values = sorted(values)
    return statistics.median(values), values[int(len(values) * 0.9) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--children", type=int, default=100)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")

    for name, flags in [("none", 0)] + [(f"user|{k}" if k != "user" else "user",
                                         FLAGS["user"] | FLAGS[k]) for k in FLAGS] + [("all six", ALL_NS)]:
        times = []
        for _ in range(40):
            pid, ms = timed_fork(flags, lambda: None)
            os.waitpid(pid, 0)
            times.append(ms)
        print("small process, %-9s one fork p50 %.2f ms, p90 %.2f ms" % ((name,) + p50_p90(times)))

    import numpy as np
    import pandas as pd
    df = pd.DataFrame(np.random.rand(args.mib * 2**20 // 32, 4))
    print(f"DataFrame {df.memory_usage().sum() / 2**20:.0f} MiB")
    for name, flags in (("plain", 0), ("six namespaces", ALL_NS)):
        times = []
        del CPU[:]
        for _ in range(40):
            pid, ms = timed_fork(flags, lambda: None)
            os.waitpid(pid, 0)
            times.append(ms)
        print("%s: one fork p50 %.2f ms, p90 %.2f ms (CPU p50 %.2f ms)"
              % ((name,) + p50_p90(times) + (statistics.median(CPU),)))
        rfd, wfd = os.pipe()

        def held():
            float(df.iloc[0, 0])
            os.read(rfd, 1)

        t0 = time.perf_counter()
        pids = [timed_fork(flags, held)[0] for _ in range(args.children)]
        made = (time.perf_counter() - t0) * 1e3
        time.sleep(0.3)
        child = [rollup(p) for p in pids[:5]]
        print(f"  {args.children} children: {made:.0f} ms in all; a child's PSS "
              f"{statistics.median(c['Pss'] for c in child):.1f} MiB, Private_Dirty "
              f"{statistics.median(c['Private_Dirty'] for c in child):.2f} MiB; the parent's PSS "
              f"{rollup(os.getpid())['Pss']:.1f} MiB")
        os.write(wfd, b"x" * len(pids))
        for p in pids:
            os.waitpid(p, 0)
        os.close(rfd)
        os.close(wfd)


if __name__ == "__main__":
    main()
