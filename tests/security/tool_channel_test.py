#!/usr/bin/python3
"""Escape attempts against the tool channel (/dev/sentry-tools), each as a
guest of the real sentry binary. README.md's table lists them.

usage: tool_channel_test.py PATH/TO/sentry
"""
import json
import os
import subprocess
import sys
import unittest

SENTRY = sys.argv.pop(1) if len(sys.argv) > 1 else "build-cc/sentry/sentry"
TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "fake_tool.py")

PRELUDE = """
import json, os, socket, struct
def conn():
    return os.open('/dev/sentry-tools', os.O_RDWR)
def send(fd, data):
    os.write(fd, data)
def answer(fd):
    head = b''
    while len(head) < 4:
        c = os.read(fd, 4 - len(head))
        if not c: return None
        head += c
    n = struct.unpack('>I', head)[0]
    body = b''
    while len(body) < n:
        c = os.read(fd, n - len(body))
        if not c: return None
        body += c
    return json.loads(body)
def frame(obj):
    b = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return struct.pack('>I', len(b)) + b
"""


def run(code, timeout=60):
    p = subprocess.run([SENTRY, "run", "--json", "--tool", "fake=" + TOOL, "--", "python3", "-c",
                        PRELUDE + code], capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"no JSON result (a sentry crash?): rc={p.returncode} "
                             f"{p.stdout!r} {p.stderr[-2000:]!r}")


class ToolChannelEscape(unittest.TestCase):
    def test_oversized_frame_is_refused(self):
        r = run("fd = conn()\nsend(fd, struct.pack('>I', 0xffffffff))\nprint(answer(fd))\n"
                "print(os.read(fd, 10))")
        out = r["stdout"].splitlines()
        self.assertIn("a request frame of 4294967295 bytes", out[0])
        self.assertEqual(out[1], "b''")  # and the connection is closed
        self.assertEqual(r["exitCode"], 0, r)

    def test_malformed_frames_are_refused(self):
        r = run("for body in [b'{', b'[]', b'{\"tool\": 1}', b'{\"tool\": \"fake\", \"args\": [1]}',"
                " b'\\xff\\xfe', b'[' * 100000, b'{\"tool\":\"fake\",\"args\":{\"a\":' + b'[' * 5000 + b']' * 5000 + b'}}']:\n"
                "    fd = conn(); send(fd, frame(body)); print(answer(fd)['error']); os.close(fd)\n"
                "fd = conn(); send(fd, struct.pack('>I', 0)); print(answer(fd)['error'])\n"
                "import sentry_tools; print(sentry_tools.fake(text='still here')['upper'])")
        out = r["stdout"].splitlines()
        self.assertEqual(len(out), 9, r)
        for line in out[:5]:
            self.assertTrue("not {" in line or "args must be an object" in line, line)
        self.assertIn("a request frame of 100000 bytes", out[5])
        self.assertIn("deeper than", out[6])
        self.assertIn("a request frame of 0 bytes", out[7])
        self.assertEqual(out[8], "STILL HERE")

    def test_half_frame_then_close(self):
        r = run("fd = conn(); send(fd, struct.pack('>I', 100) + b'{\"to'); os.close(fd)\n"
                "import sentry_tools; print(sentry_tools.fake(text='ok')['upper'])")
        self.assertEqual(r["stdout"], "OK\n", r)
        self.assertEqual(r["toolCalls"][-1]["error"], None)

    def test_many_opens_are_bounded(self):
        r = run("import errno\nfds = []\n"
                "try:\n    for i in range(100): fds.append(conn())\n"
                "except OSError as e: print('open', len(fds), errno.errorcode[e.errno])\n"
                "for fd in fds: os.close(fd)\n"
                "n = 0\n"
                "try:\n    for i in range(1000): os.close(conn()); n += 1\n"
                "except OSError as e: print('reopen', n, errno.errorcode[e.errno])")
        out = r["stdout"].splitlines()
        self.assertEqual(out[0], "open 8 EBUSY", r)
        self.assertTrue(out[1].startswith("reopen ") and out[1].endswith(" EBUSY"), r)
        self.assertLessEqual(int(out[1].split()[1]), 256 - 8)

    def test_channel_is_not_a_path_to_the_host(self):
        # The node is a device of no driver; its fd is a socket with no name:
        # nothing to connect to, bind or exec, no host path behind it.
        r = run("import stat\nst = os.stat('/dev/sentry-tools')\nprint(stat.S_ISCHR(st.st_mode))\n"
                "fd = conn()\ns = socket.socket(fileno=fd)\n"
                "print(repr(s.getpeername()), repr(s.getsockname()))\n"
                "c = socket.socket(socket.AF_UNIX)\n"
                "try: c.connect('/dev/sentry-tools'); print('connected')\n"
                "except OSError as e: print('connect', e.errno)\n"
                "try: os.execv('/dev/sentry-tools', ['x']); print('exec')\n"
                "except OSError as e: print('exec', e.errno)\n"
                "print(os.readlink('/proc/self/fd/%d' % fd).startswith('socket:'))\n"
                "try: os.open('/proc/self/fd/%d' % fd, os.O_RDWR); print('reopened')\n"
                "except OSError as e: print('reopen', e.errno)\n")
        out = r["stdout"].splitlines()
        self.assertEqual(out[0], "True", r)
        self.assertEqual(out[1], "'' ''", r)
        self.assertTrue(out[2].startswith("connect "), r)
        self.assertTrue(out[3].startswith("exec "), r)
        self.assertEqual(out[4], "True", r)
        self.assertTrue(out[5].startswith("reopen "), r)

    def test_peer_of_the_channel_is_no_process_to_hold(self):
        # The channel's other end is the sentry's: its SO_PEERPIDFD would be a
        # pidfd of the sentry (signals, waits), its SO_PEERCRED the sentry's
        # host pid. The guest gets neither: no pidfd (ENODATA), pid 0.
        r = run("s = socket.socket(fileno=conn())\n"
                "try:\n"
                "    s.getsockopt(socket.SOL_SOCKET, 77, 4)\n"
                "    print('pidfd')\n"
                "except OSError as e:\n"
                "    print(e.errno)\n"
                "print(struct.unpack('3i', s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0])")
        self.assertEqual(r["stdout"].split(), ["61", "0"], r)  # ENODATA
        self.assertEqual(r["exitCode"], 0, r)

    def test_module_cannot_be_replaced_by_another_user(self):
        r = run("import sentry_tools\n"
                "try: open(sentry_tools.__file__, 'w'); print('written')\n"
                "except OSError as e: print('refused', e.errno)")
        self.assertTrue(r["stdout"].startswith("refused"), r)

    def test_tool_names_with_shell_or_path_characters_are_refused(self):
        for bad in ["../../bin/sh=/bin/true", "a/b=/bin/true", "$(id)=/bin/true",
                    "a=/bin/true && id", "a=/bin/true | id", "a=/bin/true > /tmp/x"]:
            p = subprocess.run([SENTRY, "run", "--tool", bad, "--", "true"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 125, (bad, p.stderr))


if __name__ == "__main__":
    unittest.main(verbosity=2)
