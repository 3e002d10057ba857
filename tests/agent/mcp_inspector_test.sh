#!/bin/sh
# A real MCP client against `sentry mcp`: the MCP Inspector's CLI mode (npm
# @modelcontextprotocol/inspector) lists the tools and calls both (three npx starts: each
# costs seconds).
# Exit 77 (skipped) only where npx is missing.
set -u
SENTRY=${1:?usage: mcp_inspector_test.sh SENTRY_BINARY}
if ! command -v npx >/dev/null 2>&1; then
  echo "SKIP: npx is not installed (apt-get install npm), so the MCP Inspector cannot run"
  exit 77
fi
INSPECTOR="npx -y @modelcontextprotocol/inspector --cli"
fail=0
check() {  # check NAME EXPECTED-TEXT OUTPUT
  if printf '%s' "$3" | grep -qF -- "$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: expected '$2' in:"; printf '%s\n' "$3"; fail=1
  fi
}
out=$($INSPECTOR "$SENTRY" mcp --method tools/list 2>&1)
check "tools/list names run_python" '"name": "run_python"' "$out"
check "tools/list names run_command" '"name": "run_command"' "$out"
check "tools/list has an outputSchema" '"outputSchema"' "$out"
out=$($INSPECTOR "$SENTRY" mcp --method tools/call --tool-name run_python \
  --tool-arg 'code=import json
json.loads("{")' 2>&1)
check "a failing run is an error" '"isError": true' "$out"
check "its traceback is intact" 'json.decoder.JSONDecodeError' "$out"
out=$($INSPECTOR "$SENTRY" mcp --method tools/call --tool-name run_command \
  --tool-arg 'argv=["sh", "-c", "echo $((48271*6933))"]' 2>&1)
check "run_command runs" '334662843' "$out"
check "a run that succeeded is not an error" '"isError": false' "$out"
exit $fail
