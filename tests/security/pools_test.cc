// Availability: a guest that takes all it may of the kernel's per-user and
// host-wide pools leaves the host's root and a second sandbox their own
// (DESIGN.md, "the rule of the pools"; tests/security/README.md,
// "Availability"). Each pool as the red team took it: inotify_init1 until
// EMFILE, mq_open of 80 KB queues, sigqueue until EAGAIN, io_setup until
// EAGAIN, /dev/ptmx until it fails, pipes of 1 MiB. And who the kernel
// charges: the guest's user namespace is made by the sandbox's own block of
// host ids, not by root, and two sandboxes hold disjoint blocks.
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

constexpr long kFirstSlotId = 2016777216;  // sentry/run/spawn.h
constexpr long kIdsPerSlot = 64;

// The guest that takes every pool; prints its counts (name=N lines), then "ready", then
// holds everything until its stdin closes.
constexpr const char* kHog = R"PY(
import ctypes, fcntl, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
held, counts = [], {}
n = 0
while n < 10000:
    fd = libc.inotify_init1(0)
    if fd < 0: break
    held.append(fd); n += 1
counts['inotify'] = n
class Attr(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_long), ('maxmsg', ctypes.c_long),
                ('msgsize', ctypes.c_long), ('curmsgs', ctypes.c_long), ('pad', ctypes.c_long * 4)]
n = 0
for i in range(64):
    a = Attr(0, 10, 8192, 0)
    fd = libc.syscall(240, ('hog%d' % i).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
    if fd < 0: break
    held.append(fd); n += 1
counts['mqueue'] = n
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n = 0
while n < 200000:
    if libc.sigqueue(os.getpid(), signal.SIGRTMIN, 1) < 0: break
    n += 1
counts['sigqueue'] = n
n, size = 0, 65536
while size >= 1 and n < 1 << 20:
    ctx = ctypes.c_ulong(0)
    if libc.syscall(206, size, ctypes.byref(ctx)) < 0: size //= 2
    else: n += size
counts['aio_events'] = n
n = 0
while n < 256:
    try:
        r, w = os.pipe(); held += [r, w]
        fcntl.fcntl(w, 1031, 1 << 20); n += 1
    except OSError: break
counts['pipe_1m'] = n
n = 0
while n < 5000:
    try: held.append(os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY)); n += 1
    except OSError: break
counts['pty'] = n
for kv in counts.items(): print('%s=%d' % kv, flush=True)
print('ready', flush=True)
sys.stdin.read()
)PY";

// What the host's root and a second sandbox must still be able to make, as
// "name=OK"/"name=ERRNO" lines.
constexpr const char* kVictim = R"PY(
import ctypes, errno, fcntl, os, signal
libc = ctypes.CDLL(None, use_errno=True)
def t(name, f):
    try: f(); print(name + '=OK', flush=True)
    except OSError as e: print(name + '=' + errno.errorcode.get(e.errno, str(e.errno)), flush=True)
def chk(r):
    if r < 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    return r
def inotify(): os.close(chk(libc.inotify_init1(0)))
class Attr(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_long), ('maxmsg', ctypes.c_long),
                ('msgsize', ctypes.c_long), ('curmsgs', ctypes.c_long), ('pad', ctypes.c_long * 4)]
def mq():
    name = ('sentry-pools-victim-%d' % os.getpid()).encode()
    a = Attr(0, 10, 8192, 0)
    fd = chk(libc.syscall(240, name, os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a)))
    libc.syscall(241, name); os.close(fd)
def sig():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN + 1])
    chk(libc.sigqueue(os.getpid(), signal.SIGRTMIN + 1, 1))
    signal.sigtimedwait([signal.SIGRTMIN + 1], 1)
def aio():
    ctx = ctypes.c_ulong(0)
    chk(libc.syscall(206, 1, ctypes.byref(ctx))); libc.syscall(207, ctx)
def pty(): os.close(os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY))
def pipe_1m():
    r, w = os.pipe()
    try: fcntl.fcntl(w, 1031, 1 << 20)
    finally: os.close(r); os.close(w)
for name, f in [('inotify', inotify), ('mqueue', mq), ('sigqueue', sig), ('aio', aio),
                ('pty', pty), ('pipe_1m', pipe_1m)]:
    t(name, f)
)PY";

