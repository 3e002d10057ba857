#!/usr/bin/env python3
"""What the Landlock wall costs: a small corpus run with and without it.

usage: bench/landlock_cost.py SENTRY_BINARY [RUNS] [--no-namespaces]

Each workload runs RUNS times (default 30) with the guest's Landlock domain
and RUNS times with --no-landlock, interleaved run by run (so a busy moment
of the machine falls on both), after 3 warm-up runs of each. Prints a
markdown table of medians and quartiles (ms of wall time of the whole
`sentry run`) and the ratio of the medians. Expected: within noise (Landlock
adds no trap; its checks run in the kernel at the few opens it sees).
"""
import statistics
import subprocess
import sys
import time

PY = "/usr/bin/python3"
CORPUS = [
    ("python3 -c pass", [PY, "-c", "pass"]),
    ("imports", [PY, "-c", "import json, decimal, email.parser, xml.dom.minidom, sqlite3, "
                           "asyncio, http.client, unittest, argparse, csv, hashlib"]),
    ("sh pipeline over /usr", ["/bin/sh", "-c",
                               "ls /usr/bin | sort -r | head -100 | wc -l > /dev/null; "
                               "cat /usr/share/common-licenses/GPL-3 | tr a-z A-Z | wc -w > /dev/null"]),
    ("exec of an in-memory script", ["/bin/sh", "-c",
                                     "printf '#!/bin/sh\\nexit 0\\n' > /tmp/s; chmod +x /tmp/s; "
                                     "for i in 1 2 3 4 5 6 7 8 9 10; do /tmp/s; done"]),
]


def once(argv):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(argv)}")
    return ms


def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    sentry, runs = args[0], int(args[1]) if len(args) > 1 else 30
    extra = ["--no-namespaces"] if "--no-namespaces" in sys.argv else []
    print(f"{'without namespaces' if extra else 'with namespaces'}, {runs} interleaved runs each\n")
    print("| workload | Landlock (ms, median [q1-q3]) | --no-landlock | ratio |")
    print("| --- | --- | --- | --- |")
    for name, cmd in CORPUS:
        on = [sentry, "run", *extra, "--", *cmd]
        off = [sentry, "run", *extra, "--no-landlock", "--", *cmd]
        for _ in range(3):
            once(on)
            once(off)
        a, b = [], []
        for i in range(runs):
            # Alternate which goes first, so neither always follows the other.
            if i % 2:
                a.append(once(on))
                b.append(once(off))
            else:
                b.append(once(off))
                a.append(once(on))
        qa, qb = quartiles(a), quartiles(b)
        print(f"| {name} | {qa[1]:.1f} [{qa[0]:.1f}-{qa[2]:.1f}] | "
              f"{qb[1]:.1f} [{qb[0]:.1f}-{qb[2]:.1f}] | {qa[1] / qb[1]:.3f} |")


if __name__ == "__main__":
    main()
