// Red team: signals, process handles, rlimits and terminal state across the
// wall: what a guest can do to pid 1 of its sandbox, to the sentry, to host
// processes (which the seccomp-only sandbox can see), and to the caller's
// terminal.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/redteam_util.h"

namespace sentry::security {
namespace {

// A host process to aim at: `sleep`, as uid (or the test's own uid if -1).
class HostSleeper {
 public:
  explicit HostSleeper(uid_t uid) {
    pid_ = fork();
    if (pid_ == 0) {
      if (uid != static_cast<uid_t>(-1) && (setgid(uid) < 0 || setuid(uid) < 0)) _exit(126);
      execl("/bin/sleep", "sleep", "60", nullptr);
      _exit(127);
    }
    usleep(50 * 1000);
  }
  ~HostSleeper() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool Alive() const { return waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_;
};

constexpr const char* kSyscallHelper = R"PY(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    v = libc.syscall(*[ctypes.c_long(x) for x in a])
    if v < 0: raise OSError(ctypes.get_errno(), "")
    return v
)PY";

TEST(RtSignals, SignalsAndHandlesAimedAtPidOneLeaveTheRunStanding) {
  ProcessResult r = RunPy(std::string(kSyscallHelper) + R"PY(
import signal, resource
for s in (0, signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGSEGV):
    t("kill 1 %d" % s, lambda: os.kill(1, s))
t("tgkill 1", lambda: sc(234, 1, 1, 9))
info = ctypes.create_string_buffer(128)
ctypes.memmove(info, ctypes.byref(ctypes.c_int(9)), 4)
ctypes.memmove(ctypes.addressof(info) + 8, ctypes.byref(ctypes.c_int(-1)), 4)  # SI_QUEUE
t("rt_sigqueueinfo 1", lambda: sc(129, 1, 9, ctypes.addressof(info)))
t("pidfd_open 1", lambda: sc(434, 1, 0) >= 0)
def pidfd_kill():
    fd = sc(434, 1, 0)
    return sc(424, fd, 9, 0, 0)
t("pidfd_send_signal 1", pidfd_kill)
t("waitid pidfd 1", lambda: os.waitid(3, sc(434, 1, 0), os.WEXITED | os.WNOHANG))
t("prlimit 1", lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (0, 0)))
t("setpriority 1", lambda: os.setpriority(os.PRIO_PROCESS, 1, 19))
t("sched_setaffinity 1", lambda: os.sched_setaffinity(1, {0}))
t("ioprio_set 1", lambda: sc(251, 1, 1, (3 << 13)))
t("process_madvise 1", lambda: sc(440, sc(434, 1, 0), 0, 0, 8, 0))
t("kill -1 0", lambda: os.kill(-1, 0))
t("ppid", lambda: os.getppid())
import time; time.sleep(0.2)
print("alive=OK")
)PY");
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "alive"), "OK") << Describe(r);
  for (const char* n : {"kill 1 9", "kill 1 15", "kill 1 19", "kill 1 11", "tgkill 1",
                        "rt_sigqueueinfo 1", "pidfd_send_signal 1", "prlimit 1", "setpriority 1",
                        "sched_setaffinity 1", "ioprio_set 1"}) {
    std::string c = Code(res, n);
    EXPECT_TRUE(c == "EPERM" || c == "ESRCH" || c == "EACCES" || c == "ENOSYS")
        << n << "=" << res[n] << "\n"
        << Describe(r);
  }
  EXPECT_NE(Code(res, "process_madvise 1"), "OK");
}

// Seccomp-only sandboxes see host pids: every call that names a process must
// still stop at the host uid boundary (a host process of another uid, the
// sentry, the loader).
TEST(RtSignals, HostProcessesAreOutOfReachWithoutAPidNamespace) {
  HostSleeper other(65534);
  HostSleeper same_as_sentry(static_cast<uid_t>(-1));
  std::string pids = "[" + std::to_string(other.pid()) + ", " +
                     std::to_string(same_as_sentry.pid()) + ", os.getppid()]";
  ProcessResult r = RunPy(std::string(kSyscallHelper) + "pids = " + pids + R"PY(
import resource
for p in pids:
    t("kill0 %d" % p, lambda: os.kill(p, 0))
    t("kill9 %d" % p, lambda: os.kill(p, 9))
    t("pidfd %d" % p, lambda: sc(424, sc(434, p, 0), 9, 0, 0))
    t("prlimit %d" % p, lambda: resource.prlimit(p, resource.RLIMIT_NOFILE, (0, 0)))
    t("setpriority %d" % p, lambda: os.setpriority(os.PRIO_PROCESS, p, 19))
    t("affinity %d" % p, lambda: os.sched_setaffinity(p, {0}))
    t("ioprio %d" % p, lambda: sc(251, 1, p, (3 << 13)))
    t("robust %d" % p, lambda: sc(274, p, 0, 0))
print("done=OK")
)PY",
                          {"--no-namespaces"});
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "done"), "OK") << Describe(r);
  for (const auto& [name, value] : res) {
    if (name == "done") continue;
    EXPECT_NE(Code(res, name), "OK") << name << "=" << value;
  }
  EXPECT_TRUE(other.Alive());
  EXPECT_TRUE(same_as_sentry.Alive());
}

