#!/usr/bin/env bash
# What the walls cost and what a run leaves behind.
#
# usage: bench/walls.sh SENTRY_BINARY [RUNS]
#
#   1. Overhead of the limits: `sentry run -- python3 -c pass` with every limit
#      on (timeout, memory, pids, cpus, disk, nofile: cgroups made and removed)
#      against none (--no-cgroups --timeout 0), with hyperfine.
#   2. The sentry's own peak RSS for that run (its --log line's
#      sentryMaxRssBytes, getrusage(RUSAGE_SELF)), median of 20 runs.
#   3. RUNS (default 1000) sequential runs, each of which writes a file in
#      /tmp, /dev/shm and its home and leaves a background child behind; before
#      and after: host processes of the sandbox uids, mounts, sentry-* cgroup
#      directories, entries in the host's /tmp and /dev/shm, and the fds any
#      process holds on seccomp listeners, pidfds, the backing store or
#      namespaces. Every run must exit 0.
# Prints a markdown report on stdout; needs root (cgroups) and hyperfine.
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 SENTRY_BINARY [RUNS]" >&2; exit 2; }
SENTRY=$(realpath "$1")
RUNS=${2:-1000}
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/sentry-walls-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

echo "## Overhead of the limits (python3 -c pass)" 
hyperfine -N --warmup 5 --min-runs 40 --export-markdown "$WORK/walls.md" \
  -n "all limits" "$SENTRY run --timeout 30 --memory 256m --pids-limit 64 --cpus 1 --disk 100m --nofile 256 -- $PY -c pass" \
  -n "no limits" "$SENTRY run --no-cgroups --timeout 0 -- $PY -c pass" >&2
cat "$WORK/walls.md"
echo

echo "## The sentry's own peak RSS"
for _ in $(seq 20); do "$SENTRY" run --log "$WORK/rss.jsonl" -- $PY -c pass; done
$PY - "$WORK/rss.jsonl" <<'PYEOF'
import json, statistics, sys
rss = [json.loads(l)["sentryMaxRssBytes"] for l in open(sys.argv[1])]
print(f"median {statistics.median(rss)/2**20:.1f} MiB, max {max(rss)/2**20:.1f} MiB over {len(rss)} runs")
PYEOF
echo

snapshot() {
  local out=$1
  {
    echo "procs $(ps -e -o uid= | awk '$1==2000000000 || $1==2000000001' | wc -l)"
    echo "mounts $(wc -l </proc/self/mountinfo)"
    echo "cgroups $(ls -d /sys/fs/cgroup/*/sentry-* /sys/fs/cgroup/*/*/sentry-* 2>/dev/null | wc -l)"
    echo "tmp $(ls -A /tmp | grep -v "^$(basename "$WORK")\$" | wc -l)"
    echo "shm $(ls -A /dev/shm | wc -l)"
    # fds any process holds on what a run makes: seccomp listeners, pidfds,
    # the backing store, sandbox namespaces
    echo "sentry-fds $(find /proc/[0-9]*/fd -maxdepth 1 -type l -printf '%l\n' 2>/dev/null |
      grep -cE 'seccomp|pidfd|sentry-store|(net|mnt|user|pid):\[' || true)"
  } >"$out"
}

echo "## $RUNS sequential runs"
GUEST='import os, subprocess
open("/tmp/left", "w").write("x"); open("/dev/shm/left", "w").write("x"); open("left", "w").write("x")
subprocess.Popen(["/bin/sleep", "100"])'
snapshot "$WORK/before"
start=$(date +%s.%N)
failed=0
for i in $(seq "$RUNS"); do
  "$SENTRY" run --timeout 10 -- $PY -c "$GUEST" >/dev/null 2>>"$WORK/errors" || failed=$((failed + 1))
  if ((i % 100 == 0)); then echo "  $i runs" >&2; fi
done
end=$(date +%s.%N)
sleep 1
snapshot "$WORK/after"
echo "$RUNS runs in $(echo "$end - $start" | bc) s, $failed failed"
echo
echo "| | before | after |"
echo "| --- | --- | --- |"
paste "$WORK/before" "$WORK/after" | awk '{printf "| %s | %s | %s |\n", $1, $2, $4}'
[[ $failed -eq 0 ]] || { echo "errors:"; head -5 "$WORK/errors"; exit 1; }
