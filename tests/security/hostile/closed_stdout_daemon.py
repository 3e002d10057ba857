# expect: contained
# Daemonizes: double fork, setsid, closes stdin/stdout/stderr and keeps
# running (writing to /tmp) long after the leader has exited.
import os
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        while True:
            with open("/tmp/daemon-alive", "a") as f:
                f.write("tick\n")
            time.sleep(0.1)
    os._exit(0)
time.sleep(0.3)
print("leader exits; the daemon must not outlive the run")
