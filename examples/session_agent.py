#!/usr/bin/env python3
"""A multi-step analysis in one `sentry serve` session, as an agent runs it.

One session keeps its Python state between steps: the CSV is loaded once,
a wrong column name comes back as data (the error's name, value and
traceback), the fix runs on the DataFrame already in memory, a plot comes
back as a PNG, and a file the session wrote is downloaded. Each step's
result is checked. Standard library only.

    sentry serve --listen 127.0.0.1:8080 --token-file token.txt &
    python3 examples/session_agent.py --url http://127.0.0.1:8080 --token-file token.txt

    python3 examples/session_agent.py --start /path/to/sentry   # starts (and stops) its own
"""
import argparse
import base64
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

SALES = ("region,month,sales\n"
         "north,1,120\nnorth,2,135\nsouth,1,90\nsouth,2,110\n"
         "east,1,70\neast,2,95\nwest,1,150\nwest,2,160\n")


class Session:
    """One session of `sentry serve`: its cells, commands and files."""

    def __init__(self, url, token, **options):
        self.url, self.token = url, token
        created = self._call("POST", "/v1/sessions", options)
        self.id = created["id"]
        self.base = "/v1/sessions/" + self.id

    def _call(self, method, path, body=None, raw=None, expect_json=True):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + self.token,
            "Content-Type": "application/octet-stream" if raw is not None else "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s %s: %d %s" % (method, path, e.code, e.read()[:500])) from None
        return json.loads(payload) if expect_json else payload

    def cell(self, code, timeout_ms=20000):
        """Runs code in the session's Python: stdout, results (MIME bundles), error..."""
        return self._call("POST", self.base + "/cells", {"code": code, "timeoutMs": timeout_ms})

    def upload(self, path, data):
        return self._call("PUT", self.base + "/files?path=" + urllib.parse.quote(path), raw=data)

    def download(self, path):
        return self._call("GET", self.base + "/files?path=" + urllib.parse.quote(path),
                          expect_json=False)

    def close(self):
        return self._call("DELETE", self.base)


def check(what, ok, result=None):
    if not ok:
        raise SystemExit("FAILED: %s\n%s" % (what, json.dumps(result, indent=1)[:3000]))
    print("ok:", what)


def analysis(url, token):
    s = Session(url, token, idleTimeoutMs=120000)
    print("session", s.id)
    try:
        # 1. The data goes in once; the DataFrame stays in the session.
        s.upload("data/sales.csv", SALES.encode())
        r = s.cell("import pandas as pd\n"
                   "df = pd.read_csv('data/sales.csv')\n"
                   "print(len(df), 'rows')\n"
                   "df.head(3)")
        check("1. the CSV loads; the last expression comes back as a table",
              r["error"] is None and r["stdout"] == "8 rows\n"
              and "<table" in r["results"][-1].get("text/html", ""), r)

        # 2. A wrong column name: the error is data, with its traceback.
        r = s.cell("totals = df.groupby('regoin')['sales'].sum()")
        err = r["error"] or {}
        check("2. a wrong column name is an error the agent can read",
              err.get("name") == "KeyError" and "regoin" in err.get("value", "")
              and any("<cell" in line for line in err.get("traceback", [])), r)

        # 3. The fix, on the DataFrame still in memory (no reload).
        r = s.cell("totals = df.groupby('region')['sales'].sum().sort_values()\n"
                   "totals.to_dict()")
        check("3. the fix runs on the state the session kept",
              r["error"] is None and r["results"][-1]["text/plain"]
              == "{'east': 165, 'south': 200, 'north': 255, 'west': 310}", r)

        # 4. A plot: plt.show() gives the figure back as a PNG.
        r = s.cell("import os\nimport matplotlib.pyplot as plt\n"
                   "os.makedirs('out', exist_ok=True)\n"
                   "ax = totals.plot.barh(title='sales by region')\n"
                   "plt.tight_layout()\n"
                   "plt.savefig('out/totals.png')\n"
                   "plt.show()\n"
                   "totals.to_csv('out/totals.csv')")
        pngs = [base64.b64decode(b["image/png"]) for b in r["results"] if "image/png" in b]
        check("4. the plot comes back as a PNG",
              r["error"] is None and len(pngs) == 1 and pngs[0][:8] == b"\x89PNG\r\n\x1a\n", r)

        # 5. A file the session wrote, downloaded.
        got = s.download("out/totals.csv").decode()
        check("5. the session's file downloads",
              got.splitlines() == ["region,sales", "east,165", "south,200", "north,255",
                                   "west,310"], {"file": got})
    finally:
        s.close()
    # The session is gone, and says why.
    try:
        s.cell("df")
        gone = None
    except RuntimeError as e:
        gone = str(e)
    check("the closed session answers 410, reason deleted",
          gone is not None and ": 410 " in gone and '"deleted"' in gone, {"answer": gone})
    return "ok"


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
    ap.add_argument("--start", metavar="SENTRY", help="start `SENTRY serve` for the analysis")
    args = ap.parse_args()
    proc = None
    if args.start:
        proc, url, token = start_server(args.start)
    elif args.url and args.token_file:
        with open(args.token_file) as f:
            url, token = args.url.rstrip("/"), f.read().strip()
    else:
        ap.error("give --url and --token-file, or --start SENTRY")
    try:
        analysis(url, token)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
