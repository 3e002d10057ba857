# expect: limit pids
# os.fork() in a loop; each child sleeps. fork must fail with EAGAIN at the cap.
import errno
import os
import time

n = 0
while True:
    try:
        pid = os.fork()
    except OSError as e:
        print("fork failed after", n, errno.errorcode.get(e.errno, e))
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    n += 1
