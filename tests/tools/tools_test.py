#!/usr/bin/python3
"""--tool NAME=HOST_COMMAND through the real sentry binary (run, serve, mcp).

usage: tools_test.py PATH/TO/sentry
"""
import json
import os
import secrets
import subprocess
import sys
import tempfile
import unittest
import urllib.request

SENTRY = sys.argv.pop(1) if len(sys.argv) > 1 else "build-cc/sentry/sentry"
HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "fake_tool.py")


def run(code, tools=("fake=" + TOOL,), extra=(), env=None, timeout=60):
    flags = []
    for t in tools:
        flags += ["--tool", t]
    p = subprocess.run([SENTRY, "run", "--json", *flags, *extra, "--", "python3", "-c", code],
                       capture_output=True, text=True, timeout=timeout, env=env)
    try:
        return json.loads(p.stdout), p
    except json.JSONDecodeError:
        raise AssertionError(f"no JSON result: rc={p.returncode} {p.stdout!r} {p.stderr!r}")


CALL = """
import json, sentry_tools
def show(**kw):
    try:
        print(json.dumps({"ok": sentry_tools.fake(**kw)}))
    except sentry_tools.ToolError as e:
        print(json.dumps({"error": str(e)}))
"""


def lines(result):
    return [json.loads(l) for l in result["stdout"].splitlines()]


