#!/usr/bin/env bash
# Thousands of guest threads blocked in trapped calls at once, and what the
# sentry pays for them: its thread count and RSS, sampled while they wait.
#   bench/waiting/run.sh [SENTRY_BINARY] [THREADS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sentry="${1:-$here/../../build/sentry/sentry}"
n="${2:-2000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/blocked_senders.py" "$work/"
cd "$work"
HOLD_S=2 "$sentry" run --pids-limit $((n + 64)) --nofile $((n + 256)) --memory 2g \
  --env HOLD_S=2 -- /usr/bin/python3 blocked_senders.py "$n" >out.txt 2>err.txt &
pid=$!
for _ in $(seq 1 600); do
  grep -q '^waiting' out.txt 2>/dev/null && break
  sleep 0.05
done
sleep 0.5
threads=$(awk '/^Threads:/ {print $2}' /proc/$pid/status)
rss_kb=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
rc=0
wait $pid || rc=$?
cat out.txt
echo "sentry while they waited: threads=$threads rss_kib=$rss_kb (exit $rc)"
[ "$rc" = 0 ] || { tail -5 err.txt; exit 1; }
