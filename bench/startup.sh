#!/usr/bin/env bash
# Start-up of `python3 -c pass`: native, a cold `sentry run`, a run in a warm
# sandbox of `sentry pool`, and (unless SKIP_RUNSC=1) gVisor's runsc.
#
# usage: bench/startup.sh SENTRY_BINARY [ROUNDS]
#
# The commands are interleaved, ROUNDS (default 40) rounds of one run each,
# with 100 ms between runs: the VM drifts by 20 % within minutes, so only
# runs side by side compare, and a pool refills its sandbox between runs as it
# would between an agent's tool calls (back to back, the refill would share
# the two CPUs with the next run). Prints the medians, quartiles and ratios
# as a markdown table; runsc gets ROUNDS/4 rounds (it takes ~0.3 s a run).
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 SENTRY_BINARY [ROUNDS]" >&2; exit 2; }
SENTRY=$(realpath "$1")
ROUNDS=${2:-40}
PY=/usr/bin/python3
RUNSC=${RUNSC:-runsc}
WORK=$(mktemp -d /tmp/sentry-startup-XXXXXX)
SOCK=$WORK/pool.sock
"$SENTRY" pool --socket "$SOCK" --size 2 2>"$WORK/pool.log" &
POOL=$!
trap 'kill $POOL 2>/dev/null; wait $POOL 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.05; done
sleep 0.5  # its sandboxes are made

cmds=("native=$PY -c pass" "cold=$SENTRY run -- $PY -c pass"
      "pool=$SENTRY run --pool $SOCK -- $PY -c pass")
if [[ ${SKIP_RUNSC:-0} != 1 ]] && command -v "$RUNSC" >/dev/null; then
  cmds+=("runsc=$RUNSC --rootless --network=none --platform=ptrace do $PY -c pass")
fi
"$PY" - "$ROUNDS" "${cmds[@]}" <<'EOF'
import statistics, subprocess, sys, time
rounds = int(sys.argv[1])
cmds = [(a.split("=", 1)[0], a.split("=", 1)[1].split()) for a in sys.argv[2:]]
times = {name: [] for name, _ in cmds}
for i in range(rounds):
    for name, argv in cmds:
        if name == "runsc" and i % 4:
            continue
        time.sleep(0.1)
        start = time.perf_counter()
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
        times[name].append((time.perf_counter() - start) * 1e3)
native = statistics.median(times["native"])
runsc = statistics.median(times["runsc"]) if times.get("runsc") else None
print("| command | runs | median | quartiles | /native | runsc/it |")
print("| --- | --- | --- | --- | --- | --- |")
for name, t in times.items():
    t.sort()
    m = statistics.median(t)
    q = f"{t[len(t) // 4]:.1f}-{t[3 * len(t) // 4]:.1f} ms"
    vs = f"{runsc / m:.1f}x" if runsc else "-"
    print(f"| {name} | {len(t)} | {m:.1f} ms | {q} | {m / native:.2f}x | {vs} |")
EOF
