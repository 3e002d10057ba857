#!/usr/bin/env python3
"""Figures of sessions in `sentry serve` (issue 25), in one run on one machine,
over loopback HTTP on kept-alive connections.

    /usr/bin/python3 bench/session.py build/sentry/sentry [--cells 500] [--idle 100] [--cycles 200]

- create: POST /v1/sessions with spares ready (--session-spares 2; 300 ms
  between creates, so the refill has made the next), p50/p99; and with no
  spare (--session-spares 0: a sandbox and the kernel started on demand);
- cell: `x + 1` end to end (request sent to answer read), p50/p99, and the
  kernel's own round trip as the server measured it (durationMs);
- idle PSS: the PSS (smaps_rollup) of an idle session's processes: beyond
  the interpreter (its supervisor and the sandbox's pid 1), and the kernel's
  interpreter itself beside the same kernel run natively (python3 kernel.py,
  idle after ready);
- server RSS: the serve process's own VmRSS with --idle sessions open and
  idle (the sandboxes are processes of their own, not counted);
- cycles: --cycles sessions opened, used and closed by two tenants in turn,
  each checking that nothing of the one before is visible (globals, files,
  environment); then no process of theirs is left.
"""
import argparse
import http.client
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

ALICE = "alice-bench-token-0123456789"
BOB = "bob-bench-token-0123456789ab"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Server:
    def __init__(self, sentry, extra):
        fd, self.tokens = tempfile.mkstemp(prefix="sentry-bench-tokens-")
        os.write(fd, f"alice {ALICE}\nbob {BOB}\n".encode())
        os.close(fd)
        self.p = subprocess.Popen(
            [sentry, "serve", "--listen", "127.0.0.1:0", "--token-file", self.tokens,
             "--pool-size", "0"] + extra, stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        self.port = int(line.rsplit(":", 1)[1])
        self.conns = {}

    def call(self, method, path, body=None, token=ALICE):
        c = self.conns.get(token)
        if c is None:
            c = self.conns[token] = http.client.HTTPConnection("127.0.0.1", self.port)
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        c.request(method, path, body=data, headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw

    def create(self, token=ALICE, body=None):
        s, b = self.call("POST", "/v1/sessions", body or {}, token)
        assert s == 201, (s, b)
        return b["id"]

    def cell(self, sid, code, token=ALICE):
        s, b = self.call("POST", f"/v1/sessions/{sid}/cells", {"code": code}, token)
        assert s == 200, (s, b)
        return b

    def stop(self):
        self.p.terminate()
        self.p.wait(60)
        os.unlink(self.tokens)


PLOT = ("plt.figure(figsize=(6.4, 4.8), dpi=100)\n"
        "plt.plot([i * i % 17 for i in range(200)])\n"
        "plt.show()")
# The same figure saved natively as a PNG in memory, timed per line read.
NATIVE_PLOT = """
import io, sys, time
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
for _ in sys.stdin:
    t = time.perf_counter()
    plt.figure(figsize=(6.4, 4.8), dpi=100)
    plt.plot([i * i % 17 for i in range(200)])
    buf = io.BytesIO()
    plt.savefig(buf, format="png")
    plt.close("all")
    print((time.perf_counter() - t) * 1000, flush=True)
"""


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def descendants(root):
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
                parent[int(d)] = int(stat[stat.rfind(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out = set()
    for pid in parent:
        p = parent[pid]
        for _ in range(64):
            if p == root:
                out.add(pid)
                break
            if p <= 1 or p not in parent:
                break
            p = parent[p]
    return out


def pss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def native_kernel_pss():
    kernel = os.path.join(ROOT, "sentry", "session", "kernel.py")
    p = subprocess.Popen(["/usr/bin/python3", kernel], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    n = struct.unpack(">I", p.stdout.read(4))[0]
    p.stdout.read(n)  # ready
    time.sleep(0.5)
    kib = pss_kib(p.pid)
    p.kill()
    p.wait()
    return kib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--creates", type=int, default=40)
    ap.add_argument("--idle", type=int, default=100)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--plots", type=int, default=20)
    a = ap.parse_args()
    out = {}

    # Create, with spares and without; the cell round trip.
    srv = Server(a.sentry, ["--session-spares", "2"])
    time.sleep(3)
    times = []
    for _ in range(a.creates):
        time.sleep(0.3)
        t = time.perf_counter()
        sid = srv.create()
        times.append((time.perf_counter() - t) * 1000)
        srv.call("DELETE", f"/v1/sessions/{sid}")
    out["create_spare_ms"] = (pct(times, 50), pct(times, 99))
    sid = srv.create()
    srv.cell(sid, "x = 1")
    e2e, kernel = [], []
    for _ in range(a.cells):
        t = time.perf_counter()
        r = srv.cell(sid, "x + 1")
        e2e.append((time.perf_counter() - t) * 1000)
        kernel.append(r["durationMs"])
        assert r["results"][0]["text/plain"] == "2"
    out["cell_ms"] = (pct(e2e, 50), pct(e2e, 99))
    out["cell_server_ms"] = (pct(kernel, 50), pct(kernel, 99))

    # A 640x480 line plot returned as a PNG, against the same savefig in a
    # warm native interpreter; the two taken in turn, so load falls on both.
    srv.cell(sid, "import matplotlib.pyplot as plt")
    native = subprocess.Popen(["/usr/bin/python3", "-c", NATIVE_PLOT], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    cell_t, native_t = [], []
    for i in range(a.plots + 2):
        t = time.perf_counter()
        r = srv.cell(sid, PLOT)
        el = (time.perf_counter() - t) * 1000
        assert [b for b in r["results"] if "image/png" in b], r
        native.stdin.write("\n")
        native.stdin.flush()
        nt = float(native.stdout.readline())
        if i >= 2:  # the first ones warm the font cache up
            cell_t.append(el)
            native_t.append(nt)
    native.stdin.close()
    native.wait()
    out["plot_ms"] = (pct(cell_t, 50), pct(native_t, 50))
    srv.stop()

    srv = Server(a.sentry, ["--session-spares", "0", "--max-sessions", str(a.idle + 8),
                            "--max-sessions-per-token", str(a.idle + 8)])
    times = []
    for _ in range(10):
        t = time.perf_counter()
        sid = srv.create()
        times.append((time.perf_counter() - t) * 1000)
        srv.call("DELETE", f"/v1/sessions/{sid}")
    out["create_cold_ms"] = (pct(times, 50), pct(times, 99))

    # Idle PSS of one session: the processes it added.
    base = descendants(srv.p.pid)
    sid = srv.create()
    srv.cell(sid, "x = 1")
    time.sleep(1)
    mine = descendants(srv.p.pid) - base
    session_pss = sum(pss_kib(p) for p in mine)
    kernel_pss = sum(pss_kib(p) for p in mine
                     if open(f"/proc/{p}/comm").read().startswith("python"))
    native = native_kernel_pss()
    out["idle_pss_kib"] = (session_pss, kernel_pss, native, len(mine))
    srv.call("DELETE", f"/v1/sessions/{sid}")

    # The server's own RSS with many idle sessions.
    rss0 = rss_kib(srv.p.pid)
    ids = [srv.create() for _ in range(a.idle)]
    for sid in ids:
        srv.cell(sid, "x = 1")
    time.sleep(1)
    out["server_rss_kib"] = (rss0, rss_kib(srv.p.pid), a.idle)
    for sid in ids:
        srv.call("DELETE", f"/v1/sessions/{sid}")
    srv.stop()

    # Many sessions, two tenants in turn: nothing crosses, nothing is left.
    srv = Server(a.sentry, ["--session-spares", "2"])
    time.sleep(2)
    before = descendants(srv.p.pid)
    seen = set()
    t = time.perf_counter()
    for i in range(a.cycles):
        token = ALICE if i % 2 else BOB
        sid = srv.create(token)
        r = srv.cell(sid, "import os\n['v' in dir(), os.path.exists('/home/sandbox/prev'), "
                          "'MARK' in os.environ, len(os.listdir('/tmp'))]", token)
        assert r["results"][0]["text/plain"] == "[False, False, False, 0]", r
        srv.cell(sid, f"v = {i}\nos.environ['MARK'] = '1'\nopen('/home/sandbox/prev', 'w')\n"
                      "open('/tmp/prev', 'w')", token)
        seen |= descendants(srv.p.pid) - before
        assert srv.call("DELETE", f"/v1/sessions/{sid}", token=token)[0] == 200
    elapsed = time.perf_counter() - t
    srv.stop()
    time.sleep(1)
    left = [p for p in seen if os.path.exists(f"/proc/{p}")
            and open(f"/proc/{p}/stat").read().split(")")[-1].split()[0] != "Z"]
    out["cycles"] = (a.cycles, elapsed, len(seen), len(left))

    print(f"session create p50/p99, spare ready : {out['create_spare_ms'][0]:.2f} / "
          f"{out['create_spare_ms'][1]:.2f} ms   (target p50 <= 5 ms)")
    print(f"session create p50/p99, no spare    : {out['create_cold_ms'][0]:.1f} / "
          f"{out['create_cold_ms'][1]:.1f} ms")
    print(f"cell x + 1 end to end p50/p99       : {out['cell_ms'][0]:.2f} / {out['cell_ms'][1]:.2f} ms"
          f"   (target <= 1.5 / 5 ms); server-side {out['cell_server_ms'][0]:.2f} / "
          f"{out['cell_server_ms'][1]:.2f} ms")
    pc, pn = out["plot_ms"]
    print(f"640x480 plot cell, PNG returned p50   : {pc:.1f} ms; native savefig (warm) {pn:.1f} ms:"
          f" {pc / pn:.2f}x   (target <= 1.2x)")
    s, kp, n, k = out["idle_pss_kib"]
    print(f"idle session PSS                    : {s / 1024:.1f} MiB in {k} processes; beyond the "
          f"interpreter (supervisor + pid 1) {(s - kp) / 1024:.1f} MiB (target <= 4); the "
          f"interpreter {kp / 1024:.1f} MiB, natively {n / 1024:.1f} MiB")
    r0, r1, n = out["server_rss_kib"]
    print(f"server RSS, {n} idle sessions        : {r1 / 1024:.1f} MiB (at start {r0 / 1024:.1f} MiB;"
          f" target < 64)")
    c, el, seen_n, left_n = out["cycles"]
    print(f"{c} sessions opened and closed       : {el:.1f} s, two tenants in turn, nothing seen "
          f"of the one before; {seen_n} processes made, {left_n} left")
    return 0 if left_n == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
