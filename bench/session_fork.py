#!/usr/bin/env python3
"""Figures of a session fork (issue 26) through `sentry serve`, end to end
over loopback HTTP (POST /v1/sessions/{id}/fork), side by side in one run:

    /usr/bin/python3 bench/session_fork.py build/sentry/sentry [--forks 20] [--many 100]
        [--fork-spares N] [--timeline] [--depth D]

- fork 1: p50/p99 of --forks forks of one child from a session holding a
  100 MB pandas DataFrame (request sent to the answer read: the children's
  supervisors started or taken from the spares, the kernel's clone, the
  parent's re-listen, the hand-off, the child's `forked`), each child
  deleted after its first cell;
- a cell (`df.shape`) in each child right after its fork, beside one in the
  parent just after it (p50 of each), and a child's second cell;
- fork N: --many children in one request, the whole request;
- memory after it: each child kernel's PSS, USS (Private_Clean + Private_Dirty:
  what it does not share) and Private_Dirty (smaps_rollup), right after the
  fork and after a cell that reads the whole DataFrame; the parent's;
- --timeline: where a fork of one child goes, step by step (the server's,
  the parent's supervisor's and the child's supervisor's marks:
  SENTRY_TIMELINE, sentry/base/timeline.h).
--fork-spares: the server's --session-fork-spares (default: the server's, 2).
--depth D: the forking session is itself a fork of a fork... D forks down a
chain from the one that loaded the DataFrame (its ancestors kept).
The load average is printed before and after: on a shared machine the
wall times are upper bounds. As root or as an ordinary user (single-id mode,
or a subordinate range: the memory is read from /proc/PID/smaps_rollup, which
the caller may read there).
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


def rollup(pid):
    """smaps_rollup's Pss, USS (Private_Clean + Private_Dirty) and
    Private_Dirty, in KiB (zeros if the process is gone)."""
    out = {"Pss": 0, "Private_Clean": 0, "Private_Dirty": 0}
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            key = line.split(":")[0]
            if key in out:
                out[key] = int(line.split()[1])
    except OSError:
        pass
    return out["Pss"], out["Private_Clean"] + out["Private_Dirty"], out["Private_Dirty"]


def mib_stats(label, rows):
    """rows: [(pss, uss, dirty)] KiB -> one line of medians and maxima."""
    if not rows:
        return f"{label}: none found"
    cols = list(zip(*rows))
    names = ("PSS", "USS", "Private_Dirty")
    return f"{label} (median / max MiB of {len(rows)}): " + ", ".join(
        f"{n} {pct(c, 50) / 1024:.2f} / {max(c) / 1024:.2f}" for n, c in zip(names, cols))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--forks", type=int, default=20)
    ap.add_argument("--many", type=int, default=100)
    ap.add_argument("--fork-spares", type=int, default=None)
    ap.add_argument("--depth", type=int, default=0,
                    help="fork from a session D forks down a chain (a fork of a fork...)")
    ap.add_argument("--timeline", action="store_true",
                    help="the steps of each fork of one child (SENTRY_TIMELINE)")
    a = ap.parse_args()
    print("load average at the start: " + open("/proc/loadavg").read().strip())
    tl = None
    if a.timeline:
        fd, tl = tempfile.mkstemp(prefix="sentry-fork-timeline-")
        os.close(fd)
        os.chmod(tl, 0o666)  # the supervisors write it with their own file ids
        os.environ["SENTRY_TIMELINE"] = tl
    # --pids-limit: a child's user namespace nests in its parent's, where the
    # kernel counts every child's tasks against the parent's RLIMIT_NPROC
    # (its --pids) too: about six threads a child.
    extra = ["--session-spares", "0", "--max-sessions", str(a.many + 20 + a.depth),
             "--max-sessions-per-token", str(a.many + 20 + a.depth),
             "--pids-limit", str(max(128, 8 * a.many + 64))]
    if a.fork_spares is not None:
        extra += ["--session-fork-spares", str(a.fork_spares)]
    s = Server(a.sentry, extra)
    try:
        chain = []  # with --depth: the forking session's ancestors, kept

        def loaded():
            for sid in chain:
                s.call("DELETE", f"/v1/sessions/{sid}")
            chain.clear()
            st, body = s.call("POST", "/v1/sessions", {})
            if st != 201:
                raise SystemExit(f"create: {st} {body}")
            cell(s, body["id"], "import numpy as np, pandas as pd\n"
                                "df = pd.DataFrame(np.random.rand(1_310_720, 10))\n"
                                "int(df.memory_usage().sum()) >> 20")
            sid = body["id"]
            for _ in range(a.depth):  # a fork of a fork...: the chain's end forks
                st, body = s.call("POST", f"/v1/sessions/{sid}/fork", {"count": 1})
                if st != 201:
                    raise SystemExit(f"fork down the chain: {st} {body}")
                chain.append(sid)
                sid = body["sessions"][0]
            return sid

        parent = loaded()
        times, per_parent, parents, marks = [], 0, 1, []
        first_cells, second_cells, parent_cells = [], [], []
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
            kid = body["sessions"][0]
            first_cells.append(cell(s, kid, "df.shape")[0])
            parent_cells.append(cell(s, parent, "df.shape")[0])
            second_cells.append(cell(s, kid, "df.shape")[0])
            s.call("DELETE", f"/v1/sessions/{kid}")
            time.sleep(0.2)  # the spares' refill, off the next fork's path
        at = f", from a session {a.depth} forks deep" if a.depth else ""
        print(f"fork of 1 child (100 MB DataFrame{at}): p50 {pct(times, 50):.1f} ms, "
              f"p99 {pct(times, 99):.1f} ms over {a.forks} ({parents} parents)")
        print(f"cell `df.shape`: a child's first, right after its fork, p50 "
              f"{pct(first_cells, 50):.2f} ms; its second {pct(second_cells, 50):.2f} ms; "
              f"the parent's {pct(parent_cells, 50):.2f} ms")
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
        print(f"fork of {a.many} children in one request: {many_ms:.1f} ms")
        now = kernels(s.p.pid)
        new = [p for p in now if p not in before]
        parent_pid = [p for p in before if p in now and not comm(now[p]).startswith("python3")]
        time.sleep(0.5)
        mem0 = [rollup(p) for p in new]
        print(mib_stats("children's kernels right after the fork", mem0))
        for k in kids:
            cell(s, k, "float(df.values.sum()) > 0")
        mem1 = [rollup(p) for p in new]
        print(mib_stats("after a cell reading the whole DataFrame in each", mem1))
        print(mib_stats("the parent's kernel", [rollup(p) for p in parent_pid]))
        for k in kids:
            s.call("DELETE", f"/v1/sessions/{k}")
    finally:
        s.stop()
        print("load average at the end: " + open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    main()
