#!/usr/bin/python3
"""The session kernel's fork op (sentry/session/FORK.md, step 6), in frames.

  kernel_fork_test.py KERNEL_PY
      natively, as root (no sandbox): real clones into six new namespaces.
      No supervisor exists, so the kernel runs with its test-only switch
      SENTRY_KERNEL_FORK_TEST_SOCKET: the parent skips the re-listen (only a
      supervisor can complete it) and each child takes a unix socket this
      test listens on as its request and frame fds, where a child's
      supervisor gives it its own pipes. Without the switch the re-listen
      fails natively: that failure path is tested too.
  kernel_fork_test.py KERNEL_PY --sentry BIN --program-from PRINTER
      the guest of a real `sentry run`: no fork is granted there, so the
      clone is the fork gate's EPERM, a clean error.
"""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_test as kt  # noqa: E402

SWITCH = "SENTRY_KERNEL_FORK_TEST_SOCKET"
# A threaded OpenBLAS (libblas.so.3 of Debian's libopenblas0-pthread) for
# numpy, if the machine has one: its own directory, or this variable's.
OPENBLAS = os.environ.get("SENTRY_TEST_OPENBLAS_DIR", "/usr/lib/x86_64-linux-gnu/openblas-pthread")


class Child(kt.Kernel):
    """A forked child, spoken to on the socket it connected to."""

    def __init__(self, conn):
        self.conn, self.rfd, self.buf, self.next_id, self.home = conn, conn.fileno(), b"", 0, None
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        self.pid = struct.unpack("3i", creds)[0]  # as the test (and the parent) name it
        self.ready = self.recv(10)

    def _status(self):
        return "pid %d" % self.pid

    def send(self, msg):
        raw = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        self.conn.sendall(struct.pack(">I", len(raw)) + raw)

    def close(self):
        try:
            self.send({"op": "exit"})
        except OSError:
            pass
        self.conn.close()


def fork(k, count=1, **extra):
    """The fork's done, and the frames before it."""
    return k.collect(k.request("fork", count=count, **extra))


class ForkRefusalTest(unittest.TestCase):
    """Natively and in a sandbox: forks that must not happen leave the kernel as it was."""

    def setUp(self):
        self.k = kt.Kernel()

    def tearDown(self):
        self.k.close()

    def refused(self, done, text):
        self.assertEqual((done["status"], done["error"]["name"]), ("error", "ForkError"), done)
        self.assertIn(text, done["error"]["value"])
        self.assertNotIn("children", done)

    def test_count_bounds_and_a_fork_during_a_cell(self):
        self.k.ok("x = 7")
        for count in (0, 101, -1, "2", True, 1.5, None):
            self.refused(fork(self.k, count)[0], "count must be an integer from 1 to 100")
        rid = self.k.request("cell", code="import time\ntime.sleep(30)")
        time.sleep(0.3)
        self.refused(fork(self.k, 1)[0], "a cell is running: a fork is made between cells only")
        self.k.send({"op": "interrupt"})
        self.assertEqual(self.k.collect(rid)[0]["error"]["name"], "KeyboardInterrupt")
        rid = self.k.request("command", bash="sleep 30")
        time.sleep(0.3)
        self.refused(fork(self.k, 1)[0], "a command is running")
        self.k.send({"op": "interrupt"})
        self.assertEqual(self.k.collect(rid)[0]["exitCode"], 130)
        self.assertEqual(self.k.ok("x")["result"]["text/plain"], "7")

    def test_a_fork_that_fails_leaves_no_child_and_the_kernel_working(self):
        self.k.ok("x = 7")
        done, frames = fork(self.k, 3)
        if kt.SENTRY:  # the fork gate: no grant, so the first clone is EPERM
            self.refused(done, "clone: Operation not permitted (the sandbox's supervisor "
                               "granted no fork")
        else:  # natively: three children, then the re-listen fails (no supervisor) and they die
            self.refused(done, "re-listen (seccomp NEW_LISTENER): ")
            self.assertIn("(3 children made before it, killed)", done["error"]["value"])
            pid = self.k.proc.pid
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                self.assertEqual(f.read().split(), [])
        # A child of the native case ran for a moment on the parent's own
        # fds (nothing gave it its own): at most its `forked` frame came.
        self.assertEqual([f for f in frames if f.get("role") != "child"], [])
        self.assertEqual(self.k.ok("x + 1")["result"]["text/plain"], "8")


