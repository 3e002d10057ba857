// The sentry's own memory and identity under hostile workloads, through the
// real binary (issue 14, holes 4 and 5). Each run samples the sentry's VmRSS
// and thread count (SentryRssSampler) and holds it under one fixed cap: the
// sentry is outside the guest's memory cgroup, so --memory does not bound it.
//
//   fd identity:  a held lower-layer fd keeps its sandbox identity after
//                 70,000+ fresh objects were opened and closed (hole 5); a
//                 donated fd the sentry no longer recognises (forgotten while
//                 in flight in SCM_RIGHTS) fails closed with EBADF, never
//                 answered from the host file; the guest's own pipes, memfds
//                 and stdio keep working; holding more donated objects than
//                 the table's cap is ENFILE for the guest, not a sentry crash.
//   bounds:       100,000 refused connects (the result's denial list stays at
//                 20), 200 blocking sends at once (the sentry finishes at most
//                 64 on threads of its own, EAGAIN past that), 120 threads.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/limits/limits_util.h"
#include "tests/limits/sentry_rss.h"
#include "tests/util/json_read.h"

namespace sentry::limits {
namespace {

// The sentry alone runs `python3 -c pass` in about 4 MiB of RSS here (measured
// 3.7 MiB on 2026-12-02); kSentryRssCapKb (64 MiB) is the cap for any workload.
constexpr long kRssCapKb = kSentryRssCapKb;

// A lower-layer file every host here has and that the sandbox shows.
constexpr const char* kLowerFile = "/usr/bin/env";

struct Outcome {
  Finished run;
  long peak_rss_kb = 0;
  long peak_threads = 0;
  std::string stdout_text;  // the guest's, from the --json result
  nlohmann::json denied = nlohmann::json::array();
};

Outcome RunSampled(const std::string& code, std::vector<std::string> flags = {},
                   double timeout_sec = 120) {
  flags.insert(flags.begin(), "--json");
  Child c = SpawnSentry(flags, {"/usr/bin/python3", "-c", code});
  SentryRssSampler sampler(c.pid);
  Outcome o;
  o.run = Collect(c, timeout_sec);
  sampler.Stop();
  o.peak_rss_kb = sampler.peak_rss_kb();
  o.peak_threads = sampler.peak_threads();
  std::printf("  sentry: peak RSS %ld kB, peak threads %ld, run %.1f s\n", o.peak_rss_kb,
              o.peak_threads, o.run.wall);
  if (auto r = ResultOf(o.run.out)) {
    o.stdout_text = Str(At(*r, "stdout"));
    o.denied = At(*r, "denied");
  }
  return o;
}

std::string Why(const Outcome& o) {
  return "exit " + std::to_string(o.run.exit_code) + ", peak RSS " + std::to_string(o.peak_rss_kb) +
         " kB, threads " + std::to_string(o.peak_threads) + "\nstdout: " + Clip(o.run.out) +
         "\nstderr: " + Clip(o.run.err);
}

struct HostStat {
  ino_t ino;
  uid_t uid;
  timespec mtime, atime;
};
HostStat StatOf(const char* path) {
  struct stat st {};
  stat(path, &st);
  return {st.st_ino, st.st_uid, st.st_mtim, st.st_atim};
}

// Hole 5, exactly: a lower file's fd kept while 70,000 directory tokens and
// 35,000 /proc files are opened and closed (each a fresh object).
TEST(SentryBoundsTest, HeldLowerFdKeepsItsIdentityAfter70000FreshObjects) {
  HostStat before = StatOf(kLowerFile);
  std::string code = std::string("import os\nP='") + kLowerFile + R"('
fd = os.open(P, os.O_RDONLY)
s0 = os.fstat(fd)
for i in range(70000):
    d = os.open('/tmp', os.O_RDONLY | os.O_DIRECTORY); os.close(d)
    if i % 2 == 0:
        q = os.open('/proc/self/status', os.O_RDONLY); os.close(q)
s1 = os.fstat(fd)
print('same', (s0.st_ino, s0.st_uid, s0.st_mode) == (s1.st_ino, s1.st_uid, s1.st_mode))
print('uid', s1.st_uid, 'path', os.path.realpath('/proc/self/fd/%d' % fd))
try:
    os.utime(fd, (1, 1)); print('futimens OK')
except OSError as e:
    print('futimens', e.errno)
)";
  Outcome o = RunSampled(code, {"--timeout", "100"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  EXPECT_NE(o.stdout_text.find("same True"), std::string::npos) << Why(o);
  EXPECT_NE(o.stdout_text.find("uid 0 path /usr/bin/env"), std::string::npos) << Why(o);
  // The sandbox's answer (the guest, uid 1000, does not own the file), not
  // the host kernel's: a known object goes through the VFS.
  EXPECT_NE(o.stdout_text.find("futimens 1\n"), std::string::npos) << Why(o);
  HostStat after = StatOf(kLowerFile);
  EXPECT_EQ(after.ino, before.ino);
  EXPECT_EQ(after.mtime.tv_sec, before.mtime.tv_sec);
  EXPECT_EQ(after.mtime.tv_nsec, before.mtime.tv_nsec);
  EXPECT_NE(after.atime.tv_sec, 1);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// A donated fd the identity table forgot (it was in flight in a unix
// socket's queue, held by no task, when 9,000 fresh opens forced sweeps):
// every fd-based call on it is EBADF, never the host object's answer.
// Objects the guest made itself and its stdio still answer.
TEST(SentryBoundsTest, ForgottenDonatedFdFailsClosed) {
  HostStat before = StatOf(kLowerFile);
  std::string code = std::string("import os, socket, array\nP='") + kLowerFile + R"('
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
fd = os.open(P, os.O_RDONLY)
a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])
os.close(fd)
for i in range(9000):
    d = os.open('/tmp', os.O_RDONLY); os.close(d)
msg, anc, fl, ad = b.recvmsg(1, socket.CMSG_LEN(4))
g = array.array('i', anc[0][2])[0]
print('read', len(os.read(g, 4)))
for name, fn in [('fstat', lambda: os.fstat(g)), ('futimens', lambda: os.utime(g, (1, 1))),
                 ('fchmod', lambda: os.fchmod(g, 0o777)), ('fchown', lambda: os.fchown(g, 0, 0)),
                 ('fstatfs', lambda: os.fstatvfs(g)), ('fsetxattr', lambda: os.setxattr(g, 'user.x', b'1')),
                 ('fgetxattr', lambda: os.getxattr(g, 'user.x')), ('fchdir', lambda: os.fchdir(g)),
                 ('pipe', lambda: os.fstat(os.pipe()[0])), ('memfd', lambda: os.fstat(os.memfd_create('m'))),
                 ('eventfd', lambda: os.fstat(os.eventfd(0))), ('socket', lambda: os.fstat(a.fileno())),
                 ('stdin', lambda: os.fstat(0)), ('stdout', lambda: os.fstat(1))]:
    try:
        fn(); print(name, 'OK')
    except OSError as e:
        print(name, e.errno)
)";
  Outcome o = RunSampled(code, {"--timeout", "60"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  const std::string& out = o.stdout_text;
  EXPECT_NE(out.find("read 4\n"), std::string::npos) << Why(o);  // the data path stays native
  for (const char* call :
       {"fstat", "futimens", "fchmod", "fchown", "fstatfs", "fsetxattr", "fgetxattr", "fchdir"}) {
    EXPECT_NE(out.find(std::string(call) + " 9\n"), std::string::npos) << call << ": " << Why(o);
  }
  for (const char* own : {"pipe", "memfd", "eventfd", "socket", "stdin", "stdout"}) {
    EXPECT_NE(out.find(std::string(own) + " OK\n"), std::string::npos) << own << ": " << Why(o);
  }
  HostStat after = StatOf(kLowerFile);
  EXPECT_EQ(after.mtime.tv_sec, before.mtime.tv_sec);
  EXPECT_EQ(after.mtime.tv_nsec, before.mtime.tv_nsec);
  // The model is told why.
  bool hinted = false;
  for (const auto& d : o.denied) {
    if (Str(At(d, "hint")).find("no longer knows") != std::string::npos) hinted = true;
  }
  EXPECT_TRUE(hinted) << Why(o);
}

// More donated objects held at once than the sentry's table takes (32,768),
// by two processes (a host's hard RLIMIT_NOFILE may be as low as 20,000):
// the guest's open fails with ENFILE, the sentry stays up and bounded, and
// once the guest lets them go it can open again.
TEST(SentryBoundsTest, HoldingMoreThanTheCapIsEnfileForTheGuest) {
  std::string code = R"(import os, time
def hold(n):
    held = []
    try:
        for i in range(n): held.append(os.open('/tmp', os.O_RDONLY))
    except OSError as e:
        return held, e.errno
    return held, None
r, w = os.pipe()
kid = os.fork()
if kid == 0:
    held, err = hold(17000)
    os.write(w, b'%d' % len(held)); time.sleep(30); os._exit(0)
print('child held', os.read(r, 16).decode(), flush=True)
held, err = hold(17500)
print('parent held', len(held), 'err', err, flush=True)
os.kill(kid, 9); os.waitpid(kid, 0)
for f in held: os.close(f)
time.sleep(0.3)
f = os.open('/tmp', os.O_RDONLY); print('again', os.fstat(f).st_mode & 0o170000 == 0o040000)
)";
  Outcome o = RunSampled(code, {"--timeout", "100", "--nofile", "18000"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  EXPECT_NE(o.stdout_text.find("child held 17000"), std::string::npos) << Why(o);
  EXPECT_NE(o.stdout_text.find("err 23\n"), std::string::npos) << Why(o);  // ENFILE
  EXPECT_NE(o.stdout_text.find("again True"), std::string::npos) << Why(o);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// /proc files are memfds the sentry writes: their pages are charged to the
// sentry, not to the guest's cgroup. A process with 30,000 mappings makes a
// ~5 MB /proc/self/maps; holding 40 opens of it would be 200 MB outside the
// guest's --memory. Past 32 MiB held, the open fails with ENOMEM.
TEST(SentryBoundsTest, HeldProcTextIsBounded) {
  std::string code = R"(import mmap, ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
n = 60000
m = mmap.mmap(-1, 4096 * n)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
for i in range(0, n, 2):
    libc.mprotect(ctypes.c_void_p(base + 4096 * i), 4096, 1)
held, err = [], None
for i in range(40):
    try:
        held.append(os.open('/proc/self/maps', os.O_RDONLY))
    except OSError as e:
        err = e.errno; break
print('held', len(held), 'err', err, flush=True)
for f in held: os.close(f)
time.sleep(0.3)
print('again', len(os.read(os.open('/proc/self/maps', os.O_RDONLY), 100)) > 0)
)";
  Outcome o = RunSampled(code, {"--timeout", "60"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  EXPECT_NE(o.stdout_text.find("err 12\n"), std::string::npos) << Why(o);  // ENOMEM
  EXPECT_NE(o.stdout_text.find("again True"), std::string::npos) << Why(o);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// Found while auditing hole 5's "flock on donated host files": a lower-layer
// file is donated as the host's own file, so the guest's flock(LOCK_EX) (a
// native call) takes the lock on the host's inode, and a host process's
// flock(LOCK_EX|LOCK_NB) on that file then fails with EWOULDBLOCK (measured
// on c58f71f and on this branch). fcntl F_SETLK read locks reach the host the
// same way, and F_GETLK shows host lock holders' pids. The fix needs the
// table (flock and fcntl's lock commands trapped, answered on the guest's
// own file description for store files and emulated for lower ones), which
// this branch does not own: enable this test with that change.
TEST(SentryBoundsTest, DISABLED_GuestFlockOnALowerFileDoesNotReachTheHost) {
  std::string code = std::string("import os, fcntl, time\nfd = os.open('") + kLowerFile +
                     R"(', os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print('locked', flush=True)
time.sleep(3)
)";
  Child c = SpawnSentry({}, {"/usr/bin/python3", "-c", code});
  std::string seen = ReadUntil(c.out, "locked", 20);
  ASSERT_NE(seen.find("locked"), std::string::npos) << seen;
  int fd = open(kLowerFile, O_RDONLY | O_CLOEXEC);
  int rc = flock(fd, LOCK_EX | LOCK_NB);
  int err = errno;
  if (rc == 0) flock(fd, LOCK_UN);
  close(fd);
  Collect(c, 20);
  EXPECT_EQ(rc, 0) << "the guest's flock reached the host: " << strerror(err);
}

// 100,000 refused connects: the result lists the first 20, the sentry does
// not grow with the count.
TEST(SentryBoundsTest, HundredThousandDenialsStayCapped) {
  std::string code = R"(import socket
n = 0
for i in range(100000):
    s = socket.socket()
    try:
        s.connect(('10.%d.%d.%d' % (i >> 16 & 255, i >> 8 & 255, i & 255), 80))
    except OSError:
        n += 1
    s.close()
print('refused', n)
)";
  Outcome o = RunSampled(code, {"--timeout", "100"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  EXPECT_NE(o.stdout_text.find("refused 100000"), std::string::npos) << Why(o);
  EXPECT_LE(o.denied.size(), 20u);
  EXPECT_GE(o.denied.size(), 1u);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// 200 threads each block in a sendto with an address (trapped) towards a
// full unix datagram receiver: every one waits, on a fiber of the sentry's
// (base/fiber_loop.h), so the sentry's threads do not grow with them and its
// memory stays bounded (fibers are capped at FiberLoop::kMaxFibers, then
// EAGAIN).
TEST(SentryBoundsTest, BlockedSendsAreBounded) {
  std::string code = R"(import os, socket, threading, time
r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); r.bind('/tmp/r.sock')
w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); w.setblocking(False)
while True:
    try: w.sendto(b'x' * 1024, '/tmp/r.sock')
    except BlockingIOError: break
errs = {}
lock = threading.Lock()
def one():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.sendto(b'y' * 200000, '/tmp/r.sock'); k = 'sent'
    except OSError as e:
        k = e.errno
    with lock: errs[k] = errs.get(k, 0) + 1
ts = [threading.Thread(target=one, daemon=True) for _ in range(200)]
for t in ts: t.start()
time.sleep(3)
print('eagain', errs.get(11, 0), flush=True)
os._exit(0)
)";
  Outcome o = RunSampled(code, {"--timeout", "30", "--pids-limit", "256"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  size_t at = o.stdout_text.find("eagain ");
  ASSERT_NE(at, std::string::npos) << Why(o);
  EXPECT_EQ(std::stoi(o.stdout_text.substr(at + 7)), 0) << Why(o);  // all 200 wait
  EXPECT_LE(o.peak_threads, 24) << Why(o);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// The credentials proxy listens on the sandbox's own loopback, where the
// guest can reach it directly: 600 connections at once are served on fibers
// (a few threads of the sentry's, not one each), at most 512 of them; the
// rest are answered with a 503 and closed at once (RtParsers covers idle
// floods): this case adds the sentry's threads and RSS to the cap.
TEST(SentryBoundsTest, ProxyConnectionsAreBounded) {
  std::string code = R"(import socket, time
port = None
for p in range(1024, 65536):
    s = socket.socket()
    try:
        s.connect(('127.0.0.1', p))
        if s.getsockname()[1] != p:  # not a TCP self-connect
            port = p; s.close(); break
    except OSError:
        s.close()
print('port', port is not None, flush=True)
socks = []
for i in range(600):
    s = socket.socket(); s.connect(('127.0.0.1', port)); socks.append(s)
time.sleep(1)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        s.recv(1); closed += 1  # EOF or a 503: answered without waiting
    except BlockingIOError:
        pass
    except ConnectionResetError:
        closed += 1
print('closed', closed, flush=True)
)";
  setenv("SENTRY_BOUNDS_KEY", "k", 1);
  Outcome o = RunSampled(code, {"--timeout", "60", "--secret",
                                "http://api.test:9=Authorization:env:SENTRY_BOUNDS_KEY"});
  unsetenv("SENTRY_BOUNDS_KEY");
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  ASSERT_NE(o.stdout_text.find("port True"), std::string::npos) << Why(o);
  size_t at = o.stdout_text.find("closed ");
  ASSERT_NE(at, std::string::npos) << Why(o);
  EXPECT_GE(std::stoi(o.stdout_text.substr(at + 7)), 600 - 512) << Why(o);
  EXPECT_LE(o.peak_threads, 16) << Why(o);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// Outward connections (--allow-net) held at once: each costs the sentry an
// fd, so past 512 the guest's connect fails with EAGAIN.
TEST(SentryBoundsTest, HeldOutwardConnectionsAreBounded) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), len), 0);
  ASSERT_EQ(listen(l, 2048), 0);  // never accepted: the kernel's queue holds them
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  std::string port = std::to_string(ntohs(a.sin_port));
  std::string code = "import socket\nP = " + port + R"(
socks, errs = [], {}
for i in range(600):
    s = socket.socket()
    try:
        s.connect(('127.0.0.1', P)); socks.append(s)
    except OSError as e:
        errs[e.errno] = errs.get(e.errno, 0) + 1; s.close()
print('held', len(socks), 'errs', sorted(errs.items()), flush=True)
)";
  Outcome o = RunSampled(code, {"--timeout", "60", "--allow-net", "127.0.0.1:" + port,
                                "--unsafe-allow-private-address"});
  close(l);
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  EXPECT_NE(o.stdout_text.find("held 512 errs [(11, 88)]"), std::string::npos) << Why(o);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// Many tasks: 120 threads and 60 processes alive at once.
TEST(SentryBoundsTest, ManyTasksStayBounded) {
  std::string code = R"(import os, threading, time
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(120)]
for t in ts: t.start()
kids = []
for i in range(60):
    p = os.fork()
    if p == 0:
        time.sleep(2); os._exit(0)
    kids.append(p)
time.sleep(1)
ev.set()
for t in ts: t.join()
for p in kids: os.waitpid(p, 0)
print('done')
)";
  Outcome o = RunSampled(code, {"--timeout", "60", "--pids-limit", "256"});
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  EXPECT_NE(o.stdout_text.find("done"), std::string::npos) << Why(o);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb) << Why(o);
}

// The baseline, reported (not asserted beyond the cap) so a change that
// grows the sentry shows up in the log.
TEST(SentryBoundsTest, Baseline) {
  Outcome o = RunSampled("pass");
  ASSERT_EQ(o.run.exit_code, 0) << Why(o);
  std::printf("sentry baseline: peak RSS %ld kB, %ld threads\n", o.peak_rss_kb, o.peak_threads);
  EXPECT_LT(o.peak_rss_kb, kRssCapKb);
}

}  // namespace
}  // namespace sentry::limits
