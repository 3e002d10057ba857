#!/usr/bin/env python3
"""End-to-end figures of the agent's way in (sentry serve, sentry mcp), side by side
with native cold Python, in one run on one machine.

    /usr/bin/python3 bench/agent.py build/sentry/sentry [--runs 50] [--isolation AGENT_TEST]

- latency: print(48271*6933), requests 100 ms apart, p50/p99 of: native
  `python3 -c`, `sentry run --json` (a process per run), HTTP POST /v1/runs on a
  kept-alive connection, MCP tools/call over stdio; and GET /v1/health (the
  HTTP layer alone);
- throughput: back-to-back runs of `pass`, one client, and 8 concurrent clients,
  against native `python3 -c pass` starts;
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
    def __init__(self, sentry):
        self.proc = subprocess.Popen([sentry, "mcp"], stdin=subprocess.PIPE,
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=8, help="per throughput figure")
    ap.add_argument("--isolation", metavar="AGENT_TEST", help="also run 1,000 isolation runs")
    a = ap.parse_args()
    py = "/usr/bin/python3"
    print(f"latency, {a.runs} requests 100 ms apart (ms):\n")
    print("| path | p50 | p99 | p50 / p99 vs native |\n| --- | --- | --- | --- |")
    native = spaced(lambda: subprocess.run([py, "-c", CODE], check=True, capture_output=True),
                    a.runs)
    n50, n99 = statistics.median(native), pct(native, 99)
    row("native `python3 -c`", native)
    cli = spaced(lambda: subprocess.run([a.sentry, "run", "--json", "--", py, "-c", CODE],
                                        check=True, capture_output=True), a.runs)
    row("`sentry run --json` (a process per run)", cli, n50, n99)
    serve = Serve(a.sentry, ["--max-concurrent", "8", "--max-queue", "64"])
    conn = serve.conn()
    row("serve: POST /v1/runs (cold runner)", spaced(lambda: serve.run(conn), a.runs), n50, n99)
    def health():
        conn.request("GET", "/v1/health")
        conn.getresponse().read()
    row("serve: GET /v1/health (HTTP alone)", spaced(health, a.runs, 0.01), n50, n99)
    mcp = Mcp(a.sentry)
    row("mcp: tools/call run_python (cold runner)", spaced(mcp.run, a.runs), n50, n99)
    mcp.stop()

    print(f"\nthroughput, `pass`, {a.seconds:g} s each (runs/s):\n")
    print("| path | 1 client | 8 clients |\n| --- | --- | --- |")
    native_pass = lambda: subprocess.run([py, "-c", "pass"], check=True)
    print(f"| native `python3 -c pass` | {throughput(native_pass, a.seconds, 1):.1f} | "
          f"{throughput(native_pass, a.seconds, 8):.1f} |")
    local = __import__("threading").local()
    def serve_pass():
        if not hasattr(local, "c"):
            local.c = serve.conn()
        serve.run(local.c, "pass")
    print(f"| serve: POST /v1/runs | {throughput(serve_pass, a.seconds, 1):.1f} | "
          f"{throughput(serve_pass, a.seconds, 8):.1f} |")
    serve.stop()
    if a.isolation:
        t = time.perf_counter()
        env = dict(os.environ, SENTRY_ISOLATION_RUNS="1000", SENTRY_BINARY=a.sentry)
        r = subprocess.run([a.isolation, "--gtest_filter=Isolation.*"], env=env)
        print(f"\nisolation: 1,000 runs through serve: {'passed' if r.returncode == 0 else 'FAILED'}"
              f" in {time.perf_counter() - t:.0f} s")
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