TEST(RtSignals, SigioOwnershipOfSharedStdioSignalsNoHostProcess) {
  HostSleeper target(static_cast<uid_t>(-1));
  ProcessResult r = RunRtProbe({"fsetown", std::to_string(target.pid())});
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "write"), "<missing>") << Describe(r);
  if (!SeccompOnly()) {
    EXPECT_EQ(Code(res, "F_SETOWN 1 host"), "ESRCH") << Describe(r);
    EXPECT_EQ(Code(res, "kill host"), "ESRCH") << Describe(r);
  }
  EXPECT_EQ(Code(res, "O_ASYNC 1"), "OK") << Describe(r);  // the armed path was reached
  usleep(100 * 1000);
  EXPECT_TRUE(target.Alive()) << "SIGIO (as SIGKILL) from the guest's stdio reached the host";
}

TEST(RtSignals, RlimitGamesStayInsideTheGuest) {
  ProcessResult r = RunPy(R"PY(
import resource, signal
t("raise nofile hard", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20)))
t("raise nproc hard", lambda: resource.setrlimit(resource.RLIMIT_NPROC, (1 << 20, 1 << 20)))
t("raise memlock", lambda: resource.setrlimit(resource.RLIMIT_MEMLOCK, (1 << 40, 1 << 40)))
t("raise rtprio", lambda: resource.setrlimit(resource.RLIMIT_RTPRIO, (99, 99)))
t("sched fifo", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50)))
t("nice -20", lambda: os.setpriority(os.PRIO_PROCESS, 0, -20))
pid = os.fork()
if pid == 0:
    # A child with almost no fds left: trapped opens must fail cleanly.
    resource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))
    try:
        os.open("/usr/bin/env", os.O_RDONLY); os._exit(10)
    except OSError as e:
        os._exit(20 if e.errno == errno.EMFILE else 30)
_, st = os.waitpid(pid, 0)
print("nofile 3 child=OK", os.WEXITSTATUS(st))
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        fd = os.open("/tmp/big", os.O_CREAT | os.O_WRONLY)
        os.write(fd, b"x" * 10); os.write(fd, b"x" * 90); os._exit(10)
    except OSError as e:
        os._exit(20 if e.errno == errno.EFBIG else 30)
_, st = os.waitpid(pid, 0)
print("fsize child=OK", os.WEXITSTATUS(st))
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_CPU, (1, 1))
    while True: pass
_, st = os.waitpid(pid, 0)
print("cpu child=OK", os.WTERMSIG(st) if os.WIFSIGNALED(st) else -1)
t("after", lambda: os.stat("/usr").st_mode != 0)
)PY");
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "after"), "OK") << Describe(r);
  for (const char* n : {"raise nofile hard", "raise nproc hard", "raise memlock", "raise rtprio",
                        "sched fifo", "nice -20"}) {
    std::string c = Code(res, n);
    EXPECT_TRUE(c == "EPERM" || c == "EACCES" || c == "EXC") << n << "=" << res[n];
  }
  EXPECT_EQ(Value(res, "nofile 3 child"), "20") << Describe(r);  // EMFILE, not a sentry error
  EXPECT_EQ(Value(res, "fsize child"), "20") << Describe(r);
  std::string cpu = Value(res, "cpu child");
  EXPECT_TRUE(cpu == "24" || cpu == "9") << cpu;  // SIGXCPU, or SIGKILL at the hard limit
}