// A sentry running the hog, its stdin and stdout held by the test.
class Hog {
 public:
  explicit Hog(const std::string& marker) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) std::abort();
    std::vector<std::string> argv = sentry::testing::SentryRunArgv(
        {"--timeout", "120", "-i"}, {"/usr/bin/python3", "-c", kHog, marker});
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  ~Hog() { Finish(); }

  // Reads the hog's output until "ready" (or 60 s); returns its counts line.
  std::string AwaitReady() {
    std::string got;
    char buf[4096];
    for (int waited = 0; waited < 600 && got.find("ready\n") == std::string::npos; ++waited) {
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      ssize_t n = read(stdout_, buf, sizeof(buf));
      if (n <= 0) break;
      got.append(buf, n);
    }
    return got;
  }
  pid_t pid() const { return pid_; }
  // Closes its stdin and waits for the sentry.
  void Finish() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
    if (pid_ > 0) {
      for (int i = 0; i < 300 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(100000);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    if (stdout_ >= 0) close(stdout_);
    stdout_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
};

long StatusUid(pid_t pid) {
  auto status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  if (!status) return -1;
  size_t at = status->find("Uid:\t");
  return at == std::string::npos ? -1 : std::atol(status->c_str() + at + 5);
}

// The host pid of the hog's guest (its python, with the marker in argv).
pid_t GuestOf(const std::string& marker) {
  for (int i = 0; i < 100; ++i) {
    for (pid_t pid : ProcessesWithCmdline(marker)) {
      auto cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
      if (cmd && cmd->rfind("/usr/bin/python3", 0) == 0) return pid;
    }
    usleep(50000);
  }
  return -1;
}

// The host uid that owns a process's user namespace (NS_GET_OWNER_UID).
long NamespaceOwner(pid_t pid) {
  int fd = open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  uid_t owner = 0;
  int r = ioctl(fd, NS_GET_OWNER_UID, &owner);
  close(fd);
  return r < 0 ? -1 : static_cast<long>(owner);
}

std::string LockPath(long slot) {
  for (const char* dir : {"/run/sentry/ids/", "/dev/shm/sentry-ids/"}) {
    std::string path = dir + std::to_string(slot) + ".lock";
    if (access(path.c_str(), F_OK) == 0) return path;
  }
  return "";
}

// Whether nobody holds slot's lock (tried for up to 3 s; the test's own
// probe lock is dropped at once).
bool SlotFree(long slot) {
  std::string path = LockPath(slot);
  if (path.empty()) return false;
  for (int i = 0; i < 30; ++i) {
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    if (free) return true;
    usleep(100000);
  }
  return false;
}

// The checks a victim must pass while the hog holds its pools.
void ExpectVictimUnharmed(const std::string& who, const ProcessResult& r, bool sandboxed) {
  Results got = ParseResults(r.out);
  for (const char* pool : {"inotify", "mqueue", "sigqueue", "aio", "pty", "pipe_1m"}) {
    // Without namespaces a guest has no POSIX queues and no devpts of its own.
    if (sandboxed && SeccompOnly() &&
        (std::string(pool) == "mqueue" || std::string(pool) == "pty")) {
      continue;
    }
    EXPECT_EQ(Code(got, pool), "OK") << who << ": " << pool << "\n" << Describe(r);
  }
}

TEST(Pools, AGuestThatTakesAllItMayLeavesTheHostAndASecondSandboxTheirOwn) {
  const std::string marker = "pools-hog-" + RandomToken(8);
  Hog hog(marker);
  std::string counts = hog.AwaitReady();
  ASSERT_NE(counts.find("ready"), std::string::npos) << counts;
  Results held = ParseResults(counts);
  std::cout << "the hog holds: " << counts;
  // Each pool is capped at the sandbox's share (loader/pool_caps.h).
  EXPECT_LE(std::atol(held["inotify"].c_str()), SeccompOnly() ? 128 : 32) << counts;
  EXPECT_LE(std::atol(held["sigqueue"].c_str()), 2048) << counts;
  EXPECT_LE(std::atol(held["aio_events"].c_str()), 65536 / 64) << counts;
  if (!SeccompOnly()) {
    EXPECT_LE(std::atol(held["mqueue"].c_str()), 3) << counts;  // 256 KiB of 80 KB queues
    EXPECT_LE(std::atol(held["pty"].c_str()), 48) << counts;
  }
  EXPECT_GE(std::atol(held["inotify"].c_str()), 1) << counts;
  EXPECT_GE(std::atol(held["pipe_1m"].c_str()), 1) << counts;

  ProcessResult host = sentry::testing::RunProcess({"/usr/bin/python3", "-c", kVictim});
  ExpectVictimUnharmed("the host's root", host, /*sandboxed=*/false);
  ProcessResult second = sentry::testing::RunSentry({}, {"/usr/bin/python3", "-c", kVictim});
  ExpectVictimUnharmed("a second sandbox", second, /*sandboxed=*/true);
  hog.Finish();
}

// The AIO share is the events the sandbox's contexts hold now: io_destroy
// and the exit of a process give them back.
TEST(Pools, TheAioShareComesBackAfterIoDestroyAndExit) {
  ProcessResult r = RunPy(R"PY(
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
def setup():
    c = ctypes.c_ulong(0)
    return c.value if libc.syscall(206, 1, ctypes.byref(c)) == 0 else None
ctxs = []
while len(ctxs) < 100000:
    c = setup()
    if c is None: break
    ctxs.append(c)
t("held", lambda: len(ctxs))
t("past_share", lambda: setup())
for c in ctxs: libc.syscall(207, ctypes.c_ulong(c))
time.sleep(0.15)
t("after_destroy", lambda: setup() is not None)
pid = os.fork()
if pid == 0:
    while setup() is not None: pass
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.15)
t("after_exit", lambda: setup() is not None)
)PY");
  Results got = ParseResults(r.out);
  long held = std::atol(Value(got, "held").c_str());
  EXPECT_GE(held, 1) << Describe(r);
  EXPECT_LE(held, 65536 / 64) << Describe(r);
  EXPECT_EQ(Value(got, "past_share"), "None") << Describe(r);
  EXPECT_EQ(Value(got, "after_destroy"), "True") << Describe(r);
  EXPECT_EQ(Value(got, "after_exit"), "True") << Describe(r);
}

