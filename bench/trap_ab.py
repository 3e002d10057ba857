#!/usr/bin/python3
"""A trapped call's cost with a sentry run flag off (A) and on (B), in one run.

  bench/trap_ab.py BUILD_DIR [--flag --no-fast-trap] [--rounds 5] [--filter REGEX]

Rounds interleave: the floor (bench_unotify's unotify/sync/recv/plain), then
bench_native_ops under `sentry run` (A) and `sentry run FLAG` (B), so that a
shared machine's load falls on all three alike; native bench_native_ops runs
once per round too (in a mount namespace with a tmpfs /tmp, as coverage.sh
does). Each figure is the minimum over rounds (load only ever adds), and a
trapped call's cost in round trips of the floor is (sentry - native) / floor,
as docs/benchmarks.md reads it (one trapped call per iteration here).

Then, per side, the sentry's host syscalls per call, counted by the kernel's
syscall tracepoints (`perf stat -e syscalls:sys_enter_*` on the sentry
process; strace would slow each call past the CPU-share clock's interval and
so change what it counts): independent of the machine's load.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

COUNTED = ["ioctl", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
           "newfstatat", "close", "clock_gettime"]
LOOP_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int n = atoi(argv[2]);
  struct stat st;
  usleep(300000);  /* perf attaches */
  int fd = open(argv[3], O_RDONLY);
  for (int i = 0; i < n; i++) {
    if (!strcmp(argv[1], "stat")) stat(argv[3], &st);
    else fstat(fd, &st);
  }
  return 0;
}
"""


def gbench(cmd, filt):
    out = subprocess.run(cmd + [f"--benchmark_filter={filt}", "--benchmark_format=json",
                                "--benchmark_min_time=0.2"],
                         capture_output=True, text=True, cwd="/")
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    js = json.loads(out.stdout[out.stdout.index("{"):])
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    return {b["name"].replace("/manual_time", ""): b["real_time"] * scale[b.get("time_unit", "ns")]
            for b in js["benchmarks"]}


def sentry_cmd(build, flag, *guest):
    return [os.path.join(build, "sentry/sentry"), "run", "--timeout", "0"] + \
        ([flag] if flag else []) + list(guest)


def count(build, flag, loop, mode, target, n=20000):
    events = ",".join(f"syscalls:sys_enter_{c}" for c in COUNTED) + \
        ",raw_syscalls:sys_enter,task-clock"
    p = subprocess.Popen(sentry_cmd(build, flag, "--copy", f"{loop}:/tmp/loop", "--",
                                    "/tmp/loop", mode, str(n), target),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    time.sleep(0.15)
    # -p follows the process's threads at attach time: the notification
    # thread exists once the guest runs.
    perf = subprocess.Popen(["perf", "stat", "-x,", "-e", events, "-p", str(p.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    p.wait()
    _, err = perf.communicate()
    calls = {}
    for line in err.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] == "task-clock":
            calls["cpu_us"] = float(parts[0]) * 1e3 / n  # msec in all
        elif len(parts) > 2 and parts[0].strip().isdigit():
            name = parts[2].split(":")[-1].replace("sys_enter_", "")
            calls["total" if name == "sys_enter" else name] = int(parts[0]) / n
    return calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--flag", default="--no-fast-trap")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default="BM_StatUsrBinPython3|BM_FstatOpenFd|BM_Getpid")
    ap.add_argument("--no-count", action="store_true")
    ap.add_argument("--count-only", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    ops = os.path.join(build, "bench/bench_native_ops")
    unotify = os.path.join(build, "bench/bench_unotify")
    print(f"load average at start: {os.getloadavg()}")
    best = {}

    def keep(side, res):
        for k, v in res.items():
            best.setdefault(side, {})
            best[side][k] = min(best[side].get(k, v), v)

    native = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs t /tmp && exec "$@"', "sh", ops]
    guest = ["--copy", f"{ops}:/tmp/bench_native_ops", "--", "/tmp/bench_native_ops"]
    for r in range(0 if args.count_only else args.rounds):
        keep("floor", gbench([unotify], "unotify/sync/recv/plain/"))
        keep("native", gbench(native, args.filter))
        keep("A", gbench(sentry_cmd(build, args.flag, *guest), args.filter))
        keep("B", gbench(sentry_cmd(build, "", *guest), args.filter))
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    floor = best["floor"]["unotify/sync/recv/plain"] if best else 0
    if floor:
        print(f"\nfloor (RT) {floor:.0f} ns; A: sentry run {args.flag}; B: sentry run; "
              f"minimum of {args.rounds} rounds\n")
        print("| benchmark | native ns | A ns | B ns | A RT | B RT |")
        print("| --- | --- | --- | --- | --- | --- |")
    for name in sorted(best.get("native", {})):
        n, a, b = best["native"][name], best["A"].get(name), best["B"].get(name)
        if a is None or b is None:
            continue
        print(f"| {name} | {n:.0f} | {a:.0f} | {b:.0f} | {(a - n) / floor:.2f} | "
              f"{(b - n) / floor:.2f} |")
    if not args.no_count:
        with tempfile.TemporaryDirectory() as d:
            src, loop = os.path.join(d, "loop.c"), os.path.join(d, "loop")
            with open(src, "w") as f:
                f.write(LOOP_C)
            subprocess.run(["cc", "-O2", "-o", loop, src], check=True)
            print("\nHost syscalls of the sentry per trapped call (perf tracepoints), A / B:\n")
            print("| call | sentry CPU µs | total | " + " | ".join(COUNTED) + " |")
            print("| --- | --- | --- | " + " | ".join("---" for _ in COUNTED) + " |")
            for mode, target in (("stat", "/usr/bin/python3"), ("fstat", "/usr/lib/os-release")):
                ca = count(build, args.flag, loop, mode, target)
                cb = count(build, "", loop, mode, target)
                cells = [f"{ca.get(c, 0):.2f} / {cb.get(c, 0):.2f}"
                         for c in ["cpu_us", "total"] + COUNTED]
                print(f"| {mode} | " + " | ".join(cells) + " |")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
