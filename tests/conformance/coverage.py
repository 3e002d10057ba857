#!/usr/bin/python3
"""Runs the conformance suite natively and under `sentry run --census` and
writes which syscalls each case calls and whether it passes in each run: the
FILE of `sentry syscalls --conformance FILE` (docs/syscalls.md).

Each case marks itself as a census phase (conformance_util.cc), so one run
under sentry counts the calls of every case apart.

usage: coverage.py SENTRY CONFORMANCE_TEST OUT.json
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STATUS = re.compile(r"^\[\s*(OK|FAILED|SKIPPED)\s*\] (\S+) \(\d+ ms\)$")
WORDS = {"OK": "pass", "FAILED": "fail", "SKIPPED": "skip"}


def statuses(output):
    out = {}
    for line in output.splitlines():
        m = STATUS.match(line.strip())
        if m:
            out[m.group(2)] = WORDS[m.group(1)]
    return out


def main():
    sentry, binary, out_path = sys.argv[1:4]
    native = subprocess.run([os.path.join(HERE, "run_native.sh"), binary],
                            capture_output=True, text=True, timeout=300)
    with tempfile.TemporaryDirectory() as tmp:
        census_path = os.path.join(tmp, "census.json")
        guest = "/home/sandbox/conformance_test"
        sandboxed = subprocess.run(
            [sentry, "run", "--timeout", "300", "--census", census_path, "--copy",
             binary + ":" + guest, "--", guest],
            capture_output=True, text=True, timeout=400)
        with open(census_path) as f:
            census = json.load(f)
    native_status = statuses(native.stdout)
    sentry_status = statuses(sandboxed.stdout)
    calls = {}
    for phase in census.get("phases", []):
        calls.setdefault(phase["label"], set()).update(phase["calls"])
    cases = {}
    for name in sorted(set(native_status) | set(sentry_status) | set(calls)):
        cases[name] = {
            "native": native_status.get(name, "absent"),
            "sentry": sentry_status.get(name, "absent"),
            "syscalls": sorted(calls.get(name, ())),
        }
    with open(out_path, "w") as f:
        json.dump({"cases": cases}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
