#!/bin/sh
# Warm interpreters (`sentry pool --python`) against native cold starts, side
# by side in one run: latency of print(48271*6933) and of a numpy+pandas
# script (requests 100 ms apart, native and warm interleaved so that both see
# the same load), sequential and 8-client throughput against native
# `python3 -c pass`, and the PSS of each pooled sandbox; then the latencies
# again through the in-process WarmPythonPool (bench_warm_api, if built).
# Prints a markdown table. Not a test: figures depend on the machine and its
# load.
#
# usage: bench/warm.sh [SENTRY] [N]    (as root; N latency samples, default 60)
set -eu
SENTRY=${1:-build/sentry/sentry}
N=${2:-60}
exec /usr/bin/python3 - "$SENTRY" "$N" <<'PY'
import os, subprocess, sys, threading, time

sentry, n = os.path.abspath(sys.argv[1]), int(sys.argv[2])
py = '/usr/bin/python3'
PRINT = 'print(48271*6933)'
PANDAS = ("import numpy as np, pandas as pd\n"
          "df = pd.DataFrame({'a': np.arange(100), 'b': np.arange(100) * 2})\n"
          "print(int(df.sum().sum()))\n")
REFILL = os.cpu_count()  # sandboxes made at once: the machine's CPUs
tmp = subprocess.run(['mktemp', '-d'], capture_output=True, text=True).stdout.strip()

def start_pool(name, size, preload=None):
    sock = f'{tmp}/{name}.sock'
    args = [sentry, 'pool', '--python', '--socket', sock, '--size', str(size), '--refill', str(REFILL)]
    if preload:
        args += ['--preload', preload]
    p = subprocess.Popen(args, stderr=open(f'{tmp}/{name}.log', 'w'))
    deadline = time.time() + 120
    while len(ready(p.pid)) < size and time.time() < deadline:
        time.sleep(0.2)
    return p, sock

def children(pid):
    out = []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                stat = open(f'/proc/{d}/stat').read()
            except OSError:
                continue
            if int(stat.rsplit(')', 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out

def tree(pid):
    out = [pid]
    for c in children(pid):
        out += tree(c)
    return out

def comm(pid):
    try:
        return open(f'/proc/{pid}/comm').read().strip()
    except OSError:
        return ''

def guests(daemon):
    return [p for p in tree(daemon) if comm(p).startswith('python3')]

def ready(daemon):
    # A warm interpreter blocks in read(0, ...) on its request.
    out = []
    for p in guests(daemon):
        try:
            if open(f'/proc/{p}/syscall').read().startswith('0 0x0 '):
                out.append(p)
        except OSError:
            pass
    return out

def pss_kib(pid):
    try:
        for line in open(f'/proc/{pid}/smaps_rollup'):
            if line.startswith('Pss:'):
                return int(line.split()[1])
    except OSError:
        pass
    return 0

def once(cmd):
    s = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True)
    ms = (time.perf_counter() - s) * 1000
    if r.returncode != 0 or b'cold start' in r.stderr:
        sys.exit(f'bench: {cmd[:4]} failed or ran cold: {r.stderr[-300:]!r}')
    return ms

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]

def interleaved(native, warm, count):
    a, b = [], []
    for _ in range(count):
        a.append(once(native)); time.sleep(0.1)
        b.append(once(warm)); time.sleep(0.1)
    return a, b

rows = []
def row(what, native, warm):
    rows.append((what, native, warm))

# Latency: print.
pool, sock = start_pool('print', 4)
nat, wrm = interleaved([py, '-c', PRINT], [sentry, 'run', '--pool', sock, '--', 'python3', '-c', PRINT], n)
row('print(48271*6933), p50 ms', pct(nat, .5), pct(wrm, .5))
row('print(48271*6933), p99 ms', pct(nat, .99), pct(wrm, .99))

# Throughput: back-to-back `python3 -c pass`, refill included.
def rate(cmd, seconds=10, clients=1):
    done = [0]
    stop = time.time() + seconds
    def loop():
        while time.time() < stop:
            once(cmd)
            done[0] += 1
    ts = [threading.Thread(target=loop) for _ in range(clients)]
    s = time.time()
    for t in ts: t.start()
    for t in ts: t.join()
    return done[0] / (time.time() - s)
warm_pass = [sentry, 'run', '--pool', sock, '--', 'python3', '-c', 'pass']
row('sequential runs/s (`-c pass`)', rate([py, '-c', 'pass']), rate(warm_pass))
row('8 clients runs/s (`-c pass`)', rate([py, '-c', 'pass'], clients=8), rate(warm_pass, clients=8))

# Memory of the pool's sandboxes, once it is full again.
while len(ready(pool.pid)) < 4:
    time.sleep(0.2)
def sandbox_pss(daemon):
    per = []
    for worker in children(daemon):
        procs = tree(worker)
        total = sum(pss_kib(p) for p in procs)
        guest = sum(pss_kib(p) for p in procs if comm(p).startswith('python3'))
        if guest:
            per.append((total, guest))
    return per
def idle_native(preload):
    code = (f'import {preload}\n' if preload else '') + 'import sys; print(1, flush=True); sys.stdin.read()'
    p = subprocess.Popen([py, '-c', code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdout.readline()
    kib = pss_kib(p.pid)
    p.stdin.close(); p.wait()
    return kib
per = sandbox_pss(pool.pid)
native_kib = idle_native(None)
if per:
    total = sum(t for t, _ in per) / len(per)
    guest = sum(g for _, g in per) / len(per)
    row('PSS per sandbox, MiB (native: idle python3)', native_kib / 1024, total / 1024)
    row('  of which the interpreter (python3), MiB', native_kib / 1024, guest / 1024)
    row('  beyond the interpreter (sentry, pid 1), MiB', 0, (total - guest) / 1024)
pool.terminate(); pool.wait()

# Latency with numpy and pandas preloaded.
pool, sock = start_pool('pandas', 4, 'numpy,pandas')
per = sandbox_pss(pool.pid)
nat, wrm = interleaved([py, '-c', PANDAS], [sentry, 'run', '--pool', sock, '--', 'python3', '-c', PANDAS], max(10, n // 4))
row('numpy+pandas DataFrame sum, p50 ms', pct(nat, .5), pct(wrm, .5))
row('numpy+pandas DataFrame sum, p99 ms', pct(nat, .99), pct(wrm, .99))
if per:
    total = sum(t for t, _ in per) / len(per)
    guest = sum(g for _, g in per) / len(per)
    native_kib = idle_native('numpy, pandas')
    row('PSS per numpy+pandas sandbox, MiB', native_kib / 1024, total / 1024)
    row('  beyond the interpreter, MiB', 0, (total - guest) / 1024)
pool.terminate(); pool.wait()

print(f'| {n} samples, load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, pools of 4, --refill {REFILL} | native | warm | warm/native |')
print('| --- | --- | --- | --- |')
for what, a, b in rows:
    ratio = f'{b / a:.2f}x' if a else '—'
    print(f'| {what} | {a:.1f} | {b:.1f} | {ratio} |')
# The in-process API (serve's and mcp's way in), where it is built.
api = os.path.join(os.path.dirname(sentry), '..', 'bench', 'bench_warm_api')
sys.stdout.flush()
if os.path.exists(api):
    subprocess.run([api, sentry, str(n)])
    subprocess.run([api, sentry, str(max(10, n // 4)), 'numpy,pandas', PANDAS])
subprocess.run(['rm', '-rf', tmp])
PY
