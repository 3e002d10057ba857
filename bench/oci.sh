#!/bin/sh
# The OCI runtime's own time for one container, driven through the runtime's
# command line as containerd's runc v2 shim drives it: create (pid file),
# start, wait for the pid file's process to exit (as the shim waits, a child
# subreaper), delete. One bundle (`runc spec`, python3 -c pass, a rootfs of
# the host's files), the same for sentry, runc and runsc, interleaved.
# usage: bench/oci.sh [SENTRY_BINARY] [ROUNDS]   (as root)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sentry=${1:-$here/../build-cc/sentry/sentry}
rounds=${2:-20}
work=$(mktemp -d /tmp/oci-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
sh "$here/../tests/oci/make_rootfs.sh" "$work/bundle/rootfs"
(cd "$work/bundle" && runc spec)
/usr/bin/python3 - "$work/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["python3", "-c", "pass"]
c["root"]["readonly"] = False
json.dump(c, open(p, "w"), indent=2)
PY
/usr/bin/python3 - "$work" "$rounds" "$sentry" <<'PY'
import ctypes, os, statistics, subprocess, sys, threading, time
work, rounds, sentry = sys.argv[1], int(sys.argv[2]), sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the container's pid is ours to reap
bundle = work + "/bundle"
runtimes = {
    "sentry": [sentry, "--root", work + "/sentry-root"],
    "runc": ["runc", "--root", work + "/runc-root"],
    "runsc": ["runsc", "--root", work + "/runsc-root", "--network", "none", "--platform", "ptrace"],
}
null = open(os.devnull, "wb")

# As the shim: one reaper for every child and orphan (a runtime's helper
# processes too: runsc's delete waits for its gofer to be reaped).
exits, cv = {}, threading.Condition()
def reaper():
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.001)
            continue
        with cv:
            exits[pid] = status
            cv.notify_all()
threading.Thread(target=reaper, daemon=True).start()

def run(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    with cv:
        cv.wait_for(lambda: p.pid in exits)
        status = exits.pop(p.pid)
    if status != 0:
        sys.exit("%s failed (%d)" % (" ".join(argv), status))

def wait_exit(pid):
    with cv:
        cv.wait_for(lambda: pid in exits)
        return exits.pop(pid)

def one(name, i):
    rt = runtimes[name]
    cid = "bench-%s-%d" % (name, i)
    pidfile = "%s/%s.pid" % (work, cid)
    t0 = time.perf_counter()
    run(rt + ["create", "--bundle", bundle, "--pid-file", pidfile, cid],
        stdin=subprocess.DEVNULL, stdout=null, stderr=null)
    pid = int(open(pidfile).read())
    run(rt + ["start", cid])
    status = wait_exit(pid)
    run(rt + ["delete", cid])
    t = (time.perf_counter() - t0) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s: python3 -c pass exited with %d" % (name, os.waitstatus_to_exitcode(status)))
    return t

times = {n: [] for n in runtimes}
for n in runtimes:
    one(n, 1000)  # warm: page cache, first cgroups
for i in range(rounds):
    for n in runtimes:
        times[n].append(one(n, i))
med = {n: statistics.median(v) for n, v in times.items()}
print("| runtime | median ms | p10 ms | p90 ms | vs runc |")
print("| --- | --- | --- | --- | --- |")
for n, v in times.items():
    q = statistics.quantiles(v, n=10)
    print("| %s | %.1f | %.1f | %.1f | %.2fx |" % (n, med[n], q[0], q[-1], med[n] / med["runc"]))
print("\nsentry vs runsc: %.1fx faster (rounds: %d, interleaved)" % (med["runsc"] / med["sentry"], rounds))
PY
