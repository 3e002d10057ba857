#!/usr/bin/python3
"""The session kernel (sentry/session/kernel.py), spoken to in frames.

  kernel_test.py KERNEL_PY                 natively: /usr/bin/python3 KERNEL_PY
  kernel_test.py KERNEL_PY --sentry BIN [--program-from PRINTER]
      as a session runs it: the guest of `BIN run -i --no-tty -- python3 -c
      PROGRAM`, PROGRAM what PRINTER prints (SessionKernelSource(), the loader
      of kernel.py), else kernel.py's text

Every frame the kernel writes is checked as the sentry checks it: a length
of at most 16 MiB, a JSON object, stream text of at most 64 KiB.
"""

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

KERNEL = None
SENTRY = None
PROGRAM = None  # the -c program, if not kernel.py's text
MAX_FRAME = 16 << 20
CHUNK = 64 << 10


class Kernel:
    def __init__(self, *args, env=None):
        if PROGRAM is not None:
            source = PROGRAM
        else:
            with open(KERNEL) as f:
                source = f.read()
        if SENTRY:
            cmd = [SENTRY, "run", "-i", "--no-tty", "--timeout", "0", "--log-level", "warn",
                   "--", "/usr/bin/python3", "-c", source, *args]
        else:
            cmd = ["/usr/bin/python3", "-c", source, *args]
        # Natively the kernel works in a directory of its own (a session's
        # home is its sandbox's, in memory).
        self.home = None if SENTRY else tempfile.mkdtemp(prefix="kernel_test-")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     cwd=self.home, env=env)
        self.rfd = self.proc.stdout.fileno()
        self.buf = b""
        self.next_id = 0
        self.ready = self.recv(30)
        assert self.ready["op"] == "ready", self.ready

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send({"op": "exit"})
            except OSError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        if self.home:
            shutil.rmtree(self.home, ignore_errors=True)

    def _status(self):
        return self.proc.wait()

    def send(self, msg):
        raw = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        self.proc.stdin.write(struct.pack(">I", len(raw)) + raw)
        self.proc.stdin.flush()

    def _fill(self, n, deadline):
        fd = self.rfd
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("no frame from the kernel")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the kernel ended (status %s)" % self._status())
            self.buf += chunk

    def recv(self, timeout=20):
        deadline = time.monotonic() + timeout
        self._fill(4, deadline)
        n = struct.unpack(">I", self.buf[:4])[0]
        assert n <= MAX_FRAME, n
        self._fill(4 + n, deadline)
        body, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        msg = json.loads(body.decode("utf-8"))  # strict UTF-8, as the sentry parses
        assert isinstance(msg, dict), msg
        if msg["op"] == "stream":
            assert len(msg["text"].encode()) <= CHUNK, len(msg["text"])
            assert msg["name"] in ("stdout", "stderr")
        return msg

    def request(self, op, **kw):
        self.next_id += 1
        self.send(dict(op=op, id=self.next_id, **kw))
        return self.next_id

    def collect(self, rid, timeout=30):
        """Frames until rid's done: (done, [frames before it])."""
        frames = []
        while True:
            m = self.recv(timeout)
            if m["op"] == "done" and m["id"] == rid:
                return m, frames
            frames.append(m)

    def cell(self, code, timeout=30):
        done, frames = self.collect(self.request("cell", code=code), timeout)
        done["frames"] = frames
        done["stdout"] = "".join(f["text"] for f in frames
                                 if f["op"] == "stream" and f["name"] == "stdout")
        done["stderr"] = "".join(f["text"] for f in frames
                                 if f["op"] == "stream" and f["name"] == "stderr")
        done["displays"] = [f["data"] for f in frames if f["op"] == "display"]
        return done

    def ok(self, code, timeout=30):
        r = self.cell(code, timeout)
        assert r["status"] == "ok", r["error"]
        return r

    def file_op(self, op, **kw):
        rid = self.request(op, **kw)
        while True:
            m = self.recv()
            if m.get("id") == rid and m["op"] in ("file", "files", "file_error"):
                return m


def png_size(b64):
    raw = base64.b64decode(b64)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", raw[:8]
    return struct.unpack(">II", raw[16:24])


