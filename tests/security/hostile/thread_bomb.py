# expect: limit pids
# threading.Thread in a loop: thread creation must fail at the cap.
import threading
import time

n = 0
try:
    while True:
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        n += 1
except Exception as e:
    print("thread creation failed after", n, type(e).__name__, e)
