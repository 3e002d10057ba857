# expect: contained
# kill(-1, SIGKILL) and signals to every pid it can think of: may only ever
# reach the sandbox's own processes (the runner keeps a host process with
# the sandbox's host uid alive and checks it survives).
import errno
import os
import signal

for pid in [1, os.getppid(), 2, 3, 300, 1000, 32768]:
    if pid == os.getpid():
        continue
    try:
        os.kill(pid, signal.SIGKILL)
        print("kill", pid, "ok", flush=True)
    except OSError as e:
        print("kill", pid, errno.errorcode.get(e.errno, e), flush=True)
try:
    os.kill(-1, signal.SIGTERM)
    print("kill -1 TERM ok", flush=True)
except OSError as e:
    print("kill -1", errno.errorcode.get(e.errno, e))
print("still here", flush=True)
os.kill(-1, signal.SIGKILL)
