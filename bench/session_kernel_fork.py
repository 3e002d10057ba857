#!/usr/bin/env python3
"""What kernel.py's fork op costs (issue 26; sentry/session/FORK.md, step 6),
natively: the session kernel holding a 100 MB pandas DataFrame, no sentry
(no supervisor, so no re-listen and no hand-off: the kernel's test switch
SENTRY_KERNEL_FORK_TEST_SOCKET gives each child a unix socket as its wire).
bench/session_fork_floor.py is the floor under it (a bare raw clone).

    /usr/bin/python3 bench/session_kernel_fork.py [--mib 100] [--forks 20] [--children 100]

Run as root (clone into new user, pid, net, ipc, uts, mnt namespaces).
- one child (count 1), --forks times: the request until the parent's done
  (and the CPU time its main thread ran meanwhile: steadier than the wall
  time on a busy machine), and until the child's `forked` frame; then a cell in the child right
  after (`len(df)`), and the same cell in the parent;
- --children in one request: until the done, until the last `forked`, a
  child's PSS and Private_Dirty (smaps_rollup), the parent's PSS.
"""
import argparse
import json
import os
import select
import socket
import statistics
import struct
import subprocess
import tempfile
import time

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sentry", "session",
                      "kernel.py")


class Wire:
    def __init__(self, rfd, write):
        self.rfd, self.write, self.buf, self.ids = rfd, write, b"", 0

    def send(self, msg):
        raw = json.dumps(msg).encode()
        self.write(struct.pack(">I", len(raw)) + raw)

    def recv(self):
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack(">I", self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    body, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                    return json.loads(body)
            select.select([self.rfd], [], [], 60)
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def request(self, op, **kw):
        self.ids += 1
        self.send(dict(op=op, id=self.ids, **kw))
        while True:
            m = self.recv()
            if m["op"] == "done" and m["id"] == self.ids:
                assert m["status"] == "ok", m
                return m


def rollup(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Pss", "Private_Dirty"):
                out[key] = int(value.split()[0]) / 1024
    return out


def cpu_ms(pid):
    """CPU time the kernel's main thread has run, in ms (schedstat: ns)."""
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        return int(f.read().split()[0]) / 1e6


def gone(pid):
    """Waits until pid has exited (a zombie of the kernel's, or reaped)."""
    while True:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.001)


def p50_p90(values):
    values = sorted(values)
    return statistics.median(values), values[max(0, int(len(values) * 0.9) - 1)]


def timed_cell(w, code):
    t0 = time.perf_counter()
    w.request("cell", code=code)
    return (time.perf_counter() - t0) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--forks", type=int, default=20)
    ap.add_argument("--children", type=int, default=100)
    args = ap.parse_args()
    print("load average %.1f on %d cpus" % (os.getloadavg()[0], os.cpu_count()))
    home = tempfile.mkdtemp(prefix="session_kernel_fork-")
    addr = os.path.join(home, "children.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(addr)
    listener.listen(128)
    env = dict(os.environ, SENTRY_KERNEL_FORK_TEST_SOCKET=addr)
    proc = subprocess.Popen(["/usr/bin/python3", KERNEL], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, cwd=home)

    def write(b):
        proc.stdin.write(b)
        proc.stdin.flush()

    parent = Wire(proc.stdout.fileno(), write)
    assert parent.recv()["op"] == "ready"
    parent.request("cell", code="import numpy as np, pandas as pd\n"
                   "df = pd.DataFrame(np.random.rand(%d, 4))\nlen(df)" % (args.mib * 2**20 // 32))
    print("kernel PSS %.0f MiB (a %d MiB DataFrame)" % (rollup(proc.pid)["Pss"], args.mib))
    done_ms, forked_ms, child_cell, parent_cell, cpu = [], [], [], [], []
    for _ in range(args.forks):
        c0 = cpu_ms(proc.pid)
        t0 = time.perf_counter()
        parent.send({"op": "fork", "id": 0, "count": 1})
        m = parent.recv()
        done_ms.append((time.perf_counter() - t0) * 1e3)
        cpu.append(cpu_ms(proc.pid) - c0)
        assert m["status"] == "ok", m
        conn = listener.accept()[0]
        child = Wire(conn.fileno(), conn.sendall)
        assert child.recv()["op"] == "forked"
        forked_ms.append((time.perf_counter() - t0) * 1e3)
        child_cell.append(timed_cell(child, "len(df)"))
        parent_cell.append(timed_cell(parent, "len(df)"))
        child.send({"op": "exit"})
        conn.close()
        gone(m["children"][0])  # as the floor's waitpid: no exit overlaps the next fork
    print("one child, p50 / p90 of %d:" % args.forks)
    print("  fork request until the parent's done  %.2f / %.2f ms" % p50_p90(done_ms))
    print("  CPU of the kernel's main thread then   %.2f / %.2f ms" % p50_p90(cpu))
    print("  fork request until the child's forked %.2f / %.2f ms" % p50_p90(forked_ms))
    print("  a cell in the child right after       %.2f / %.2f ms" % p50_p90(child_cell))
    print("  the same cell in the parent           %.2f / %.2f ms" % p50_p90(parent_cell))

    n = args.children
    t0 = time.perf_counter()
    parent.send({"op": "fork", "id": 0, "count": n})
    m = parent.recv()
    made = (time.perf_counter() - t0) * 1e3
    assert m["status"] == "ok", m
    conns = [listener.accept()[0] for _ in range(n)]
    for c in conns:
        assert Wire(c.fileno(), c.sendall).recv()["op"] == "forked"
    ready = (time.perf_counter() - t0) * 1e3
    time.sleep(0.3)
    kids = [rollup(pid) for pid in m["children"][:5]]
    print("%d children in one request: done after %.0f ms, the last forked after %.0f ms; "
          "a child's PSS %.1f MiB, Private_Dirty %.2f MiB; the parent's PSS %.0f MiB"
          % (n, made, ready, statistics.median(k["Pss"] for k in kids),
             statistics.median(k["Private_Dirty"] for k in kids), rollup(proc.pid)["Pss"]))
    for c in conns:
        c.close()  # each child ends at EOF on its wire
    parent.send({"op": "exit"})
    proc.wait()
    listener.close()
    os.unlink(addr)
    os.rmdir(home)


if __name__ == "__main__":
    main()
