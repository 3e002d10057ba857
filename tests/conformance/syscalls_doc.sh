#!/usr/bin/env bash
# docs/syscalls.md is generated: `sentry syscalls --markdown --conformance
# FILE`, FILE made by coverage.py from one native and two sentry runs (with
# and without namespaces) of the conformance suite. This compares the committed file with what the binaries
# print now (the syscalls_doc test), or with --write rewrites it.
#
# usage: syscalls_doc.sh SENTRY CONFORMANCE_TEST [--write]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sentry=$1
conformance=$2
mode=${3:-}
tmp=$(mktemp -d /tmp/syscalls-doc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/coverage.py" "$sentry" "$conformance" "$tmp/cases.json"
"$sentry" syscalls --markdown --conformance "$tmp/cases.json" >"$tmp/syscalls.md"
if [ "$mode" = --write ]; then
  cp "$tmp/syscalls.md" "$root/docs/syscalls.md"
  echo "wrote $root/docs/syscalls.md"
  exit 0
fi
# Compared exactly: a census phase is the marking task's own (threads and
# children inherit it), so a case's calls do not depend on what earlier cases
# left running, and which cases touch each row is the same from run to run.
if ! diff -u "$root/docs/syscalls.md" "$tmp/syscalls.md"; then
  echo "docs/syscalls.md differs from what sentry prints now (above); regenerate it with" >&2
  echo "  tests/conformance/syscalls_doc.sh $sentry $conformance --write" >&2
  exit 1
fi
