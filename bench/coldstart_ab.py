#!/usr/bin/python3
"""Interleaved A/B of cold starts: wall time, CPU and --timings phases.

  bench/coldstart_ab.py [--runs N] [--warmup N] [--gap-ms MS] \
      'LABEL=CMD ARGS...' 'LABEL=CMD ARGS...' ...

Each round runs every command once, in turn (so the machine's drift falls on
all alike), with --gap-ms between runs. For each command it prints the median
and quartiles of the wall time, the median CPU (user + system of the whole
process tree, from wait4), and, when the command prints a `sentry: timings
(ms): ...` line on stderr (--timings), the median of each phase. The load
average is printed before and after.
"""
import argparse
import os
import re
import shlex
import statistics
import sys
import time

TIMINGS = re.compile(rb"sentry: timings \(ms\):(.*)")


def run_once(argv):
    r, w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDWR)
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                                       (os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, w, 2)])
    os.close(w)
    err = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        err += chunk
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    os.close(r)
    os.close(devnull)
    phases = {}
    m = TIMINGS.search(err)
    if m:
        for part in m.group(1).decode().split(","):
            part = part.strip()
            if not part:
                continue
            name, _, ms = part.rpartition(" ")
            phases[name] = phases.get(name, 0.0) + float(ms)
    code = os.waitstatus_to_exitcode(status)
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3, phases, code, err


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return xs[0], statistics.median(xs), xs[-1]
    q = statistics.quantiles(xs, n=4)
    return q[0], q[1], q[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--gap-ms", type=float, default=20)
    ap.add_argument("commands", nargs="+")
    a = ap.parse_args()
    cmds = []
    for c in a.commands:
        label, _, cmd = c.partition("=")
        cmds.append((label, shlex.split(cmd)))
    print("load before:", open("/proc/loadavg").read().strip())
    res = {label: [] for label, _ in cmds}
    for i in range(a.warmup + a.runs):
        for label, argv in cmds:
            wall, cpu, phases, code, err = run_once(argv)
            if code != 0:
                sys.stderr.write(f"{label}: exit {code}: {err.decode(errors='replace')[-400:]}\n")
            if i >= a.warmup:
                res[label].append((wall, cpu, phases))
            time.sleep(a.gap_ms / 1e3)
    print("load after: ", open("/proc/loadavg").read().strip())
    base = None
    for label, _ in cmds:
        rows = res[label]
        q1, med, q3 = quartiles([r[0] for r in rows])
        cpu = statistics.median(r[1] for r in rows)
        if base is None:
            base = med
        print(f"{label:>14}: wall {med:7.2f} ms [{q1:.2f} {q3:.2f}] min {min(r[0] for r in rows):.2f}"
              f"  cpu {cpu:6.2f} ms  x{med / base:.3f}")
        names = []
        for r in rows:
            for n in r[2]:
                if n not in names:
                    names.append(n)
        if names:
            parts = []
            for n in names:
                parts.append(f"{n} {statistics.median(r[2].get(n, 0.0) for r in rows):.2f}")
            print(" " * 16 + ", ".join(parts))


if __name__ == "__main__":
    main()
