#!/usr/bin/python3
"""Runs CPython's own regression tests natively and under sentry, and compares.

usage: run_suite.py SENTRY [--modules test_os,test_signal] [--out DIR] [--only native|sentry]
                    [--sentry-flags "..."] [--keep] [--check]

For each module, `python3 -m test -v --junit-xml J MODULE` runs
  - natively, as uid 1000 (setpriv) with a clean environment and a scratch
    HOME/TMPDIR/cwd, as the guest gets them, and
  - as `SENTRY run --timeout 900 --memory 2g --pids-limit 512 -- ...`.
Per-test results come from the JUnit XML (printed after a marker, so that the
sandbox's copy reaches us through stdout) and from the FAIL:/ERROR: lines of
the verbose log (subtest failures appear only there). Prints one markdown
table, then the tests that pass natively but fail under sentry. Logs go to
--out (default: a fresh directory under /tmp, printed at the end).

--check (what ctest runs) takes CHECK_MODULES unless --modules is given and
exits 1 when a test passes natively but not under sentry, other than the
KNOWN_DIFFERENCES, or when a run gives no JUnit XML; 77 (skipped) when
Debian's libpython3.11-testsuite is not installed.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

MODULES = ["test_os", "test_subprocess", "test_shutil", "test_tempfile", "test_threading",
           "test_signal"]
MARKER = "@@SENTRY-JUNIT@@"
PY = "/usr/bin/python3"
SENTRY_FLAGS = ["--timeout", "900", "--memory", "2g", "--pids-limit", "512"]
# The modules ctest runs (`--check`): the file, path, process and terminal calls a
# guest makes most, about 30 s for both runs.
CHECK_MODULES = ["test_os", "test_tempfile", "test_shutil", "test_pathlib", "test_glob",
                 "test_json", "test_fileio", "test_posix", "test_stat", "test_pty",
                 "test_fcntl", "test_select", "test_mmap", "test_zipfile"]
# Tests that pass natively and fail under sentry by design or as a known gap, each
# explained in docs/cpython-suite.md. `--check` fails on any other difference.
KNOWN_DIFFERENCES = {
    "test.test_shutil.TestMisc.test_disk_usage":
        "statfs answers for the sandbox's in-memory store, not the host disk",
    "test.test_signal.PidfdSignalTest.test_pidfd_send_signal":
        "an fd of a /proc/PID directory is not a pidfd under sentry",
}


def guest_command(module, junit):
    # sh prints the JUnit file after the run: the sandbox's /tmp is not ours.
    script = (f'{PY} -m test -v --junit-xml {junit} {module}; rc=$?; '
              f'echo; echo {MARKER}; cat {junit} 2>/dev/null; exit $rc')
    return ["/bin/sh", "-c", script]


def run_native(module, logdir):
    scratch = tempfile.mkdtemp(prefix="cpython-native.", dir="/tmp")
    os.chmod(scratch, 0o777)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch,
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "USER": "sandbox"}
    cmd = guest_command(module, os.path.join(scratch, "junit.xml"))
    if os.getuid() == 0:
        cmd = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"] + cmd
    try:
        return execute(cmd, scratch, env, os.path.join(logdir, f"{module}.native.log"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_sentry(sentry, flags, module, logdir):
    cmd = [sentry, "run"] + flags + ["--"] + guest_command(module, "/tmp/junit.xml")
    return execute(cmd, "/tmp", dict(os.environ), os.path.join(logdir, f"{module}.sentry.log"))


def default_signals():
    # A driver started in the background (nohup, `&`) has SIGINT ignored, which
    # children inherit; the sandbox's guest starts with every default.
    for sig in range(1, signal.NSIG):
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def execute(cmd, cwd, env, log_path):
    start = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, preexec_fn=default_signals)
    wall = time.monotonic() - start
    out = p.stdout.decode("utf-8", "replace")
    with open(log_path, "w") as f:
        f.write(out)
    return parse(out, p.returncode, wall)


def parse(out, rc, wall):
    log, _, xml = out.rpartition(MARKER)
    if not log:
        log, xml = out, ""
    results = {}  # test id -> "pass" | "fail" | "skip" | "xfail"
    try:
        root = ET.fromstring(xml.strip()) if xml.strip() else None
    except ET.ParseError:
        root = None
    if root is not None:
        for case in root.iter("testcase"):
            kinds = {child.tag for child in case}
            if "failure" in kinds or "error" in kinds:
                results[case.get("name")] = "fail"
            elif "skipped" in kinds:
                results[case.get("name")] = "skip"
            elif "output" in kinds:
                results[case.get("name")] = "xfail"
            else:
                results[case.get("name")] = "pass"
    # Subtest failures and crashes show only in the log's summary.
    for m in re.finditer(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", log, re.M):
        test_id = m.group(2)
        if not test_id.endswith("." + m.group(1)):
            test_id = f"{test_id}.{m.group(1)}"
        results[test_id] = "fail"
    # Without XML (killed, crashed), the verbose lines are all there is.
    if root is None:
        for m in re.finditer(r"^(\w+) \(([\w.]+)\)(?:\n.*?)?\.\.\. (ok|FAIL|ERROR|skipped|expected failure)",
                             log, re.M):
            test_id = m.group(2) if m.group(2).endswith(m.group(1)) else f"{m.group(2)}.{m.group(1)}"
            kind = {"ok": "pass", "FAIL": "fail", "ERROR": "fail", "skipped": "skip",
                    "expected failure": "xfail"}[m.group(3)]
            results.setdefault(test_id, kind)
    return {"rc": rc, "wall": wall, "results": results, "xml": root is not None}


def counts(r):
    res = r["results"].values()
    return len(r["results"]), sum(v == "fail" for v in res), sum(v == "skip" for v in res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sentry")
    ap.add_argument("--modules")
    ap.add_argument("--out")
    ap.add_argument("--only", choices=["native", "sentry"])
    ap.add_argument("--sentry-flags", default=" ".join(SENTRY_FLAGS))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.modules is None:
        args.modules = ",".join(CHECK_MODULES if args.check else MODULES)
    if args.check:
        args.only = None
        if subprocess.run([PY, "-c", "import test.support"], capture_output=True).returncode:
            print("skipped: CPython's test package is missing "
                  "(apt-get install libpython3.11-testsuite)")
            return 77
    logdir = args.out or tempfile.mkdtemp(prefix="cpython-suite.", dir="/tmp")
    os.makedirs(logdir, exist_ok=True)
    sentry = os.path.abspath(args.sentry)
    rows, regressions = [], {}
    for module in args.modules.split(","):
        native = sentried = None
        if args.only != "sentry":
            print(f"{module}: native...", file=sys.stderr, flush=True)
            native = run_native(module, logdir)
        if args.only != "native":
            print(f"{module}: sentry...", file=sys.stderr, flush=True)
            sentried = run_sentry(sentry, args.sentry_flags.split(), module, logdir)
        rows.append((module, native, sentried))
        if native and sentried:
            regressions[module] = sorted(
                t for t, v in native["results"].items()
                if v == "pass" and sentried["results"].get(t, "missing") not in ("pass", "xfail"))
            # A test missing natively but failing under sentry still counts.
            regressions[module] += sorted(t for t, v in sentried["results"].items()
                                          if v == "fail" and t not in native["results"])

    def cell(r):
        if r is None:
            return "–", "–", "–", "–"
        run, failed, skipped = counts(r)
        note = "" if r["xml"] else " (no XML: killed?)"
        return str(run), str(failed), str(skipped), f"{r['wall']:.0f} s, rc {r['rc']}{note}"

    print("| module | run (native / sentry) | failed (native / sentry) | skipped (native / sentry) "
          "| native | sentry |")
    print("| --- | --- | --- | --- | --- | --- |")
    for module, native, sentried in rows:
        n, s = cell(native), cell(sentried)
        print(f"| {module} | {n[0]} / {s[0]} | {n[1]} / {s[1]} | {n[2]} / {s[2]} | {n[3]} | {s[3]} |")
    print()
    for module, tests in regressions.items():
        print(f"{module}: {len(tests)} pass natively but not under sentry")
        for t in tests:
            print(f"  {t}")
    print(f"\nlogs: {logdir}", file=sys.stderr)
    if not args.check:
        return 0
    failures = [f"{m}: no JUnit XML ({'native' if not n['xml'] else 'sentry'} run, rc "
                f"{(n if not n['xml'] else s)['rc']})"
                for m, n, s in rows if not (n["xml"] and s["xml"])]
    for module, tests in regressions.items():
        for t in tests:
            if t in KNOWN_DIFFERENCES:
                print(f"known: {t}: {KNOWN_DIFFERENCES[t]}")
            else:
                failures.append(f"{module}: {t} passes natively, not under sentry")
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
