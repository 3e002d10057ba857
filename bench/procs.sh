#!/usr/bin/env bash
# Process figures: fork+exec+wait of /bin/true, a 4-worker CPU-bound Python
# workload, and the 10,000-child fork+exec race, natively, under sentry and
# (the first) under runsc. Prints markdown; raw hyperfine JSON stays in a
# temporary directory whose name goes to stderr.
#
# usage: bench/procs.sh BUILD_DIR
#   BUILD_DIR  a build with sentry/sentry and tests/e2e/fork_exec_race.
# Environment: RUNSC (default runsc), SKIP_RUNSC=1, LOOP_N (default 500),
#   RACE_ROUNDS (per thread, 8 threads; default 1250 = 10,000 children).
set -euo pipefail
[[ $# -eq 1 && -x $1/sentry/sentry ]] || {
  echo "usage: $0 BUILD_DIR (with sentry/sentry built)" >&2
  exit 2
}
BUILD=$(cd "$1" && pwd)
SENTRY=$BUILD/sentry/sentry
RACE=$BUILD/tests/e2e/fork_exec_race
RUNSC=${RUNSC:-runsc}
LOOP_N=${LOOP_N:-500}
RACE_ROUNDS=${RACE_ROUNDS:-1250}
WORK=$(mktemp -d /tmp/sentry-procs-bench.XXXXXX)
echo "raw results: $WORK" >&2
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

LOOP="i=0; while [ \$i -lt $LOOP_N ]; do /bin/true; i=\$((i+1)); done"
cat >"$WORK/cpu4.py" <<'EOF'
# 4 processes of pure integer arithmetic; prints the wall time of the work alone.
import os, sys, time
N = int(sys.argv[1]) if len(sys.argv) > 1 else 25_000_000
def work():
    x = 0
    for i in range(N):
        x = (x * 31 + i) % 1000003
    return x
t = time.perf_counter()
pids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        work()
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print(f"{time.perf_counter() - t:.3f}")
EOF
chmod 644 "$WORK/cpu4.py"

HF=(hyperfine -N --warmup 2 --style=basic)
runsc_ok=0
if [[ ${SKIP_RUNSC:-0} != 1 ]] && "$RUNSC" --rootless --network=none --platform=ptrace do /bin/true \
  >/dev/null 2>&1; then
  runsc_ok=1
fi

# 1. fork+exec+wait: the loop and the empty loop, so the fixed start-up cost
#    (shell, sandbox) cancels out.
for n in 0 "$LOOP_N"; do
  body="i=0; while [ \$i -lt $n ]; do /bin/true; i=\$((i+1)); done"
  cmds=("/bin/sh -c '$body'" "$SENTRY run --timeout 0 -- /bin/sh -c '$body'")
  [[ $runsc_ok == 1 ]] && cmds+=("$RUNSC --rootless --network=none --platform=ptrace do /bin/sh -c '$body'")
  "${HF[@]}" --runs 10 --export-json "$WORK/loop$n.json" "${cmds[@]}" >&2
done

# 2. CPU-bound: 4 forked workers; wall time measured inside the guest, 9 runs
#    each, native and sentry alternating so that drifts of the VM hit both.
: >"$WORK/cpu4.native"
: >"$WORK/cpu4.sentry"
for _ in $(seq 1 9); do
  /usr/bin/python3 "$WORK/cpu4.py" >>"$WORK/cpu4.native"
  "$SENTRY" run --timeout 0 --copy "$WORK/cpu4.py:/tmp/cpu4.py" -- /usr/bin/python3 /tmp/cpu4.py \
    >>"$WORK/cpu4.sentry"
done

# 3. The race: 8 threads x RACE_ROUNDS children each.
if [[ -x $RACE ]]; then
  (cd /tmp && /usr/bin/time -f %e -o "$WORK/race.native" "$RACE" 8 "$RACE_ROUNDS" >"$WORK/race.native.out")
  /usr/bin/time -f %e -o "$WORK/race.sentry" "$SENTRY" run --timeout 0 --pids-limit 512 \
    --copy "$RACE:/tmp/fork_exec_race" -- /tmp/fork_exec_race 8 "$RACE_ROUNDS" >"$WORK/race.sentry.out"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

/usr/bin/python3 - "$WORK" "$LOOP_N" "$runsc_ok" <<'PYEOF'
import json, os, statistics, sys
work, n, runsc_ok = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def stat(name, key):
    with open(os.path.join(work, name)) as f:
        return [r[key] for r in json.load(f)["results"]]
names = ["native", "sentry"] + (["runsc"] if runsc_ok else [])
print("| figure | " + " | ".join(names) + " |")
print("| --- |" + " --- |" * len(names))
for key in ("median", "min"):
    empty, full = stat("loop0.json", key), stat(f"loop{n}.json", key)
    per = {k: (full[i] - empty[i]) / n * 1e3 for i, k in enumerate(names)}
    print(f"| fork+exec+wait `/bin/true`, per child ({key} of 10 runs of {n} in `sh`, "
          f"empty loop subtracted) | " + " | ".join(f"{per[k]:.2f} ms" for k in names) + " |")
    print(f"| ratio to native ({key}) | " + " | ".join(f"{per[k] / per['native']:.2f}×" for k in names) + " |")
cpu = {}
for env in ("native", "sentry"):
    with open(os.path.join(work, f"cpu4.{env}")) as f:
        cpu[env] = [float(x) for x in f.read().split()]
print()
print("| figure | native | sentry | sentry/native |")
print("| --- | --- | --- | --- |")
med = {e: statistics.median(cpu[e]) for e in cpu}
print(f"| 4 CPU-bound workers, wall (median of 9; min–max) | {med['native']:.2f} s "
      f"({min(cpu['native']):.2f}–{max(cpu['native']):.2f}) | {med['sentry']:.2f} s "
      f"({min(cpu['sentry']):.2f}–{max(cpu['sentry']):.2f}) | {med['sentry'] / med['native']:.3f}× |")
race = {}
for env in ("native", "sentry"):
    p = os.path.join(work, f"race.{env}")
    if os.path.exists(p):
        out = open(os.path.join(work, f"race.{env}.out")).read().strip()
        race[env] = (float(open(p).read().strip()), out)
if len(race) == 2:
    print(f"| fork_exec_race, 8 threads, 10,000 children (wall) | {race['native'][0]:.1f} s "
          f"({race['native'][1]}) | {race['sentry'][0]:.1f} s ({race['sentry'][1]}) | "
          f"{race['sentry'][0] / race['native'][0]:.2f}× |")
PYEOF
