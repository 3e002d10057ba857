# A hostile session kernel: ready, then a frame whose length is past the cap
# once a cell comes. The session must end "crashed", the server go on.
import os, struct, json
out = os.dup(1)
msg = json.dumps({"op": "ready", "python": "x", "pid": os.getpid()}).encode()
os.write(out, struct.pack(">I", len(msg)) + msg)
os.read(0, 4)
os.write(out, struct.pack(">I", 0x7fffffff) + b"{}")
import time
time.sleep(3600)
