// Trapped calls that must wait (a send to a full queue, a connect to a full
// backlog) wait on fibers of the sentry (base/fiber_loop.h): hundreds of guest
// threads can wait at once, each finishes when the room comes, and a wait the
// guest gave up (a signal) does nothing more.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

// A unix datagram socket at path whose queue is full (`filled` datagrams).
constexpr const char* kFullQueue = R"PY(
import signal, socket, sys, threading, time
path = sys.argv[1] + "/r.sock"
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
)PY";

// Each sender names the address (sendto), so each call is the sentry's to
// answer; the receiver's queue is full until the main thread drains it.
constexpr const char* kBlockedSenders = R"PY(
N = 300
threading.stack_size(128 << 10)
done, errors = [], []
def sender(i):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(b"y", path)
        done.append(i)
    except OSError as e:
        errors.append(e.errno)
threads = [threading.Thread(target=sender, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
time.sleep(1)
print(f"waiting={N - len(done) - len(errors)}")
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
)PY";

TEST(WaitingCalls, HundredsOfThreadsWaitInTrappedSendsAtOnce) {
  ProcessResult r =
      SandboxScript(std::string(kFullQueue) + kBlockedSenders, {"--pids-limit", "512"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  // Before the fibers: 64 waited, the other 236 got EAGAIN at once.
  EXPECT_EQ(kv["waiting"], "300") << r.out;
  EXPECT_NE(r.out.find("sent=300 errors=0 received=300"), std::string::npos) << r.out;
}

// A blocking connect to a unix listener whose backlog is full waits until the
// listener accepts, for many clients at once.
constexpr const char* kBlockedConnects = R"PY(
import socket, sys, threading, time
N = 200
path = sys.argv[1] + "/l.sock"
lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lst.bind(path)
lst.listen(0)
threading.stack_size(128 << 10)
done, errors = [], []
def client():
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        c.sendall(b"x")
        done.append(c)
    except OSError as e:
        errors.append(e.errno)
threads = [threading.Thread(target=client) for _ in range(N)]
for t in threads:
    t.start()
time.sleep(1)
print(f"connected_before_accept={len(done)}")
print(f"errors_before_accept={len(errors)}")
lst.settimeout(10)
accepted = 0
while accepted < N - len(errors):
    try:
        a, _ = lst.accept()
    except socket.timeout:
        break
    accepted += 1
    assert a.recv(1) == b"x"
for t in threads:
    t.join()
print(f"connected={len(done)} errors={len(errors)} accepted={accepted}")
)PY";

TEST(WaitingCalls, ConnectsToAFullBacklogWaitUntilAccepted) {
  ProcessResult r = SandboxScript(kBlockedConnects, {"--pids-limit", "512"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["errors_before_accept"], "0") << r.out;
  EXPECT_LT(std::stoi(kv["connected_before_accept"]), 200) << r.out;  // most waited
  EXPECT_NE(r.out.find("connected=200 errors=0 accepted=200"), std::string::npos) << r.out;
}

// A send waiting for room when a signal interrupts it: the kernel withdraws
// the call and the guest restarts it (Python retries on EINTR). The wait
// that was given up must not send: exactly one message arrives per sendto.
constexpr const char* kInterruptedSend = R"PY(
alarms = []
signal.signal(signal.SIGALRM, lambda *a: alarms.append(1))
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)  # interrupts the wait again and again
def drain_later():
    time.sleep(0.6)
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    time.sleep(0.1)
    for _ in range(filled):
        srv.recv(16)
threading.Thread(target=drain_later).start()
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b"y", path)  # waits; interrupted ~10 times, restarted each time
srv.settimeout(1)
ys = 0
try:
    while True:
        if srv.recv(16) == b"y":
            ys += 1
except socket.timeout:
    pass
print(f"interrupted={'yes' if len(alarms) >= 3 else 'no'}")
print(f"ys={ys}")
)PY";

TEST(WaitingCalls, AWaitTheGuestGaveUpSendsNothing) {
  ProcessResult r = SandboxScript(std::string(kFullQueue) + kInterruptedSend);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["interrupted"], "yes") << r.out;
  EXPECT_EQ(kv["ys"], "1") << r.out;
}

}  // namespace
}  // namespace sentry::testing
