#!/usr/bin/env python3
"""Figures of a session fork (issue 26) through `sentry serve`, end to end
over loopback HTTP (POST /v1/sessions/{id}/fork), in one run:

    /usr/bin/python3 bench/session_fork.py build/sentry/sentry [--forks 20] [--many 10]

- fork 1: p50/p99 of --forks forks of one child from a session holding a
  100 MB pandas DataFrame (request sent to the answer read: the children's
  supervisors started, the kernel's clone, the parent's re-listen, the
  hand-off, the child's `forked`), each child deleted after;
- fork N: --many children at once, the whole request;
- PSS: each child's kernel's PSS (smaps_rollup) right after the fork and
  after a cell that reads the whole DataFrame, and the parent's;
- a cell (`df.shape`) in a child right after the fork, beside one in the parent.
As root (a fork's child supervisor maps its ids as root only).
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from session import Server, pct, descendants, pss_kib  # noqa: E402


def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def ppid(pid):
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rfind(")") + 2:].split()[1])


def kernels(server_pid):
    """The host pids of the session kernels: {pid: its parent's pid}."""
    out = {}
    for pid in descendants(server_pid):
        if comm(pid).startswith("python3"):
            try:
                out[pid] = ppid(pid)
            except (OSError, ValueError):
                pass
    return out


def cell(s, sid, code):
    t0 = time.perf_counter()
    st, body = s.call("POST", f"/v1/sessions/{sid}/cells", {"code": code})
    ms = (time.perf_counter() - t0) * 1000
    if st != 200 or body.get("error"):
        raise SystemExit(f"cell failed: {st} {body}")
    return ms, body


def timeline_of(path, start):
    """The marks written to the SENTRY_TIMELINE file from byte `start` on:
    [(ms, pid, event)], ms from the request's own mark (srv.fork.request)."""
    with open(path) as f:
        f.seek(start)
        marks = []
        for line in f:
            ns, pid, event = line.split()
            marks.append((int(ns) / 1e6, int(pid), event))
    t0 = next((ms for ms, _, e in marks if e == "srv.fork.request"), None)
    if t0 is None:
        return []
    return [(ms - t0, pid, e) for ms, pid, e in marks]


def print_timeline(forks):
    """Each event's median time from the request (ms), in the order of the
    medians, over the forks of one child."""
    at = {}
    for marks in forks:
        seen = set()
        for ms, _, e in marks:
            if e not in seen:  # a step's first mark
                seen.add(e)
                at.setdefault(e, []).append(ms)
    rows = sorted(((pct(v, 50), e, len(v)) for e, v in at.items()))
    print("where a fork of one child goes (ms from the request, median over "
          f"{len(forks)} forks; s1: the parent's supervisor, s2: the child's):")
    last = None
    for med, e, n in rows:
        step = "" if last is None else f"  (+{med - last:.2f})"
        print(f"  {med:8.2f}  {e}{step}" + ("" if n == len(forks) else f"  [in {n}]"))
        last = med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--forks", type=int, default=20)
    ap.add_argument("--many", type=int, default=10)
    ap.add_argument("--timeline", action="store_true",
                    help="the steps of each fork of one child (SENTRY_TIMELINE)")
    a = ap.parse_args()
    tl = None
    if a.timeline:
        fd, tl = tempfile.mkstemp(prefix="sentry-fork-timeline-")
        os.close(fd)
        os.chmod(tl, 0o666)  # the supervisors write it with their own file ids
        os.environ["SENTRY_TIMELINE"] = tl
    s = Server(a.sentry, ["--session-spares", "0", "--max-sessions", "200",
                          "--max-sessions-per-token", "200"])
    try:
        st, body = s.call("POST", "/v1/sessions", {})
        if st != 201:
            raise SystemExit(f"create: {st} {body}")
        parent = body["id"]

        def loaded():
            st, body = s.call("POST", "/v1/sessions", {})
            if st != 201:
                raise SystemExit(f"create: {st} {body}")
            cell(s, body["id"], "import numpy as np, pandas as pd\n"
                                "df = pd.DataFrame(np.random.rand(1_310_720, 10))\n"
                                "int(df.memory_usage().sum()) >> 20")
            return body["id"]

        s.call("DELETE", f"/v1/sessions/{parent}")
        parent = loaded()
        times, per_parent, parents, marks = [], 0, 1, []
        while len(times) < a.forks:
            start = os.path.getsize(tl) if tl else 0
            t0 = time.perf_counter()
            st, body = s.call("POST", f"/v1/sessions/{parent}/fork", {"count": 1})
            ms = (time.perf_counter() - t0) * 1000
            if st == 409 and "fork depth" in json.dumps(body):
                # Each fork stacks one seccomp filter on the parent (16 at most).
                print(f"a parent forked {per_parent} times, then: fork depth")
                s.call("DELETE", f"/v1/sessions/{parent}")
                parent, per_parent, parents = loaded(), 0, parents + 1
                continue
            if st != 201:
                raise SystemExit(f"fork: {st} {body}")
            times.append(ms)
            per_parent += 1
            if tl:
                marks.append(timeline_of(tl, start))
            s.call("DELETE", f"/v1/sessions/{body['sessions'][0]}")
        print(f"fork of 1 child (100 MB DataFrame): p50 {pct(times, 50):.1f} ms, "
              f"p99 {pct(times, 99):.1f} ms over {a.forks} ({parents} parents)")
        if marks:
            print_timeline(marks)
        s.call("DELETE", f"/v1/sessions/{parent}")
        parent = loaded()

        time.sleep(0.5)
        before = set(kernels(s.p.pid))
        t0 = time.perf_counter()
        st, body = s.call("POST", f"/v1/sessions/{parent}/fork", {"count": a.many})
        many_ms = (time.perf_counter() - t0) * 1000
        if st != 201:
            raise SystemExit(f"fork {a.many}: {st} {body}")
        kids = body["sessions"]
        print(f"fork of {a.many} children at once: {many_ms:.1f} ms")
        now = kernels(s.p.pid)
        new = [p for p in now if p not in before]
        parent_pid = [p for p in before if p in now and not comm(now[p]).startswith("python3")]
        pss0 = [pss_kib(p) for p in new]
        ms_child, _ = cell(s, kids[0], "df.shape")
        ms_parent, _ = cell(s, parent, "df.shape")
        for k in kids:
            cell(s, k, "float(df.values.sum()) > 0")
        pss1 = [pss_kib(p) for p in new]
        print(f"children's kernels found: {len(new)}; PSS right after the fork: "
              f"median {pct(pss0, 50) / 1024:.2f} MiB, max {max(pss0 or [0]) / 1024:.2f} MiB; "
              f"after a cell reading the whole DataFrame: median {pct(pss1, 50) / 1024:.2f} MiB")
        print("parent's kernel PSS now: " +
              ", ".join(f"{pss_kib(p) / 1024:.1f} MiB" for p in parent_pid))
        print(f"cell `df.shape` right after the fork: child {ms_child:.1f} ms, "
              f"parent {ms_parent:.1f} ms")
        for k in kids:
            s.call("DELETE", f"/v1/sessions/{k}")
    finally:
        s.stop()


if __name__ == "__main__":
    main()
