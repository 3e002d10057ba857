#!/usr/bin/python3
"""Interleaved A/B rounds run only while the machine is otherwise idle.

  bench/quiet_ab.py [--idle PCT] [--minutes M] [--rounds N] OUT.jsonl \
      'LABEL=CMD ARGS...' 'LABEL=CMD ARGS...' ...
  bench/quiet_ab.py --summary OUT.jsonl

On a shared 2-vCPU machine a wall time depends on what else runs, and a
change to where tasks run (sentry/kernel/colocation.h) shows only when the
vCPUs are idle. So before each round this samples /proc/stat for 0.7 s and
runs the round only if at least PCT % (default 75) of that time was idle;
otherwise it samples again. A round runs every command once, in turn (the
order reversed every other round), and appends one JSON line to OUT: the
time, the idle share before and after, and each label's wall time in ms.
It stops after N rounds or M minutes. --summary prints, per label, the
median, minimum and maximum of the rounds in OUT.
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)  # idle + iowait, all


def idle_percent(seconds):
    a = cpu_times()
    time.sleep(seconds)
    b = cpu_times()
    return (b[0] - a[0]) * 100.0 / max(1, b[1] - a[1])


def summary(path):
    rows = [json.loads(line) for line in open(path)]
    print(f"{len(rows)} rounds, {rows[0]['t']} to {rows[-1]['t']}" if rows else "no rounds")
    labels = [k for k in (rows[0] if rows else {}) if k not in ("t", "idle", "idle_after")]
    for k in labels:
        v = [r[k] for r in rows if k in r]
        print(f"{k:>16}: median {statistics.median(v):8.1f} ms  min {min(v):8.1f}  "
              f"max {max(v):8.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--idle", type=float, default=75.0)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=0, help="0: until --minutes")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("out")
    ap.add_argument("commands", nargs="*")
    a = ap.parse_args()
    if a.summary:
        summary(a.out)
        return
    cmds = []
    for c in a.commands:
        label, _, cmd = c.partition("=")
        if not cmd:
            sys.exit(f"not LABEL=CMD: {c}")
        cmds.append((label, shlex.split(cmd)))
    until = time.time() + a.minutes * 60
    done = 0
    with open(a.out, "a") as f:
        while time.time() < until and (a.rounds == 0 or done < a.rounds):
            idle = idle_percent(0.7)
            if idle < a.idle:
                continue
            order = cmds if done % 2 == 0 else list(reversed(cmds))
            row = {"t": time.strftime("%H:%M:%S"), "idle": round(idle, 1)}
            for label, argv in order:
                t0 = time.perf_counter()
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                row[label] = round((time.perf_counter() - t0) * 1000, 1)
            row["idle_after"] = round(idle_percent(0.3), 1)
            f.write(json.dumps(row) + "\n")
            f.flush()
            done += 1
    summary(a.out)


if __name__ == "__main__":
    main()
