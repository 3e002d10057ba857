#!/usr/bin/env bash
# docs/syscalls.md is generated: `sentry syscalls --markdown --conformance
# FILE`, FILE made by coverage.py from one native and one sentry run of the
# conformance suite. This compares the committed file with what the binaries
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
# Which cases touch a row varies a little from run to run (a case that
# resolves a name or starts a thread makes a call only sometimes), so the
# comparison reads a row's cases as "N, all pass..." without N and the ids
# listed: the rows themselves, and that each trapped row's cases all pass in
# both runs, are what must not change unnoticed.
normalize() {
  sed -E 's/\| [0-9]+, all pass natively and under sentry: [^|]*\|/| (cases), all pass natively and under sentry |/' "$1"
}
if ! diff -u <(normalize "$root/docs/syscalls.md") <(normalize "$tmp/syscalls.md"); then
  echo "docs/syscalls.md differs from what sentry prints now (above); regenerate it with" >&2
  echo "  tests/conformance/syscalls_doc.sh $sentry $conformance --write" >&2
  exit 1
fi
