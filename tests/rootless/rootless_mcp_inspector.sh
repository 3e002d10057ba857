#!/bin/sh
# The MCP Inspector's CLI launching `sentry mcp` as an ordinary user, as a
# desktop client does: tests/agent/mcp_inspector_test.sh run by that user
# (its npm cache is its own ~/.npm: the first run on a machine downloads the
# Inspector), then one call whose `walls` must be the rootless ones.
# As root it makes the system user sentry-rl-single (no subordinate range,
# as rootless_test does) and runs itself as that user.
# Exit 77 (skipped) only where npx is missing.
set -u
SENTRY=${1:?usage: rootless_mcp_inspector.sh SENTRY_BINARY AGENT_INSPECTOR_SCRIPT}
AGENT_SCRIPT=${2:?usage: rootless_mcp_inspector.sh SENTRY_BINARY AGENT_INSPECTOR_SCRIPT}
if ! command -v npx >/dev/null 2>&1; then
  echo "SKIP: npx is not installed (apt-get install npm), so the MCP Inspector cannot run"
  exit 77
fi
if [ "$(id -u)" = 0 ]; then
  name=sentry-rl-single
  getent passwd "$name" >/dev/null || /usr/sbin/useradd -r -m -s /bin/sh "$name" || exit 1
  home=$(getent passwd "$name" | cut -d: -f6)
  [ -d "$home" ] || { mkdir -p "$home" && chown "$name:" "$home"; }
  exec /usr/sbin/runuser -u "$name" -- /usr/bin/env -i PATH=/usr/bin:/bin HOME="$home" \
    LANG=C.UTF-8 /bin/sh "$0" "$SENTRY" "$AGENT_SCRIPT"
fi
echo "as uid $(id -u)"
fail=0
/bin/sh "$AGENT_SCRIPT" "$SENTRY" || fail=1
out=$(npx -y @modelcontextprotocol/inspector --cli "$SENTRY" mcp --method tools/call \
  --tool-name run_command --tool-arg 'argv=["id", "-u"]' 2>&1)
# Without root: rlimits hold the limits, no cgroup is claimed.
for want in '"rlimit-nproc"' '"landlock-abi' '"isError": false' '"stdout": "1000\n"'; do
  if printf '%s' "$out" | grep -qF -- "$want"; then
    echo "ok: rootless run has $want"
  else
    echo "FAIL: expected $want in:"; printf '%s\n' "$out"; fail=1
  fi
done
if printf '%s' "$out" | grep -qF 'cgroup'; then
  echo "FAIL: a cgroup is claimed without root:"; printf '%s\n' "$out"; fail=1
fi
exit $fail
