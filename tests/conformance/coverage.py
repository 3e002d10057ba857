#!/usr/bin/python3
"""Runs the conformance suite natively and under `sentry run --census`, with
namespaces and without (`--no-namespaces`, less the cases that sandbox
refuses by design: seccomp_only_skips.txt), and writes which syscalls each
case calls and whether it passes in each run: the FILE of `sentry syscalls
--conformance FILE` (docs/syscalls.md). "sentry"/"syscalls" are the run with
namespaces, "sentryAlone"/"syscallsAlone" the one without ("excluded" for a
skipped case).

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


def census_run(sentry, binary, extra_flags, gtest_args):
    """The statuses and the calls of each case in one census run."""
    with tempfile.TemporaryDirectory() as tmp:
        census_path = os.path.join(tmp, "census.json")
        guest = "/home/sandbox/conformance_test"
        sandboxed = subprocess.run(
            [sentry, "run", *extra_flags, "--timeout", "300", "--census", census_path,
             "--copy", binary + ":" + guest, "--", guest, *gtest_args],
            capture_output=True, text=True, timeout=400)
        with open(census_path) as f:
            census = json.load(f)
    calls = {}
    for phase in census.get("phases", []):
        calls.setdefault(phase["label"], set()).update(phase["calls"])
    return statuses(sandboxed.stdout), calls


def main():
    sentry, binary, out_path = sys.argv[1:4]
    native = subprocess.run([os.path.join(HERE, "run_native.sh"), binary],
                            capture_output=True, text=True, timeout=300)
    native_status = statuses(native.stdout)
    sentry_status, calls = census_run(sentry, binary, [], [])
    with open(os.path.join(HERE, "seccomp_only_skips.txt")) as f:
        skips = f.read().strip()
    alone_status, alone_calls = census_run(sentry, binary, ["--no-namespaces"],
                                           ["--gtest_filter=-" + skips])
    cases = {}
    for name in sorted(set(native_status) | set(sentry_status) | set(calls)):
        cases[name] = {
            "native": native_status.get(name, "absent"),
            "sentry": sentry_status.get(name, "absent"),
            "syscalls": sorted(calls.get(name, ())),
            "sentryAlone": alone_status.get(name, "excluded"),
            "syscallsAlone": sorted(alone_calls.get(name, ())),
        }
    with open(out_path, "w") as f:
        json.dump({"cases": cases}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
