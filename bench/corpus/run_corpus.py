#!/usr/bin/python3
"""Times the corpus of bench/coverage.sh natively, under sentry and under runsc.

usage: run_corpus.py --sentry BIN --envs "native sentry runsc" --shm DIR --out FILE
                     [--runs N] [--runsc-runs N] [--runsc-flags "..."] [--census-dir DIR]
                     [--census-slow FLAG]

Runs are interleaved (run 1 of every environment, then run 2, ...) so that the load
of a shared machine, which drifts over minutes, falls on every environment alike.
One untimed warm-up run per workload and environment comes first. With
--census-dir, each workload also runs once more under `sentry run --census`, and
with --census-slow FLAG once more with FLAG (the fast paths off): the difference is
what the fast paths answered without a trap.
Writes one JSON object: {workload: {"command": ..., env: {"samples_s": [...],
"exit_codes": [...], "argv": [...]}}}.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

CORPUS = os.path.dirname(os.path.abspath(__file__))
CPYTHON_TESTS = ["test.test_tempfile.TestMkstemp", "test.test_tempfile.TestMkdtemp",
                 "test.test_tempfile.TestNamedTemporaryFile", "test.test_shutil.TestArchives",
                 "test.test_os.StatAttributeTests", "test.test_os.WalkTests"]
PY = "/usr/bin/python3"
PIPELINE = ('find /usr/lib/python3.11 -name "*.py" | sort | wc -l; '
            'grep -rl import /usr/lib/python3.11/json | wc -l; '
            'find /usr/include -type f | sort | tail -n 5 | wc -c')

# name -> (description, argv template); {C} is the corpus directory as the guest
# sees it, {T} the scratch directory (a tmpfs in every environment).
WORKLOADS = {
    "python_pass": ("python3 -c pass", [PY, "-c", "pass"]),
    "stdlib_imports": ("20 stdlib modules imported (imports.py)", [PY, "{C}/imports.py"]),
    "small_files_1000": ("1,000 files of 512 B written and read back (small_files.py)",
                         [PY, "{C}/small_files.py", "{T}"]),
    "shell_pipeline_usr": ("find | sort | wc, grep -r over /usr (sh)",
                           ["/bin/sh", "-c", PIPELINE]),
    "gcc_compile": ("gcc -O1 of hello.c, then run it",
                    ["/bin/sh", "-c", "cd {T} && gcc -O1 -o hello {C}/hello.c && ./hello a b"]),
    "subprocess_fanout": ("20 children, 4 at a time (fanout.py)", [PY, "{C}/fanout.py"]),
    "socket_echo": ("500 TCP echoes of 64 B on 127.0.0.1 (socket_echo.py)",
                    [PY, "{C}/socket_echo.py"]),
    "cpython_tests": ("CPython unittest classes: " + " ".join(CPYTHON_TESTS),
                      [PY, "-m", "unittest", "-q"] + CPYTHON_TESTS),
}
RUNSC_FLAGS = "--rootless --network=none --platform=ptrace"


def sentry_prefix(sentry):
    return [sentry, "run", "--timeout", "0", "--memory", "2g", "--pids-limit", "512",
            "--copy", f"{CORPUS}:/tmp/corpus"]


def guest_argv(template, env, shm):
    if env == "sentry":
        c, t = "/tmp/corpus", "/tmp"
    elif env == "runsc":
        c, t = CORPUS, "/tmp"  # runsc do: the host's files, its own /tmp
    else:
        c, t = CORPUS, shm
    return [a.replace("{C}", c).replace("{T}", t) for a in template]


def argv_for(name, env, args):
    g = guest_argv(WORKLOADS[name][1], env, args.shm)
    if env == "sentry":
        return sentry_prefix(args.sentry) + ["--"] + g
    if env == "runsc":
        return ["runsc"] + args.runsc_flags.split() + ["do"] + g
    return g


def timed(argv, timeout):
    # Waited on with a blocking waitpid, and the timeout kept by a timer: a
    # wait with a timeout (subprocess.run(timeout=...)) polls with sleeps of
    # up to 50 ms, which rounds every wall time up to the next poll.
    start = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd="/")
    expired = threading.Event()

    def expire():
        expired.set()
        p.kill()

    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        code = p.wait()
    finally:
        timer.cancel()
    return time.monotonic() - start, "timeout" if expired.is_set() else code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentry", required=True)
    ap.add_argument("--envs", required=True)
    ap.add_argument("--shm", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--runsc-runs", type=int, default=3)
    ap.add_argument("--runsc-flags", default=RUNSC_FLAGS)
    ap.add_argument("--census-dir")
    ap.add_argument("--census-slow", help="with --census-dir: the flag that turns the fast "
                    "paths off, for one more census run of each workload with it")
    ap.add_argument("--only", help="comma-separated workload names")
    args = ap.parse_args()
    envs = args.envs.split()
    names = args.only.split(",") if args.only else list(WORKLOADS)
    out = {}
    for name in names:
        runs = 2 if name == "cpython_tests" else args.runs
        res = {"command": WORKLOADS[name][0]}
        for env in envs:
            res[env] = {"argv": argv_for(name, env, args), "samples_s": [], "exit_codes": []}
            timed(res[env]["argv"], 600)  # warm-up: page cache, runsc's first start
        for i in range(runs):
            for env in envs:
                if env == "runsc" and i >= args.runsc_runs:
                    continue
                s, code = timed(res[env]["argv"], 600)
                res[env]["samples_s"].append(s)
                res[env]["exit_codes"].append(code)
                print(f"run_corpus: {name} {env} run {i + 1}: {s:.3f} s (exit {code})",
                      file=sys.stderr, flush=True)
        if args.census_dir:
            g = guest_argv(WORKLOADS[name][1], "sentry", args.shm)
            path = os.path.join(args.census_dir, f"census_{name}.json")
            argv = sentry_prefix(args.sentry) + ["--census", path, "--"] + g
            s, code = timed(argv, 600)
            res["census_run"] = {"wall_s": s, "exit_code": code}
            if args.census_slow:
                # The same without the fast paths: what would trap without them.
                path = os.path.join(args.census_dir, f"census_slow_{name}.json")
                argv = (sentry_prefix(args.sentry) + [args.census_slow, "--census", path, "--"]
                        + g)
                s, code = timed(argv, 600)
                res["census_slow_run"] = {"wall_s": s, "exit_code": code, "flag": args.census_slow}
        out[name] = res
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
