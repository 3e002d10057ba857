#!/usr/bin/env python3
"""An agent loop against `sentry serve`, with a scripted stand-in for the model.

The "model" is asked to compute the mean word length of a file. Its first
answer has a bug; the loop runs it in a sandbox, reads the traceback from the
result, hands it back, and runs the fixed code the model answers with. No
network and no model needed: the stand-in answers from a script.

    sentry serve --listen 127.0.0.1:8080 --token-file token.txt &
    python3 examples/agent_loop.py --url http://127.0.0.1:8080 --token-file token.txt

    python3 examples/agent_loop.py --start /path/to/sentry   # starts (and stops) its own
"""
import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import urllib.request

TASK = "Print the mean word length of words.txt, rounded to 2 places."
WORDS = "the quick brown fox jumps over the lazy dog\n"


class ScriptedModel:
    """Answers like a model would: code first, then a fix for the error it is shown."""

    def answer(self, history):
        last = history[-1]
        if last["role"] == "user":  # the task: a first attempt, with a typo
            return ("words = open('words.txt').read().split()\n"
                    "print(round(sum(len(w) for w in words) / len(word), 2))\n")
        error = last["content"]
        if "NameError: name 'word' is not defined" in error:
            return ("words = open('words.txt').read().split()\n"
                    "print(round(sum(len(w) for w in words) / len(words), 2))\n")
        raise RuntimeError("the scripted model has no answer for: " + error)


def run(url, token, code, files):
    """POST /v1/runs: the code runs in a fresh sandbox; the --json result comes back."""
    body = json.dumps({"language": "python", "code": code, "files": files,
                       "limits": {"timeoutMs": 10000}}).encode()
    req = urllib.request.Request(url + "/v1/runs", data=body, method="POST", headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


def agent_loop(url, token, max_turns=4):
    model = ScriptedModel()
    history = [{"role": "user", "content": TASK}]
    files = {"words.txt": WORDS}
    for turn in range(1, max_turns + 1):
        code = model.answer(history)
        history.append({"role": "assistant", "content": code})
        result = run(url, token, code, files)
        print(f"turn {turn}: exit code {result['exitCode']}, {result['durationMs']} ms")
        if result["exitCode"] == 0 and not result["timedOut"]:
            print("answer:", result["stdout"].strip())
            return result["stdout"].strip()
        # What the model reads: the traceback as the sandbox gave it, and what was refused.
        feedback = result["stderr"] or result.get("error") or "(no output)"
        for d in result["denied"]:
            feedback += f"\nrefused: {d['argument']} ({d['error']}): {d['hint']}"
        print("  error:", feedback.strip().splitlines()[-1])
        history.append({"role": "tool", "content": feedback})
    raise RuntimeError("no working code after %d turns" % max_turns)


def start_server(sentry):
    """`sentry serve` on a port it picks, with a fresh token; returns (process, url, token)."""
    token = secrets.token_hex(16)
    tf = tempfile.NamedTemporaryFile("w", delete=False)
    tf.write(token + "\n")
    tf.close()
    proc = subprocess.Popen([sentry, "serve", "--listen", "127.0.0.1:0", "--token-file", tf.name],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    os.unlink(tf.name)
    m = re.search(r"listening on (\S+)", line)
    if not m:
        proc.kill()
        raise RuntimeError("sentry serve did not start: " + line)
    return proc, "http://" + m.group(1), token


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="where sentry serve listens, e.g. http://127.0.0.1:8080")
    ap.add_argument("--token-file", help="the file holding serve's bearer token")
    ap.add_argument("--start", metavar="SENTRY", help="start `SENTRY serve` for the loop")
    args = ap.parse_args()
    proc = None
    if args.start:
        proc, url, token = start_server(args.start)
    elif args.url and args.token_file:
        url, token = args.url.rstrip("/"), open(args.token_file).read().strip()
    else:
        ap.error("give --url and --token-file, or --start SENTRY")
    try:
        answer = agent_loop(url, token)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    expected = round(sum(len(w) for w in WORDS.split()) / len(WORDS.split()), 2)
    if answer != str(expected):
        sys.exit(f"wrong answer {answer!r}, expected {expected}")


if __name__ == "__main__":
    main()
