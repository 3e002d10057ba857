#!/bin/sh
# A real MCP client against `sentry mcp`: the MCP Inspector's CLI mode (npm
# @modelcontextprotocol/inspector) lists the tools and calls both, then uses a
# session across calls: state kept over three calls, a plot as an image block,
# a file written then read. The CLI makes one call per run and starts its
# server each time, so for the session one `sentry mcp` lives in a relay hub
# (mcp_relay.py) that each run reaches (every npx start costs seconds).
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

# A session across runs of the CLI: one `sentry mcp` behind the relay.
DIR=$(dirname "$0")
SOCK=$(mktemp -u /tmp/sentry-mcp-relay-XXXXXX.sock)
/usr/bin/python3 "$DIR/mcp_relay.py" hub "$SOCK" -- "$SENTRY" mcp &
HUB=$!
trap 'kill $HUB 2>/dev/null; wait $HUB 2>/dev/null; rm -f "$SOCK"' EXIT
i=0
while [ ! -S "$SOCK" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
RELAY="/usr/bin/python3 $DIR/mcp_relay.py connect $SOCK"
out=$($INSPECTOR $RELAY --method tools/call --tool-name create_session 2>&1)
sid=$(printf '%s' "$out" | grep -o 'ses_[0-9a-f]*' | head -1)
check "create_session gives a sessionId" 'ses_' "$sid"
$INSPECTOR $RELAY --method tools/call --tool-name run_python --tool-arg "sessionId=$sid" \
  --tool-arg 'code=x = 40' >/dev/null 2>&1
$INSPECTOR $RELAY --method tools/call --tool-name run_python --tool-arg "sessionId=$sid" \
  --tool-arg 'code=x += 1' >/dev/null 2>&1
out=$($INSPECTOR $RELAY --method tools/call --tool-name run_python --tool-arg "sessionId=$sid" \
  --tool-arg 'code=import matplotlib.pyplot as plt
plt.plot([1, x, 2])
plt.show()
x + 1' 2>&1)
check "the state stays across three calls" '"text": "42"' "$out"
check "a plot comes back as an image block" '"type": "image"' "$out"
check "its data is a PNG" '"data": "iVBORw0K' "$out"
check "its type is image/png" '"mimeType": "image/png"' "$out"
$INSPECTOR $RELAY --method tools/call --tool-name write_file --tool-arg "sessionId=$sid" \
  --tool-arg 'path=notes/n.txt' --tool-arg 'text=written by the inspector' >/dev/null 2>&1
out=$($INSPECTOR $RELAY --method tools/call --tool-name read_file --tool-arg "sessionId=$sid" \
  --tool-arg 'path=notes/n.txt' 2>&1)
check "a file written is read back" '"text": "written by the inspector"' "$out"
exit $fail
