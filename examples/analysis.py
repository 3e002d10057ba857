"""A small analysis of the kind an agent writes: it computes, writes files in
its sandbox, runs a child process, and prints a result."""
import csv
import json
import os
import sqlite3
import statistics
import subprocess

rows = [{"x": i, "y": (i * 48271) % 6933} for i in range(1, 1001)]
with open("/tmp/data.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["x", "y"])
    w.writeheader()
    w.writerows(rows)

db = sqlite3.connect("/tmp/data.db")
db.execute("create table t (x integer, y integer)")
with open("/tmp/data.csv") as f:
    db.executemany("insert into t values (:x, :y)", csv.DictReader(f))
total, = db.execute("select sum(y) from t").fetchone()

ys = [r["y"] for r in rows]
result = {
    "product": 48271 * 6933,
    "sum_y": total,
    "mean_y": round(statistics.mean(ys), 3),
    "stdev_y": round(statistics.stdev(ys), 3),
    "files_in_tmp": sorted(os.listdir("/tmp")),
    "echo": subprocess.run(["/bin/echo", "child ok"], capture_output=True, text=True).stdout.strip(),
    "whoami": f"uid={os.getuid()} cwd={os.getcwd()}",
}
print(json.dumps(result, indent=2))
