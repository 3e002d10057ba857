#!/usr/bin/env bash
# Runs the conformance binary natively as uid 1000 (the sandbox's own uid), from
# a copy in a fresh directory that uid can reach, with /tmp as the cwd.
set -euo pipefail
bin="$1"
shift
dir=$(mktemp -d /tmp/conformance-native.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$bin" "$dir/conformance_test"
chmod 755 "$dir" "$dir/conformance_test"
cd /tmp
if [ "$(id -u)" = 0 ]; then
  exec setpriv --reuid=1000 --regid=1000 --clear-groups "$dir/conformance_test" "$@"
fi
"$dir/conformance_test" "$@"
