#!/bin/bash
# Cold `python3 -c pass` as root and, in the same hyperfine run, as an
# ordinary user in each id mode: sentry-rl-subid (a subordinate range:
# --userns=range and --userns=single) and sentry-rl-single (no range). Each
# command goes through setpriv (no PAM), root's too, so all pay the same.
# Run as root: bench/rootless.sh [build/sentry/sentry] [RUNS]
set -eu
SENTRY=$(realpath "${1:-build/sentry/sentry}")
RUNS=${2:-40}
PY=/usr/bin/python3
for u in sentry-rl-subid sentry-rl-single; do
  getent passwd "$u" >/dev/null || { echo "make $u first (rootless_test does)"; exit 1; }
done
as() {  # USER: the setpriv prefix that becomes USER
  echo "setpriv --reuid=$(id -u "$1") --regid=$(id -g "$1") --init-groups env -i PATH=/usr/bin:/bin HOME=/tmp"
}
cd /tmp
json=$(mktemp)
hyperfine -N -w 3 -r "$RUNS" --export-json "$json" \
  -n root "$(as root) $SENTRY run -- $PY -c pass" \
  -n "user, range" "$(as sentry-rl-subid) $SENTRY run --userns=range -- $PY -c pass" \
  -n "user, single (has a range)" "$(as sentry-rl-subid) $SENTRY run --userns=single -- $PY -c pass" \
  -n "user, single (no range)" "$(as sentry-rl-single) $SENTRY run -- $PY -c pass" >/dev/null
"$PY" - "$json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
root = res[0]["median"]
print("| command | median | mean ± sd | min | /root |")
print("| --- | --- | --- | --- | --- |")
for r in res:
    print("| %s | %.1f ms | %.1f ± %.1f | %.1f | %.2fx |" % (r["command"], r["median"] * 1e3,
          r["mean"] * 1e3, r["stddev"] * 1e3, r["min"] * 1e3, r["median"] / root))
PY
rm -f "$json"
