#!/usr/bin/env python3
"""End-to-end figures of the agent's way in (sentry serve, sentry mcp), side by side
with native cold Python, in one run on one machine.

    /usr/bin/python3 bench/agent.py build/sentry/sentry [--runs 50] [--pool-size 4] [--isolation AGENT_TEST]

- latency: print(48271*6933), p50/p99 of native `python3 -c`, HTTP POST
  /v1/runs on a kept-alive connection with a warm pool and cold, MCP tools/call
  over stdio with a warm pool, `sentry run --json` (a process per run): the
  paths sampled in turn, 100 ms between any two requests, so that the load of
  a shared machine falls on all alike; and GET /v1/health (HTTP alone);
- throughput: back-to-back runs of `pass` through serve with a warm pool
  (refill included), one client and 8 concurrent clients, against native
  `python3 -c pass` starts, in alternating rounds;
- numpy + pandas: a script that imports both and sums a small DataFrame, native
  against serve with --preload numpy,pandas;
- with --isolation AGENT_TEST: the isolation test with 1,000 runs through serve.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

CODE = "print(48271*6933)"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def spaced(fn, runs, gap=0.1):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(gap)
    return out


class Serve:
    def __init__(self, sentry, extra=()):
        self.token = secrets.token_hex(16)
        tf = tempfile.NamedTemporaryFile("w", delete=False)
        tf.write(self.token + "\n")
        tf.close()
        self.proc = subprocess.Popen(
            [sentry, "serve", "--listen", "127.0.0.1:0", "--token-file", tf.name, *extra],
            stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        os.unlink(tf.name)
        host, port = re.search(r"listening on (\S+):(\d+)", line).groups()
        self.addr = (host, int(port))

    def conn(self):
        return http.client.HTTPConnection(*self.addr)

    def run(self, conn, code=CODE):
        conn.request("POST", "/v1/runs", json.dumps({"code": code}),
                     {"Authorization": "Bearer " + self.token})
        r = conn.getresponse()
        body = json.loads(r.read())
        assert r.status == 200 and body["exitCode"] == 0, body
        return body

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


class Mcp:
    def __init__(self, sentry, extra=()):
        self.proc = subprocess.Popen([sentry, "mcp", *extra], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}})

    def call(self, method, params):
        self.id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def run(self):
        r = self.call("tools/call", {"name": "run_python", "arguments": {"code": CODE}})
        assert not r["result"]["isError"], r

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def row(name, xs, native_p50=None, native_p99=None):
    p50, p99 = statistics.median(xs), pct(xs, 99)
    ratio = f"{p50 / native_p50:.2f}x / {p99 / native_p99:.2f}x" if native_p50 else "1.00x / 1.00x"
    print(f"| {name} | {p50:.1f} | {p99:.1f} | {ratio} |")


def throughput(fn, seconds, clients):
    end = time.perf_counter() + seconds
    def worker():
        n = 0
        while time.perf_counter() < end:
            fn()
            n += 1
        return n
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as ex:
        total = sum(ex.map(lambda _: worker(), range(clients)))
    return total / (time.perf_counter() - t)


def interleaved(paths, runs, gap=0.1):
    """Latency samples of each path, taken in turn (native, then each sentry
    path, then again), gap seconds between any two requests: the machine's
    load falls on all of them alike."""
    out = {name: [] for name, _ in paths}
    for _ in range(runs):
        for name, fn in paths:
            t = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - t) * 1000)
            time.sleep(gap)
    return out


def throughput_interleaved(paths, seconds, clients, rounds=3):
    """Runs/s of each path, back to back, in rounds of seconds/rounds each,
    alternating between the paths."""
    done = {name: 0.0 for name, _ in paths}
    spent = {name: 0.0 for name, _ in paths}
    for _ in range(rounds):
        for name, fn in paths:
            t = time.perf_counter()
            rate = throughput(fn, seconds / rounds, clients)
            dt = time.perf_counter() - t
            done[name] += rate * dt
            spent[name] += dt
    return {name: done[name] / spent[name] for name, _ in paths}


PANDAS = ("import numpy as np, pandas as pd\n"
          "df = pd.DataFrame({'a': np.arange(100), 'b': np.arange(100) * 2})\n"
          "print(int(df.sum().sum()))")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=9, help="per throughput figure")
    ap.add_argument("--pool-size", type=int, default=4)
    ap.add_argument("--pool-refill", type=int, default=2)
    ap.add_argument("--pool-wait", type=int, default=100, help="ms, before a cold start")
    ap.add_argument("--only", choices=["latency", "throughput", "pandas"], action="append")
    ap.add_argument("--isolation", metavar="AGENT_TEST", help="also run 1,000 isolation runs")
    a = ap.parse_args()
    py = "/usr/bin/python3"
    pool = ["--pool-size", str(a.pool_size), "--pool-refill", str(a.pool_refill),
            "--pool-wait", str(a.pool_wait)]
    only = set(a.only or ["latency", "throughput", "pandas"])
    warm = Serve(a.sentry, ["--max-concurrent", "8", "--max-queue", "64", *pool])
    if "latency" in only:
        print(f"latency of print(48271*6933), {a.runs} requests of each path, taken in turn, "
              "100 ms apart (ms):\n")
        print("| path | p50 | p99 | p50 / p99 vs native |\n| --- | --- | --- | --- |")
        cold = Serve(a.sentry, ["--max-concurrent", "8", "--max-queue", "64", "--pool-size", "0"])
        mcp = Mcp(a.sentry, pool)
        time.sleep(2)  # the first fill
        wc, cc = warm.conn(), cold.conn()
        lat = interleaved([
            ("native `python3 -c`",
             lambda: subprocess.run([py, "-c", CODE], check=True, capture_output=True)),
            ("serve: POST /v1/runs, warm pool", lambda: warm.run(wc)),
            ("mcp: tools/call run_python, warm pool", mcp.run),
            ("serve: POST /v1/runs, cold (--pool-size 0)", lambda: cold.run(cc)),
            ("`sentry run --json` (a process per run)",
             lambda: subprocess.run([a.sentry, "run", "--json", "--", py, "-c", CODE], check=True,
                                    capture_output=True)),
        ], a.runs)
        native = lat.pop("native `python3 -c`")
        n50, n99 = statistics.median(native), pct(native, 99)
        row("native `python3 -c`", native)
        for name, xs in lat.items():
            row(name, xs, n50, n99)
        def health():
            wc.request("GET", "/v1/health")
            wc.getresponse().read()
        row("serve: GET /v1/health (HTTP alone)", spaced(health, a.runs, 0.01), n50, n99)
        mcp.stop()
        cold.stop()

    if "throughput" in only:
        print(f"\nthroughput of `pass`, back to back, refill included, {a.seconds:g} s each, "
              "in alternating rounds (runs/s):\n")
        print("| path | 1 client | 8 clients |\n| --- | --- | --- |")
        native_pass = lambda: subprocess.run([py, "-c", "pass"], check=True)
        local = __import__("threading").local()
        def serve_pass():
            if not hasattr(local, "c"):
                local.c = warm.conn()
            warm.run(local.c, "pass")
        paths = [("native `python3 -c pass`", native_pass),
                 (f"serve: POST /v1/runs, warm pool of {a.pool_size}", serve_pass)]
        one = throughput_interleaved(paths, a.seconds, 1)
        eight = throughput_interleaved(paths, a.seconds, 8)
        for name, _ in paths:
            ratio = "" if name.startswith("native") else (
                f" ({one[name] / one[paths[0][0]]:.2f}x)", f" ({eight[name] / eight[paths[0][0]]:.2f}x)")
            r1, r8 = ratio if ratio else ("", "")
            print(f"| {name} | {one[name]:.1f}{r1} | {eight[name]:.1f}{r8} |")

    warm.stop()
    if "pandas" in only:
        print(f"\nnumpy + pandas: import both, sum a 100-row DataFrame, {a.runs // 2} of each, "
              "in turn, 100 ms apart (ms):\n")
        print("| path | p50 | p99 | p50 / p99 vs native |\n| --- | --- | --- | --- |")
        pd_warm = Serve(a.sentry, ["--preload", "numpy,pandas", *pool])
        time.sleep(4)  # the first fill imports numpy and pandas
        pc = pd_warm.conn()
        lat = interleaved([
            ("native `python3 -c`",
             lambda: subprocess.run([py, "-c", PANDAS], check=True, capture_output=True)),
            ("serve, warm pool, --preload numpy,pandas", lambda: pd_warm.run(pc, PANDAS)),
        ], a.runs // 2, 0.3)
        native = lat.pop("native `python3 -c`")
        row("native `python3 -c`", native)
        for name, xs in lat.items():
            row(name, xs, statistics.median(native), pct(native, 99))
        pd_warm.stop()

    if a.isolation:
        t = time.perf_counter()
        env = dict(os.environ, SENTRY_ISOLATION_RUNS="1000", SENTRY_BINARY=a.sentry)
        r = subprocess.run([a.isolation, "--gtest_filter=Isolation.*"], env=env)
        print(f"\nisolation: 1,000 runs through serve: {'passed' if r.returncode == 0 else 'FAILED'}"
              f" in {time.perf_counter() - t:.0f} s")
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
