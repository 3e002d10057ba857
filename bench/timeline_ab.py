#!/usr/bin/python3
"""Interleaved A/B of cold `sentry run`s by their SENTRY_TIMELINE segments.

  bench/timeline_ab.py ROUNDS SENTRY_A [SENTRY_B ...]   (CMD env: default /bin/true)

Each round runs `SENTRY run -- CMD` once per binary, in turn, with
SENTRY_TIMELINE set, and stamps the spawn and the reap on the same clock
(CLOCK_MONOTONIC). Prints, per segment (from the previous mark to this one:
`main` is spawn to main, `reaped` is the sentry's exit mark to the caller's
wait), the min, first quartile and median of each binary, and the load
average at the end. Finer than --timings (0.1 ms) and it sees the time outside
the phases; the first 3 rounds are a warm-up.
"""
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds, bins = int(sys.argv[1]), sys.argv[2:]
    cmd = os.environ.get("CMD", "/bin/true").split()
    segs = {b: collections.defaultdict(list) for b in bins}
    tl = os.path.join(tempfile.mkdtemp(prefix="timeline-ab-"), "timeline")
    for i in range(rounds + 3):
        for b in bins:
            if os.path.exists(tl):
                os.unlink(tl)
            env = dict(os.environ, SENTRY_TIMELINE=tl)
            t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            subprocess.run([b, "run", "--"] + cmd, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if i < 3:
                continue
            marks = [("spawn", t0)]
            with open(tl) as f:
                for line in f:
                    ns, _, event = line.split(None, 2)
                    marks.append((event.strip().replace(" ", "_"), int(ns)))
            marks.append(("reaped", t1))
            marks.sort(key=lambda m: m[1])
            for (_, a), (name, z) in zip(marks, marks[1:]):
                segs[b][name].append((z - a) / 1e6)
            segs[b]["TOTAL"].append((t1 - t0) / 1e6)
            time.sleep(0.02)
    os.unlink(tl)
    os.rmdir(os.path.dirname(tl))

    def q1(v):
        return sorted(v)[(len(v) - 1) // 4]

    print("%-14s" % "segment (ms)" + "".join("%30s" % os.path.basename(b) for b in bins))
    for name in segs[bins[0]]:
        row = "%-14s" % name
        for b in bins:
            v = segs[b].get(name)
            row += "  min %5.2f q1 %5.2f med %5.2f" % (min(v), q1(v), statistics.median(v)) if v else " " * 30
        print(row)
    print("load:", open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    main()
