# expect: contained
# flags: --allow-net example.com:443
# Thousands of connection attempts out, refused ones and ones to the sandbox's
# own closed ports: each fails at once and the run stays within its limits.
import socket
import time

t = time.time()
refused = 0
for i in range(3000):
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect((f"93.184.{i % 250}.{i % 200 + 1}", 443 + i % 3))
        print("ESCAPED: connected out", s.getpeername())
    except OSError:
        refused += 1
    finally:
        s.close()
print(refused, "refused in %.1fs" % (time.time() - t))