class RunTools(unittest.TestCase):
    def test_echo_and_transform(self):
        r, _ = run(CALL + "show(text='hello', n=[1, 2], d={'k': None})")
        self.assertEqual(r["exitCode"], 0, r)
        out = lines(r)[0]["ok"]
        self.assertEqual(out["echo"], {"text": "hello", "n": [1, 2], "d": {"k": None}})
        self.assertEqual(out["upper"], "HELLO")
        self.assertEqual(r["denied"], [])
        self.assertEqual(len(r["toolCalls"]), 1)
        call = r["toolCalls"][0]
        self.assertEqual(call["name"], "fake")
        self.assertGreater(call["argBytes"], 10)
        self.assertGreater(call["resultBytes"], 10)
        self.assertIsNone(call["error"])
        self.assertIsInstance(call["ms"], int)

    def test_command_words_split_without_shell(self):
        r, _ = run(CALL + "show()", tools=[f"fake={TOOL} 'two words' \"a b\" c\\ d"])
        self.assertEqual(lines(r)[0]["ok"]["argv"], ["two words", "a b", "c d"])

    def test_unknown_tool(self):
        r, _ = run("import sentry_tools\ntry:\n sentry_tools.call('nope')\n"
                   "except sentry_tools.ToolError as e: print(e)\n"
                   "print(hasattr(sentry_tools, 'nope'))")
        self.assertEqual(r["stdout"], "no tool is named nope\nFalse\n")
        self.assertEqual(r["toolCalls"][0]["error"], "no tool is named nope")

    def test_failing_tool_raises_with_its_message(self):
        r, _ = run(CALL + "show(mode='fail')")
        err = lines(r)[0]["error"]
        self.assertIn("exited with code 1", err)
        self.assertIn("the tool failed on purpose", err)
        self.assertIn("the tool failed on purpose", r["toolCalls"][0]["error"])

    def test_bad_json_raises(self):
        r, _ = run(CALL + "show(mode='bad')")
        self.assertIn("no single JSON value", lines(r)[0]["error"])

    def test_timeout_kills_the_tool(self):
        r, _ = run(CALL + "show(mode='sleep')", timeout=60)
        err = lines(r)[0]["error"]
        self.assertIn("timed out after 10 s", err)
        self.assertGreaterEqual(r["toolCalls"][0]["ms"], 9900)
        left = subprocess.run(["pgrep", "-f", TOOL], capture_output=True, text=True).stdout
        self.assertEqual(left.strip(), "", "a tool process outlived its call")

    def test_run_timeout_ends_a_running_call(self):
        r, _ = run(CALL + "show(mode='sleep')", extra=["--timeout", "2"])
        self.assertTrue(r["timedOut"])
        self.assertLess(r["durationMs"], 6000)
        self.assertEqual(len(r["toolCalls"]), 1)
        self.assertIn("the run ended", r["toolCalls"][0]["error"])

    def assert_gone(self, marker):
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
        self.assertEqual(left.strip(), "", f"{marker!r} outlived the tool call")

    def test_setsid_child_of_a_tool_is_killed(self):
        # setsid -f: a new session, the tool's own process exits at once.
        r, _ = run(CALL + "show()", tools=["fake=/usr/bin/setsid -f sleep 7771"])
        self.assertIn("wrote no single JSON value", lines(r)[0]["error"])
        self.assert_gone("sleep 7771")

    def test_double_forked_daemon_of_a_tool_is_killed(self):
        daemon = "(setsid sh -c 'sleep 7772 & sleep 7772 &' &); echo 1"
        r, _ = run(CALL + "show()", tools=[f"fake=/bin/sh -c \"{daemon}\""])
        self.assertEqual(lines(r)[0], {"ok": 1}, r)
        self.assert_gone("sleep 7772")

    def test_detached_child_of_a_timed_out_call_is_killed(self):
        r, _ = run(CALL + "show()", tools=["fake=/bin/sh -c 'setsid -f sleep 7773; sleep 60'"],
                   extra=["--timeout", "2"])
        self.assertTrue(r["timedOut"])
        self.assertIn("the run ended", r["toolCalls"][0]["error"])
        self.assert_gone("sleep 7773")

    def test_result_cap(self):
        r, _ = run(CALL + "show(mode='big')")
        self.assertIn("more than 1048576 bytes", lines(r)[0]["error"])

    def test_argument_cap(self):
        r, _ = run(CALL + "show(text='x' * 70000)\n"
                   "print(len(sentry_tools.fake(text='y' * 60000)['upper']))")
        out = r["stdout"].splitlines()
        # Refused at the frame, before it is parsed (kMaxFrameBytes).
        self.assertIn("at most 66560", json.loads(out[0])["error"])
        self.assertEqual(out[1], "60000")

    def test_call_count_cap(self):
        r, _ = run(CALL + "for i in range(66): show(text=str(i))")
        out = lines(r)
        self.assertTrue(all("ok" in o for o in out[:64]), out[:64])
        self.assertIn("made its 64 tool calls", out[64]["error"])
        self.assertIn("made its 64 tool calls", out[65]["error"])
        self.assertEqual(len(r["toolCalls"]), 64)

    def test_module_absent_without_tool(self):
        r, _ = run("import os\nprint(os.path.exists('/dev/sentry-tools'))\n"
                   "try:\n import sentry_tools\nexcept ImportError: print('no module')",
                   tools=())
        self.assertEqual(r["stdout"], "False\nno module\n")
        self.assertNotIn("toolCalls", r)

    def test_host_command_sees_nothing_of_the_guest(self):
        env = {"PATH": os.environ["PATH"], "OPERATOR_SECRET": "s3cret"}
        r, _ = run("import os\nopen('/tmp/guest_marker', 'w').write('x')\n" + CALL +
                   "show(mode='env')\nshow(mode='guestfile', path='/tmp/guest_marker')",
                   extra=["-e", "GUEST_VAR=1"], env=env)
        seen, marker = lines(r)
        seen = seen["ok"]
        self.assertEqual(set(seen["env"]), {"PATH", "LANG", "HOME"})
        self.assertEqual(seen["env"]["PATH"], "/usr/local/bin:/usr/bin:/bin")
        self.assertTrue(seen["cwd"].startswith("/tmp/sentry-tool-"), seen)
        self.assertEqual(seen["cwdFiles"], [])
        self.assertFalse(os.path.exists(seen["cwd"]), "the tool's directory is left")
        # 0-2 and the directory listing's own fd.
        self.assertEqual(seen["fds"], ["0", "1", "2", "3"])
        self.assertFalse(marker["ok"])

    def test_registration_refuses_bad_names(self):
        for bad in ["../x=/bin/true", "a;b=/bin/true", "x y=/bin/true", "import=/bin/true",
                    "9a=/bin/true", "a=/bin/true; rm -rf /", "a=/bin/echo $(id)", "a=`id`",
                    "a=/no/such/tool", "a="]:
            p = subprocess.run([SENTRY, "run", "--tool", bad, "--", "true"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 125, (bad, p.stderr))
            self.assertIn("--tool", p.stderr, bad)
        p = subprocess.run([SENTRY, "run", "--tool", "a=/bin/true", "--tool", "a=/bin/true",
                            "--", "true"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn("twice", p.stderr)


class ServeAndMcp(unittest.TestCase):
    def test_serve_run_uses_a_tool(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            token = secrets.token_hex(16)
            f.write(token)
        server = subprocess.Popen([SENTRY, "serve", "--listen", "127.0.0.1:0", "--token-file",
                                   f.name, "--tool", "fake=" + TOOL],
                                  stderr=subprocess.PIPE, text=True)
        try:
            address = None
            for line in server.stderr:
                if "listening on " in line:
                    address = line.split("listening on ", 1)[1].split()[0]
                    break
            self.assertIsNotNone(address)
            body = json.dumps({"language": "python",
                               "code": "import sentry_tools\nprint(sentry_tools.fake(text='via serve')['upper'])"})
            req = urllib.request.Request(f"http://{address}/v1/runs", body.encode(),
                                         {"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as resp:
                result = json.loads(resp.read())
            self.assertEqual(result["stdout"], "VIA SERVE\n", result)
            self.assertEqual(result["toolCalls"][0]["name"], "fake")
        finally:
            server.terminate()
            server.wait(30)
            server.stderr.close()
            os.unlink(f.name)

    def test_mcp_run_python_uses_a_tool(self):
        mcp = subprocess.Popen([SENTRY, "mcp", "--tool", "fake=" + TOOL], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
        try:
            def call(i, method, params):
                mcp.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                            "params": params}) + "\n")
                mcp.stdin.flush()
                while True:
                    msg = json.loads(mcp.stdout.readline())
                    if msg.get("id") == i:
                        return msg
            call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}})
            r = call(2, "tools/call", {"name": "run_python", "arguments": {
                "code": "import sentry_tools\nprint(sentry_tools.fake(text='via mcp')['upper'])"}})
            structured = r["result"]["structuredContent"]
            self.assertEqual(structured["stdout"], "VIA MCP\n", r)
            self.assertEqual(len(structured["toolCalls"]), 1)
        finally:
            mcp.stdin.close()
            mcp.wait(30)
            mcp.stdout.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
