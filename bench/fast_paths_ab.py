#!/usr/bin/python3
"""A/B of a sentry fast path: the corpus's metadata workloads with it on and off.

  bench/fast_paths_ab.py SENTRY [--flag --no-fast-fd-identity] [--runs 5] [--count]
      [--census] [--only a,b]

Wall time: each workload RUNS times as `sentry run` (A, the default) and as
`sentry run FLAG` (B), interleaved run by run so that a shared machine's load
falls on both; medians and B/A. With --count, each workload runs once more per
side with perf's syscall tracepoints on every thread of the sentry (not its
guest), and the sentry's host syscalls are printed: all of them, the seccomp
ioctls (receive, reply, ID_VALID, ADDFD), the copies, pidfd_getfd, kcmp, ...
Those counts do not depend on the machine's load. With --census, each workload runs once
more per side under `sentry run --census` and the guest's trapped calls are
printed: all of them, and the stat family (stat, lstat, newfstatat, statx,
access, faccessat, faccessat2, readlink, readlinkat) by path; with
`--flag --fast-metadata`, 1 - B/A of the latter is the share the guest
answered without a trap.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
sys.path.insert(0, CORPUS)
import run_corpus  # noqa: E402  (the workloads, as docs/benchmarks.md runs them)

DEFAULT = ["python_pass", "stdlib_imports", "small_files_1000", "shell_pipeline_usr",
           "cpython_tests"]
COUNTED = ["ioctl", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "newfstatat",
           "close", "openat", "getdents64", "lseek", "clock_gettime"]
# Counted too, for the total of the sentry's own calls besides these.
TRACED = COUNTED + ["openat2", "mkdirat", "unlinkat", "futex", "newfstat"]


def argv(sentry, flag, name, delay=0.0):
    guest = run_corpus.guest_argv(run_corpus.WORKLOADS[name][1], "sentry", "/tmp")
    if delay:
        # Time for perf to attach before the workload's first call.
        guest = ["/bin/sh", "-c", f'sleep {delay}; exec "$@"', "sh"] + guest
    return run_corpus.sentry_prefix(sentry) + flag.split() + ["--"] + guest


def timed(cmd):
    start = time.monotonic()
    code = subprocess.call(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, cwd="/")
    return time.monotonic() - start, code


def counted(cmd):
    """The sentry's host syscalls during cmd, by name.

    Counted by the kernel's syscall tracepoints (perf stat -p on the sentry's
    threads), which neither slow the sentry nor depend on the load. strace -c
    did both: each call it stopped took long enough to pass the CPU share's
    clock gate (sentry/platform/notify_loop.cc), so every call read the clock.
    """
    events = ",".join(f"syscalls:sys_enter_{c}" for c in TRACED) + ",raw_syscalls:sys_enter"
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd="/")
    time.sleep(0.4)
    perf = subprocess.Popen(["perf", "stat", "--per-thread", "-x,", "-e", events, "-p",
                             str(p.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    code = p.wait()
    _, err = perf.communicate()
    # Rows are thread,count,,event,...: summed over the sentry's threads, and
    # the notification threads' (sentry-notify) apart as notify_total: the
    # calls a trapped guest waits for (the stash's thread works ahead).
    calls = {}
    for line in err.splitlines():
        parts = line.split(",")
        if len(parts) > 3 and parts[1].strip().isdigit():
            name = parts[3].split(":")[-1].replace("sys_enter_", "")
            name = "total" if name == "sys_enter" else name
            calls[name] = calls.get(name, 0) + int(parts[1])
            if name == "total" and parts[0].startswith("sentry-notify"):
                calls["notify_total"] = calls.get("notify_total", 0) + int(parts[1])
    return calls, code


STAT_FAMILY = ["stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2",
               "readlink", "readlinkat"]


def census(cmd):
    """The guest's trapped calls by syscall name (sentry run --census)."""
    out = tempfile.NamedTemporaryFile(prefix="sentry-ab-census.", delete=False).name
    cmd = cmd[:2] + ["--census", out] + cmd[2:]
    subprocess.call(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, cwd="/")
    import json
    with open(out) as f:
        rows = json.load(f)["syscalls"]
    os.unlink(out)
    return {r["name"]: r["trapped"] for r in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--flag", default="--no-fast-fd-identity")
    # A's own flags (default none): e.g. --base "--fast-metadata --no-fast-listings".
    ap.add_argument("--base", default="")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only")
    ap.add_argument("--count", action="store_true")
    ap.add_argument("--census", action="store_true")
    args = ap.parse_args()
    args.sentry = os.path.abspath(args.sentry)
    names = args.only.split(",") if args.only else DEFAULT
    print(f"load average at start: {os.getloadavg()}")
    print(f"A: sentry run {args.base}; B: sentry run {args.flag}\n")
    if args.runs:
        print("| workload | A median | B median | B/A | A samples | B samples |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name in names:
            runs = max(1, args.runs // 2) if name == "cpython_tests" else args.runs
            a, b = [], []
            for cmd in (argv(args.sentry, args.base, name), argv(args.sentry, args.flag, name)):
                timed(cmd)  # warm-up
            for _ in range(runs):
                for side, flag in ((a, args.base), (b, args.flag)):
                    t, code = timed(argv(args.sentry, flag, name))
                    if code != 0:
                        print(f"{name}: exit {code}", file=sys.stderr)
                    side.append(t)
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"| {name} | {ma * 1000:.0f} ms | {mb * 1000:.0f} ms | {mb / ma:.2f} | "
                  f"{' '.join(f'{x * 1000:.0f}' for x in a)} | "
                  f"{' '.join(f'{x * 1000:.0f}' for x in b)} |")
    if args.count:
        print("\nHost syscalls of the sentry (perf tracepoints on its threads), A / B:\n")
        print("| workload | total | notification thread | " + " | ".join(COUNTED) + " |")
        print("| --- | --- | --- | " + " | ".join("---" for _ in COUNTED) + " |")
        for name in names:
            ca, _ = counted(argv(args.sentry, args.base, name, delay=1))
            cb, _ = counted(argv(args.sentry, args.flag, name, delay=1))
            cells = [f"{ca.get(c, 0)} / {cb.get(c, 0)}" for c in ("total", "notify_total")]
            cells += [f"{ca.get(c, 0)} / {cb.get(c, 0)}" for c in COUNTED]
            print(f"| {name} | " + " | ".join(cells) + " |")
    if args.census:
        print("\nThe guest's trapped calls (sentry run --census), A / B:\n")
        print("| workload | trapped | stat family | stat family without a trap (1 - B/A) "
              "| getdents64 | openat |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name in names:
            ca = census(argv(args.sentry, args.base, name))
            cb = census(argv(args.sentry, args.flag, name))
            sa = sum(ca.get(c, 0) for c in STAT_FAMILY)
            sb = sum(cb.get(c, 0) for c in STAT_FAMILY)
            share = f"{100 * (1 - sb / sa):.0f} %" if sa else "-"
            print(f"| {name} | {sum(ca.values())} / {sum(cb.values())} | {sa} / {sb} | {share} | "
                  f"{ca.get('getdents64', 0)} / {cb.get('getdents64', 0)} | "
                  f"{ca.get('openat', 0)} / {cb.get('openat', 0)} |")
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