@unittest.skipIf(os.geteuid() != 0, "clones into new namespaces natively as root only")
class ForkTest(unittest.TestCase):
    """Natively: the children, their state, entropy, output and threads."""

    def setUp(self, **env):
        self.dir = tempfile.mkdtemp(prefix="kernel_fork_test-")
        self.addr = os.path.join(self.dir, "children.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.addr)
        self.listener.listen(16)
        self.listener.settimeout(10)
        self.k = kt.Kernel(env=dict(os.environ, **{SWITCH: self.addr}, **env))
        self.children = []

    def tearDown(self):
        for c in self.children:
            c.close()
        for c in self.children:  # each ends at its exit (or at EOF on its socket)
            try:
                os.kill(c.pid, 9)
            except ProcessLookupError:
                pass
        self.k.close()
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def fork(self, count):
        done, frames = fork(self.k, count)
        self.assertEqual((done["status"], len(done["children"])), ("ok", count), done)
        self.assertEqual(frames, [])
        made = []
        for _ in range(count):
            made.append(Child(self.listener.accept()[0]))
            self.children.append(made[-1])
            self.assertEqual(made[-1].ready, {"op": "forked", "id": done["id"], "role": "child",
                                              "pid": 1})
        self.assertEqual(sorted(c.pid for c in made), sorted(done["children"]))
        return made

    def test_children_keep_the_state_and_draw_new_values(self):
        self.k.ok("import os, random, sys, tempfile, numpy as np\n"
                  "os.makedirs('sub')\nos.chdir('sub')\n"
                  "os.environ['FORK_ENV'] = 'kept'\nopen('written.txt', 'w').write('data')\n"
                  "x = 41\nrandom.random(), np.random.random(), tempfile.mktemp()")
        kids = self.fork(2)
        draw = "random.random(), float(np.random.random()), tempfile.mktemp()"
        values = []
        for c in kids:
            r = c.ok("x, 'numpy' in sys.modules, os.getcwd().endswith('/sub'), "
                     "os.environ['FORK_ENV'], open('written.txt').read()")
            self.assertEqual(r["result"]["text/plain"], "(41, True, True, 'kept', 'data')")
            self.assertEqual(r["executionCount"], 2)  # counted on from the parent's
            # nothing the kernel mapped is shared and writable (a fork refuses that)
            r = c.ok("[f for f in open('/proc/self/smaps').read().split('VmFlags:')[1:] "
                     "if ' sh' in f.split('\\n')[0] and ' mw' in f.split('\\n')[0]]")
            self.assertEqual(r["result"]["text/plain"], "[]")
            values.append(c.ok(draw)["result"]["text/plain"])
            c.ok("x = 0")
        values.append(self.k.ok(draw)["result"]["text/plain"])
        # (A long TMPDIR makes the tuple's repr wrap onto several lines.)
        drawn = [[part.strip() for part in v.strip("()").split(",")] for v in values]
        for i in range(3):  # random, numpy, tempfile: parent and both children all differ
            self.assertEqual(len({d[i] for d in drawn}), 3, values)
        self.assertEqual(self.k.ok("x")["result"]["text/plain"], "41")

    def test_a_childs_output_is_its_own_and_its_threads_run(self):
        self.k.ok("import subprocess, threading, time")
        c = self.fork(1)[0]
        r = c.ok("print('from the cell')\nsubprocess.run(['echo', 'from a subprocess'])\n"
                 "' '.join(sorted(t.name for t in threading.enumerate()))")
        self.assertEqual(r["stdout"], "from the cell\nfrom a subprocess\n")
        self.assertEqual(r["result"]["text/plain"],
                         "'MainThread sentry-kernel sentry-kernel sentry-kernel sentry-stderr "
                         "sentry-stdout'")
        done, frames = c.collect(c.request("command", bash="echo command; echo err >&2"))
        self.assertEqual(sorted(f["text"] for f in frames), ["command\n", "err\n"])
        # its file worker and its interrupt (the main thread's tid is the child's)
        rid = c.request("cell", code="open('f.txt', 'w').write('child')\ntime.sleep(30)")
        time.sleep(0.3)
        self.assertEqual(c.file_op("read_file", path="f.txt")["data"], "Y2hpbGQ=")
        c.send({"op": "interrupt"})
        self.assertEqual(c.collect(rid, timeout=5)[0]["error"]["name"], "KeyboardInterrupt")
        # the parent saw none of it, and goes on (and forks again)
        r = self.k.ok("print('parent')\nsubprocess.run(['echo', 'parent sub'])")
        self.assertEqual([f["text"] for f in r["frames"]], ["parent\n", "parent sub\n"])
        self.assertEqual(len(self.fork(1)), 1)

    def test_a_child_forks_again(self):
        # Its children and it are all pid 1: what caches by pid (tempfile's
        # names, OpenSSL's fork check) sees no change there, so the kernel
        # reseeds them itself. A child's supervisor maps its ids (else it
        # may not make a user namespace): the test does it here.
        self.k.ok("import multiprocessing, random, ssl, tempfile, numpy as np")
        c = self.fork(1)[0]
        for kind in ("uid", "gid"):
            with open("/proc/%d/%s_map" % (c.pid, kind), "w") as f:
                f.write("0 0 1")
        draw = ("'|'.join(map(str, (x, random.random(), float(np.random.random()), "
                "tempfile.mktemp(), ssl.RAND_bytes(8).hex(), "
                "multiprocessing.current_process().authkey.hex())))")
        c.ok("x = 'from the child'\n" + draw)
        done, frames = fork(c, 2)
        self.assertEqual(done["status"], "ok", done)
        grand = [Child(self.listener.accept()[0]) for _ in range(2)]
        self.children += grand
        names = []  # each grandchild's pid as the child names it (NSpid: host, child's, own)
        for g in grand:
            with open("/proc/%d/status" % g.pid) as f:
                names += [int(ln.split()[2]) for ln in f if ln.startswith("NSpid:")]
        self.assertEqual(sorted(names), sorted(done["children"]))
        values = [k.ok(draw)["result"]["text/plain"].split("|") for k in grand + [c]]
        for i in range(6):
            self.assertEqual(len({v[i] for v in values}), 1 if i == 0 else 3, (i, values))

    def test_busy_threads_stall_neither_the_fork_nor_its_children(self):
        # Threads that want the GIL while the kernel clones a 100 MB process:
        # the parent must get it back, and no child may wait for one of them.
        self.k.ok("import numpy as np, threading\nbig = np.random.rand(100 << 17)\nstop = False\n"
                  "def spin():\n    while not stop:\n        pass\n"
                  "for _ in range(2):\n    threading.Thread(target=spin, daemon=True).start()")
        for _ in range(2):
            for c in self.fork(3):
                self.assertEqual(c.ok("1 + 1", timeout=10)["result"]["text/plain"], "2")
                c.close()
            self.children = []
        self.k.ok("stop = True")


@unittest.skipIf(not os.path.exists(os.path.join(OPENBLAS, "libblas.so.3")),
                 "no threaded OpenBLAS here (SENTRY_TEST_OPENBLAS_DIR)")
class OpenBlasForkTest(ForkTest):
    """A raw clone runs no pthread_atfork handler: the kernel runs OpenBLAS's."""

    def setUp(self):
        super().setUp(LD_LIBRARY_PATH=OPENBLAS)

    def test_a_threaded_blas_call_in_a_child(self):
        r = self.k.ok("import numpy as np, os\na = np.random.rand(1200, 1200)\nb = a @ a\n"
                      "any('openblas' in l for l in open('/proc/self/maps')), "
                      "len(os.listdir('/proc/self/task')) > 6")
        self.assertEqual(r["result"]["text/plain"], "(True, True)")  # its pool's threads run
        c = self.fork(1)[0]
        r = c.ok("b = a @ a\nb.shape", timeout=10)
        self.assertEqual(r["result"]["text/plain"], "(1200, 1200)")
        self.assertEqual(self.k.ok("b = a @ a\nb.shape")["result"]["text/plain"], "(1200, 1200)")


if __name__ == "__main__":
    args = sys.argv[1:]
    kt.KERNEL = args.pop(0)
    if args[:1] == ["--sentry"]:
        kt.SENTRY = args[1]
        args = args[2:]
    if args[:1] == ["--program-from"]:
        kt.PROGRAM = subprocess.run([args[1]], check=True, stdout=subprocess.PIPE,
                                    text=True).stdout
        args = args[2:]
    if kt.SENTRY:  # in a sandbox only the refusals can run (no fork is granted)
        args = args or ["ForkRefusalTest"]
    unittest.main(argv=[sys.argv[0], *args], verbosity=2)
