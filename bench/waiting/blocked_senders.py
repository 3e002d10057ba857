# N guest threads each blocked in a trapped call at once: a sendto naming a
# unix datagram socket whose queue is full (the sentry answers it, and must
# wait for room). Prints how many were blocked at once, then drains the queue
# and checks every message arrived. bench/waiting/run.sh samples the sentry's
# threads and RSS while they wait (the "waiting" line is its cue).
import os, socket, sys, threading, time
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
path = "/tmp/r.sock"
srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
srv.bind(path)
filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
filler.setblocking(False)
filled = 0
while True:
    try:
        filler.sendto(b"f", path)
        filled += 1
    except BlockingIOError:
        break
threading.stack_size(128 << 10)
errors = []
done = []
def sender(i):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b"y%d" % i, path)  # blocks: the receiver's queue is full
        done.append(i)
    except OSError as e:
        errors.append(e.errno)
threads = [threading.Thread(target=sender, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
time.sleep(1.5)
blocked = N - len(done) - len(errors)
print(f"waiting: filled={filled} blocked_at_once={blocked} errors_before_drain={len(errors)}",
      flush=True)
time.sleep(float(os.environ.get("HOLD_S", "2")))
got = 0
srv.settimeout(10)
while got < filled + N - len(errors):
    try:
        srv.recv(16)
    except socket.timeout:
        break
    got += 1
for t in threads:
    t.join()
print(f"sent={len(done)} errors={len(errors)} received={got - filled}")
sys.exit(0 if len(done) == N and got - filled == N else 1)