class KernelTest(unittest.TestCase):
    def setUp(self):
        self.k = Kernel()

    def tearDown(self):
        self.k.close()

    def test_state_persists_and_the_last_expression_is_the_result(self):
        self.k.ok("x = 41\nimport math")
        r = self.k.ok("print('hi')\nx + 1")
        self.assertEqual(r["result"], {"text/plain": "42"})
        self.assertEqual(r["stdout"], "hi\n")
        self.assertEqual(r["executionCount"], 2)
        self.assertEqual(self.k.ok("_ * 2")["result"]["text/plain"], "84")
        self.assertIsNone(self.k.ok("x = 3")["result"])
        self.assertIsNone(self.k.ok("x;")["result"])  # a trailing ';' hides it, as IPython
        self.assertIsNone(self.k.ok("None")["result"])
        self.assertEqual(self.k.ok("import __main__; __main__.x, __name__")["result"]["text/plain"],
                         "(3, '__main__')")

    def test_python_level_writes_keep_their_order(self):
        r = self.k.ok("import sys\nfor i in range(3):\n    print('o', i)\n"
                      "    print('e', i, file=sys.stderr)")
        seq = [(f["name"], f["text"]) for f in r["frames"] if f["op"] == "stream"]
        text = "".join("%s:%s" % s for s in seq)
        self.assertEqual(text, "".join("stdout:o %d\nstderr:e %d\n" % (i, i) for i in range(3)))

    def test_child_output_is_framed_and_drained_before_done(self):
        r = self.k.ok("import subprocess, os\n"
                      "subprocess.run('seq 1 20000; echo oops >&2', shell=True)\n"
                      "os.write(1, b'raw\\n')")
        self.assertEqual(r["stdout"], "".join("%d\n" % i for i in range(1, 20001)) + "raw\n")
        self.assertEqual(r["stderr"], "oops\n")

    def test_long_output_is_chunked(self):
        r = self.k.ok("print('\\u00e9' * 300000)")
        self.assertEqual(r["stdout"], "\u00e9" * 300000 + "\n")
        self.assertGreater(len(r["frames"]), 8)

    def test_tracebacks_show_the_cell_only(self):
        r = self.k.cell("def f():\n    raise ValueError('bad')\n\nf()")
        self.assertEqual(r["status"], "error")
        self.assertEqual((r["error"]["name"], r["error"]["value"]), ("ValueError", "bad"))
        tb = "\n".join(r["error"]["traceback"])
        self.assertIn('File "<cell 1>", line 4, in <module>', tb)
        self.assertIn('File "<cell 1>", line 2, in f', tb)
        self.assertIn("raise ValueError('bad')", tb)
        self.assertNotIn("<string>", tb)
        self.assertNotIn("kernel", tb)
        # an error inside a function of an earlier cell, and one from display()
        r = self.k.cell("class B:\n    def _repr_html_(self): return 1/0\n"
                        "    def __repr__(self): raise KeyError('k')\ndisplay(B())")
        tb = "\n".join(r["error"]["traceback"])
        self.assertEqual(r["error"]["name"], "KeyError")
        self.assertIn("<cell 2>", tb)
        self.assertNotIn("kernel", tb)
        self.assertNotIn("<string>", tb)
        self.assertIn("ZeroDivisionError", r["stderr"])  # the failed formatter, as a warning
        r = self.k.cell("f(")
        self.assertEqual(r["error"]["name"], "SyntaxError")
        self.assertEqual(r["error"]["traceback"][0], '  File "<cell 3>", line 1')
        self.assertEqual(r["executionCount"], 3)

    def test_system_exit_is_an_error_and_the_kernel_stays(self):
        self.k.ok("kept = 1")
        r = self.k.cell("import sys\nsys.exit(4)")
        self.assertEqual((r["status"], r["error"]["name"], r["error"]["value"]),
                         ("error", "SystemExit", "4"))
        self.assertEqual(self.k.ok("kept")["result"]["text/plain"], "1")
        self.assertEqual(self.k.cell("exit()")["error"]["name"], "SystemExit")
        r = self.k.cell("input('name? ')")
        self.assertEqual(r["error"]["name"], "EOFError")
        self.assertIn("stdin is empty", r["error"]["value"])
        r = self.k.ok("import io, sys\nsys.stdin = io.StringIO('typed\\n')\ninput()")
        self.assertEqual(r["result"]["text/plain"], "'typed'")

    def test_interrupt_keeps_state(self):
        self.k.ok("y = 5")
        for code in ("import time\ntime.sleep(60)", "while True:\n    pass"):
            rid = self.k.request("cell", code=code)
            time.sleep(0.3)
            t = time.monotonic()
            self.k.send({"op": "interrupt"})
            done, _ = self.k.collect(rid, timeout=10)
            self.assertLess(time.monotonic() - t, 5)
            self.assertEqual(done["error"]["name"], "KeyboardInterrupt")
            self.assertIn("<cell", "\n".join(done["error"]["traceback"]))
        self.assertEqual(self.k.ok("y")["result"]["text/plain"], "5")

    def test_an_interrupt_never_reaches_a_later_cell(self):
        # interrupts sent as cells end (and when idle) are dropped, never held
        for _ in range(60):
            rid = self.k.request("cell", code="n = 1")
            self.k.send({"op": "interrupt"})
            self.k.collect(rid)
        self.k.send({"op": "interrupt"})
        for _ in range(3):
            self.assertEqual(self.k.ok("import time\ntime.sleep(0.1)\n7")["result"]["text/plain"], "7")

    def test_rich_results(self):
        r = self.k.ok("class H:\n    def _repr_html_(self): return '<b>h</b>'\n"
                      "    def _repr_png_(self): return b'\\x89PNG'\n"
                      "    def __repr__(self): return 'H()'\nH()")
        self.assertEqual(r["result"], {"text/html": "<b>h</b>", "text/plain": "H()",
                                       "image/png": base64.b64encode(b"\x89PNG").decode()})
        r = self.k.ok("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})\ndf")
        self.assertIn("<table", r["result"]["text/html"])
        self.assertIn("a  b", r["result"]["text/plain"])
        r = self.k.ok("display(df.a.sum(), H())\nprint('after')\n"
                      "display({'text/markdown': '*m*'}, raw=True)")
        self.assertEqual(r["displays"][0], {"text/plain": "3"})
        self.assertEqual(r["displays"][1]["text/html"], "<b>h</b>")
        self.assertEqual(r["displays"][2], {"text/markdown": "*m*"})
        ops = [f["op"] for f in r["frames"]]
        self.assertEqual(ops, ["display", "display", "stream", "display"])
        self.assertIsNone(r["result"])
        self.assertEqual(self.k.ok("H")["result"]["text/plain"], "<class '__main__.H'>")

    def test_matplotlib_figures(self):
        r = self.k.ok("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n"
                      "print('between')\nplt.figure()\nplt.bar([1, 2], [3, 4])\n"
                      "plt.figure()\nplt.gcf()")  # shown once as the result, not again at the end
        self.assertEqual(len(r["displays"]), 2, [list(d) for d in r["displays"]])
        self.assertEqual(png_size(r["displays"][0]["image/png"]), (640, 480))
        self.assertEqual(r["displays"][0]["text/plain"], "<Figure size 640x480 with 1 Axes>")
        self.assertEqual([f["op"] for f in r["frames"]], ["display", "stream", "display"])
        self.assertEqual(r["result"], {"text/plain": "<Figure size 640x480 with 0 Axes>"})
        self.assertEqual(self.k.ok("plt.get_fignums()")["result"]["text/plain"], "[]")
        r = self.k.ok("fig, ax = plt.subplots(figsize=(4, 3))\nax.plot([1, 2])\nfig")
        self.assertEqual(png_size(r["result"]["image/png"]), (400, 300))
        self.assertEqual(r["displays"], [])
        r = self.k.ok("import matplotlib, os, subprocess\n"
                      "print(matplotlib.get_backend(), os.environ['MPLBACKEND'])\n"
                      "subprocess.run(['/usr/bin/python3', '-c', 'import matplotlib.pyplot as p; "
                      "print(p.get_backend())'])")
        self.assertEqual(r["stdout"], "module://_sentry_backend Agg\nagg\n")

    def test_top_level_await(self):
        r = self.k.ok("import asyncio\nawait asyncio.sleep(0.01)\nasync def g(): return 9\nawait g()")
        self.assertEqual(r["result"]["text/plain"], "9")

    def test_commands(self):
        self.k.ok("import os\nos.makedirs('cmdwd', exist_ok=True)\nos.chdir('cmdwd')\n"
                  "os.environ['FROM_CELL'] = 'yes'")
        done, frames = self.k.collect(self.k.request("command", argv=["sh", "-c", "pwd; echo $FROM_CELL"]))
        self.assertEqual((done["status"], done["exitCode"]), ("ok", 0))
        out = "".join(f["text"] for f in frames if f["op"] == "stream")
        self.assertTrue(out.endswith("/cmdwd\nyes\n"), out)
        done, frames = self.k.collect(self.k.request("command", bash="echo a; echo b >&2; exit 3"))
        self.assertEqual((done["status"], done["exitCode"], done["error"]["name"]),
                         ("error", 3, "ExitStatus"))
        self.assertEqual(sorted((f["name"], f["text"]) for f in frames),
                         [("stderr", "b\n"), ("stdout", "a\n")])
        done, _ = self.k.collect(self.k.request("command", argv=["/no/such/program"]))
        self.assertEqual((done["exitCode"], done["error"]["name"]), (127, "FileNotFoundError"))
        done, _ = self.k.collect(self.k.request("command", argv=[]))
        self.assertEqual(done["status"], "error")
        rid = self.k.request("command", bash="sleep 60; echo not reached")
        time.sleep(0.3)
        t = time.monotonic()
        self.k.send({"op": "interrupt"})
        done, frames = self.k.collect(rid, timeout=10)
        self.assertLess(time.monotonic() - t, 5)
        self.assertEqual(done["exitCode"], 130)
        self.assertEqual(frames, [])
        self.assertEqual(self.k.ok("1")["executionCount"], 2)

    def test_files(self):
        k = self.k
        m = k.file_op("write_file", path="out/deep/a.csv", data=base64.b64encode(b"a,b\n1,2\n").decode(),
                      mode=0o600)
        self.assertEqual((m["op"], m["size"]), ("file", 8))
        m = k.file_op("read_file", path="out/deep/a.csv")
        self.assertEqual(base64.b64decode(m["data"]), b"a,b\n1,2\n")
        k.file_op("write_file", path="out/deep/a.csv", data=base64.b64encode(b"3,4\n").decode(), append=True)
        self.assertEqual(k.ok("import os, stat\nopen('out/deep/a.csv').read(), "
                              "oct(stat.S_IMODE(os.stat('out/deep/a.csv').st_mode))")["result"]["text/plain"],
                         "('a,b\\n1,2\\n3,4\\n', '0o600')")
        k.ok("import matplotlib.pyplot as plt\nfor i in range(3):\n"
             "    plt.plot([i, 1]); plt.savefig('out/p%d.png' % i)\nplt.close('all')")
        m = k.file_op("list_files", dir="out", glob="*.png")
        self.assertEqual([(e["path"], e["type"]) for e in m["entries"]],
                         [("p0.png", "file"), ("p1.png", "file"), ("p2.png", "file")])
        self.assertGreater(m["entries"][0]["size"], 1000)
        m = k.file_op("list_files", dir=".", glob="out/*.png")
        self.assertEqual(len(m["entries"]), 3)
        m = k.file_op("list_files", dir="out", glob="")
        self.assertEqual([(e["path"], e["type"]) for e in m["entries"]],
                         [("deep", "dir"), ("p0.png", "file"), ("p1.png", "file"), ("p2.png", "file")])
        m = k.file_op("list_files", dir="out", recursive=True)
        self.assertIn({"path": "deep/a.csv", "type": "file", "size": 12}, m["entries"])
        m = k.file_op("list_files", dir=".", glob="**/*.csv", recursive=True)
        self.assertEqual([e["path"] for e in m["entries"]], ["out/deep/a.csv"])
        m = k.file_op("read_file", path="out/deep/a.csv", offset=4, length=3)
        self.assertEqual((base64.b64decode(m["data"]), m["size"]), (b"1,2", 12))
        # errors: missing, a directory, not regular, bad base64, bad arguments
        self.assertEqual(k.file_op("read_file", path="nope")["errno"], 2)
        self.assertEqual(k.file_op("read_file", path="out")["errno"], 21)
        self.assertEqual(k.file_op("list_files", dir="out/deep/a.csv")["errno"], 20)
        k.ok("os.mkfifo('fifo')")
        self.assertEqual(k.file_op("read_file", path="fifo")["errno"], 22)  # never blocks
        self.assertEqual(k.file_op("write_file", path="x", data="!!")["errno"], 22)
        self.assertEqual(k.file_op("read_file", path="")["errno"], 22)
        self.assertEqual(k.file_op("read_file", path="a", offset=-1)["errno"], 22)

    def test_files_and_interrupts_are_served_while_a_cell_runs(self):
        rid = self.k.request("cell", code="import time\nopen('w.txt', 'w').write('w')\ntime.sleep(30)")
        time.sleep(0.3)
        t = time.monotonic()
        m = self.k.file_op("read_file", path="w.txt")
        self.assertEqual(base64.b64decode(m["data"]), b"w")
        self.assertEqual(self.k.file_op("list_files", dir=".")["entries"][-1]["path"], "w.txt")
        self.assertLess(time.monotonic() - t, 2)
        self.k.send({"op": "interrupt"})
        self.assertEqual(self.k.collect(rid)[0]["error"]["name"], "KeyboardInterrupt")

    def test_everything_is_bounded(self):
        r = self.k.ok("'x' * (3 << 20)")
        self.assertLess(len(r["result"]["text/plain"]), (1 << 20) + 100)
        r = self.k.ok("display({'text/plain': 'y' * (20 << 20)}, raw=True)\n"
                      "big = b'z' * (13 << 20)\nopen('big', 'wb').write(big)")
        self.assertIn("output dropped", r["displays"][0]["text/plain"])
        self.assertEqual(self.k.file_op("read_file", path="big")["errno"], 27)
        m = self.k.file_op("read_file", path="big", offset=(13 << 20) - 2, length=10)
        self.assertEqual(base64.b64decode(m["data"]), b"zz")
        self.k.ok("for i in range(10050):\n    open('many%d' % i, 'w').close()")
        m = self.k.file_op("list_files", dir=".")
        self.assertEqual((len(m["entries"]), m["truncated"]), (10000, True))
        r = self.k.cell("def r(n): return r(n + 1)\nr(0)")
        self.assertEqual(r["error"]["name"], "RecursionError")
        self.assertLess(len(r["error"]["traceback"]), 420)
        r = self.k.ok("float('nan')")  # repr, not a JSON NaN
        self.assertEqual(r["result"]["text/plain"], "nan")
        r = self.k.ok("print('\\udcff', 'ok')")  # a lone surrogate becomes '?'
        self.assertEqual(r["stdout"], "? ok\n")

    def test_bad_requests_leave_the_kernel_working(self):
        self.k.send(b"not json")
        self.k.send(b"[1, 2]")
        self.k.send(b"[" * 200000)  # past the JSON parser's depth
        self.k.send(b"\xff\xfe")
        rid = self.k.request("frobnicate")
        done, _ = self.k.collect(rid)
        self.assertEqual(done["error"]["name"], "ProtocolError")
        r = self.k.cell(None)
        self.assertEqual(r["error"]["name"], "TypeError")
        self.assertEqual(self.k.ok("2 + 2")["result"]["text/plain"], "4")

    def test_fds_and_forks(self):
        r = self.k.ok("import os, subprocess\nprint(os.readlink('/proc/self/fd/0'))\n"
                      "subprocess.run(['ls', '/proc/self/fd'])")
        self.assertEqual(r["stdout"].split(), ["/dev/null", "0", "1", "2", "3"])
        r = self.k.ok("import multiprocessing as mp\n"
                      "def f(i):\n    print('child', i)\n    return i * i\n"
                      "with mp.get_context('fork').Pool(2) as p:\n    v = p.map(f, range(4))\n"
                      "pid = os.fork()\nif pid == 0:\n    print('forked')\n    os._exit(0)\n"
                      "os.waitpid(pid, 0)\nv")
        self.assertEqual(r["result"]["text/plain"], "[0, 1, 4, 9]")
        self.assertEqual(sorted(r["stdout"].split("\n")),
                         ["", "child 0", "child 1", "child 2", "child 3", "forked"])

    def test_threads_write_and_os_exit_ends_the_kernel(self):
        r = self.k.ok("import threading\nts = [threading.Thread(target=print, args=('t%d' % i,)) "
                      "for i in range(4)]\n[t.start() for t in ts]\n[t.join() for t in ts];")
        self.assertEqual(sorted(r["stdout"].split()), ["t0", "t1", "t2", "t3"])
        self.k.request("cell", code="import os\nos._exit(3)")
        with self.assertRaises(EOFError):
            self.k.recv()
        self.assertEqual(self.k.proc.wait(), 3)


class PreloadTest(unittest.TestCase):
    def test_preload(self):
        k = Kernel("--preload", "csv,json")
        try:
            self.assertRegex(k.ready["python"], r"^3\.\d+\.\d+$")
            r = k.ok("import sys\n'csv' in sys.modules, 'csv' in dir()")
            self.assertEqual(r["result"]["text/plain"], "(True, False)")
        finally:
            k.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    KERNEL = args.pop(0)
    if args[:1] == ["--sentry"]:
        SENTRY = args[1]
        args = args[2:]
    if args[:1] == ["--program-from"]:
        PROGRAM = subprocess.run([args[1]], check=True, stdout=subprocess.PIPE,
                                 text=True).stdout
        args = args[2:]
    unittest.main(argv=[sys.argv[0], *args], verbosity=2)