TEST(RtSignals, KillMinusOneWithoutAPidNamespaceStaysWithTheRunsUid) {
  HostSleeper other(65534);
  HostSleeper same_as_sentry(static_cast<uid_t>(-1));
  ProcessResult r = RunPy(R"PY(
import signal, time
for i in range(3):
    if os.fork() == 0:
        time.sleep(30); os._exit(0)
print("forked=OK", flush=True)
os.kill(-1, signal.SIGKILL)
time.sleep(1)
print("survived=OK", flush=True)
)PY",
                          {"--no-namespaces", "--timeout", "20"}, 30);
  EXPECT_FALSE(r.timed_out) << "the run waited on killed children";
  EXPECT_EQ(Code(ParseResults(r.out), "forked"), "OK") << Describe(r);
  EXPECT_TRUE(other.Alive()) << "kill(-1) reached a host process of uid 65534";
  EXPECT_TRUE(same_as_sentry.Alive()) << "kill(-1) reached a host process of the sentry's uid";
}

// Every guest process stops itself: the tracer sees group stops only, and
// the wall-clock timeout must still end the run and leave nothing behind.
TEST(RtSignals, StoppedGuestsStillEndAtTheTimeout) {
  std::string marker = "rt-stopped-" + RandomToken(8);
  double t0 = static_cast<double>(time(nullptr));
  ProcessResult r = RunPy("marker = " + PyQuote(marker) + R"PY(
import signal, time
for i in range(3):
    if os.fork() == 0:
        os.execv("/usr/bin/python3", ["python3", "-c", "import time; time.sleep(1000)", marker])
time.sleep(0.3)
print("stopping=OK", flush=True)
os.kill(0, signal.SIGSTOP)
os.kill(-1, signal.SIGSTOP)
)PY",
                          {"--timeout", "2"}, 30);
  double took = static_cast<double>(time(nullptr)) - t0;
  ASSERT_EQ(Code(ParseResults(r.out), "stopping"), "OK") << Describe(r);
  EXPECT_GE(took, 1) << "the guest did not stop: " << Describe(r);
  EXPECT_LT(took, 20) << Describe(r);
  EXPECT_FALSE(r.timed_out) << Describe(r);
  usleep(300 * 1000);
  EXPECT_TRUE(ProcessesWithCmdline(marker).empty()) << "a stopped guest survives the run";
  EXPECT_EQ(r.exit_code, 124) << Describe(r);  // ended by the timeout, not by the guest
  for (pid_t p : ProcessesWithCmdline(marker)) kill(p, SIGKILL);
}

// HOST INFLUENCE: a terminal on stdio is handed to the guest as it is, and
// the table lets TCSETS/TIOCSWINSZ/TCXONC through (terminal programs need
// them); nothing puts the caller's terminal back after the run.
// Reproduction: `sentry run -- python3 -c "import termios;a=termios.tcgetattr(0);
// a[3]&=~termios.ECHO;termios.tcsetattr(0,0,a)"` in a shell: echo stays off.
TEST(RtSignals, TheCallersTerminalIsLeftAsItWasFound) {
  int master, slave;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  termios before{};
  winsize ws_before{24, 80, 0, 0};
  ioctl(slave, TIOCSWINSZ, &ws_before);
  tcgetattr(slave, &before);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  std::vector<std::string> argv = SentryArgv({}, {"/usr/bin/python3", "-c", R"PY(
import fcntl, os, struct, sys, termios
if not os.isatty(0):
    print("no terminal")  # without namespaces: stdio are relayed pipes
    sys.exit(0)
a = termios.tcgetattr(0)
a[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG)
termios.tcsetattr(0, termios.TCSANOW, a)
fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 3, 3, 0, 0))
termios.tcflow(0, termios.TCOOFF)
print("changed")
)PY"});
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(master);
    std::vector<char*> a;
    for (std::string& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  close(out[1]);
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
  close(out[0]);
  waitpid(pid, nullptr, 0);
  termios after{};
  winsize ws_after{};
  tcgetattr(slave, &after);
  ioctl(slave, TIOCGWINSZ, &ws_after);
  tcflow(slave, TCOON);
  close(slave);
  close(master);
  // The guest reached its ioctls (on its own pty), or had no terminal to
  // reach at all (without namespaces its stdio are pipes the sentry relays).
  ASSERT_TRUE(got.find("changed") != std::string::npos ||
              got.find("no terminal") != std::string::npos)
      << got;
  EXPECT_EQ(after.c_lflag, before.c_lflag) << "echo/canonical mode left off";
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
  EXPECT_EQ(after.c_cflag, before.c_cflag);
  EXPECT_EQ(std::memcmp(after.c_cc, before.c_cc, sizeof(before.c_cc)), 0);
  if (ws_after.ws_row != ws_before.ws_row) {
    std::printf("note: the guest's window size (%dx%d) stays until the terminal's next resize\n",
                ws_after.ws_row, ws_after.ws_col);
  }
}

}  // namespace
}  // namespace sentry::security
