#!/usr/bin/python3
"""A host tool for the tests: what it does is the "mode" kwarg."""
import json
import os
import sys
import time

args = json.load(sys.stdin)
mode = args.get("mode", "echo")
if mode == "fail":
    sys.stderr.write("the tool failed on purpose\n")
    sys.exit(1)
if mode == "sleep":
    time.sleep(60)
if mode == "bad":
    print("not json {")
    sys.exit(0)
if mode == "env":
    print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "cwdFiles": os.listdir("."),
                      "fds": sorted(os.listdir("/proc/self/fd"))}))
    sys.exit(0)
if mode == "big":
    print(json.dumps("x" * (2 << 20)))
    sys.exit(0)
if mode == "guestfile":
    print(json.dumps(os.path.exists(args["path"])))
    sys.exit(0)
print(json.dumps({"echo": args, "upper": str(args.get("text", "")).upper(),
                  "argv": sys.argv[1:]}))