// inotify watches are added by the sentry (sys_inotify.cc) on the guest's own
// instance, and the kernel charges a watch to the instance's owner (the
// ucounts do_inotify_init took: the guest's uid in the sandbox's user
// namespace), not to the thread that adds it: past the namespace's
// max_inotify_watches the guest's call is ENOSPC, as natively.
TEST(Pools, InotifyWatchesStopAtTheSandboxsShare) {
  if (SeccompOnly()) GTEST_SKIP() << "charged to the run's own host uid there";
  ProcessResult r = RunPy(R"PY(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
os.mkdir('/tmp/w')
n, err = 0, 0
while n < 9000:
    p = b'/tmp/w/%d' % n
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY))
    if libc.inotify_add_watch(fd, p, 2) < 0:
        err = ctypes.get_errno()
        break
    n += 1
t("held", lambda: n)
t("err", lambda: errno.errorcode.get(err, err))
)PY");
  Results got = ParseResults(r.out);
  EXPECT_EQ(Value(got, "held"), "8192") << Describe(r);
  EXPECT_EQ(Value(got, "err"), "'ENOSPC'") << Describe(r);
}

TEST(Pools, TheUserNamespaceIsMadeByTheSandboxsOwnIdsAndTwoSandboxesShareNone) {
  if (SeccompOnly()) GTEST_SKIP() << "no user namespace without namespaces";
  if (geteuid() != 0) GTEST_SKIP() << "root's sandboxes take id slots";
  const std::string a_marker = "pools-a-" + RandomToken(8), b_marker = "pools-b-" + RandomToken(8);
  Hog a(a_marker), b(b_marker);
  ASSERT_NE(a.AwaitReady().find("ready"), std::string::npos);
  ASSERT_NE(b.AwaitReady().find("ready"), std::string::npos);
  pid_t ga = GuestOf(a_marker), gb = GuestOf(b_marker);
  ASSERT_GT(ga, 0);
  ASSERT_GT(gb, 0);
  long ua = StatusUid(ga), ub = StatusUid(gb);
  // The guest user is the block's second id; its first made the namespace.
  ASSERT_GE(ua, kFirstSlotId);
  ASSERT_GE(ub, kFirstSlotId);
  EXPECT_EQ((ua - kFirstSlotId) % kIdsPerSlot, 1);
  EXPECT_EQ(NamespaceOwner(ga), ua - 1);
  EXPECT_EQ(NamespaceOwner(gb), ub - 1);
  EXPECT_NE(NamespaceOwner(ga), 0);
  long slot_a = (ua - kFirstSlotId) / kIdsPerSlot, slot_b = (ub - kFirstSlotId) / kIdsPerSlot;
  EXPECT_NE(slot_a, slot_b);
  EXPECT_FALSE(SlotFree(slot_a));
  // Free again after an ordinary end, and after the sentry is killed.
  a.Finish();
  EXPECT_TRUE(SlotFree(slot_a)) << slot_a;
  kill(b.pid(), SIGKILL);
  b.Finish();
  EXPECT_TRUE(SlotFree(slot_b)) << slot_b;
}

}  // namespace
}  // namespace sentry::security
