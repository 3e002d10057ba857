// The guest's terminal, through a real pty: the test is the user's terminal
// (it holds the master of a pty whose slave is sentry's stdin, stdout and
// stderr, as a shell's terminal would be) and types into it.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

double NowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// `sentry run FLAGS -- CMD` on a fresh pty of the test's, as a shell starts a
// job: its session's controlling terminal, its foreground process group.
class TerminalRun final {
 public:
  TerminalRun(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
              winsize size = {24, 80, 0, 0}) {
    std::vector<std::string> argv = {SentryBinary(), "run", "--timeout", "20"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      execv(args[0], args.data());
      _exit(127);
    }
    if (master_ >= 0) tcgetattr(master_, &before_);
  }
  ~TerminalRun() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  TerminalRun(const TerminalRun&) = delete;
  TerminalRun& operator=(const TerminalRun&) = delete;

  // Reads until the output past `from` holds text (true) or timeout_sec
  // passes.
  bool WaitFor(const std::string& text, double timeout_sec = 10, size_t from = 0) {
    double deadline = NowSec() + timeout_sec;
    while (out_.find(text, from) == std::string::npos) {
      if (!ReadSome(deadline)) return false;
    }
    return true;
  }
  void Type(const std::string& keys) {
    ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  // Reads to the end and returns sentry's exit code (-1: it did not end).
  int Wait(double timeout_sec = 20) {
    double deadline = NowSec() + timeout_sec;
    while (ReadSome(deadline)) {
    }
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (NowSec() > deadline) return -1;
      usleep(10000);
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // The test's terminal now (the slave's settings, read through the master).
  termios Settings() const {
    termios t{};
    tcgetattr(master_, &t);
    return t;
  }
  const termios& before() const { return before_; }
  winsize Size() const {
    winsize ws{};
    ioctl(master_, TIOCGWINSZ, &ws);
    return ws;
  }
  void Resize(unsigned short rows, unsigned short cols) {
    winsize ws{rows, cols, 0, 0};
    // On the master, as a terminal emulator does: the kernel sends SIGWINCH
    // to the terminal's foreground group (sentry).
    ioctl(master_, TIOCSWINSZ, &ws);
  }
  const std::string& out() const { return out_; }
  void Signal(int signo) { kill(pid_, signo); }
  pid_t pid() const { return pid_; }

 private:
  bool ReadSome(double deadline) {
    int left = static_cast<int>((deadline - NowSec()) * 1000);
    if (left <= 0) return false;
    pollfd p{master_, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) return false;
    char buf[4096];
    ssize_t n = read(master_, buf, sizeof(buf));
    if (n <= 0) return false;  // EIO: every slave closed
    out_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int master_ = -1;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_;
  termios before_{};
};

bool SameSettings(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag &&
         a.c_lflag == b.c_lflag && std::memcmp(a.c_cc, b.c_cc, sizeof(a.c_cc)) == 0;
}

constexpr const char* kPython = "/usr/bin/python3";

TEST(TerminalTest, TheGuestHasATerminalOfItsOwn) {
  TerminalRun run({}, {kPython, "-c",
                       "import os, sys\n"
                       "print('tty', [os.isatty(i) for i in range(3)], os.ttyname(0))\n"
                       "print('leader', os.getsid(0) == os.getpid(),"
                       " os.tcgetpgrp(0) == os.getpgrp())\n"
                       "print('term', os.environ.get('TERM'))\n"});
  int code = run.Wait();
  ASSERT_EQ(code, 0) << run.out();
  EXPECT_NE(run.out().find("tty [True, True, True] /dev/pts/0"), std::string::npos) << run.out();
  EXPECT_NE(run.out().find("leader True True"), std::string::npos) << run.out();
  EXPECT_EQ(run.out().find("term None"), std::string::npos) << run.out();
  // tty(1) names it as a login shell's would.
  TerminalRun tty({}, {"/usr/bin/tty"});
  EXPECT_EQ(tty.Wait(), 0);
  EXPECT_EQ(tty.out(), "/dev/pts/0\r\n");
}

TEST(TerminalTest, RedirectedStreamsStayPlain) {
  // stdout a pipe, stdin and stderr the terminal: isatty answers as natively.
  TerminalRun run({}, {"/bin/sh", "-c",
                       "/usr/bin/python3 -c 'import os; print([os.isatty(i) for i in range(3)])'"
                       " | /bin/cat"});
  ASSERT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("[True, False, True]"), std::string::npos) << run.out();
  TerminalRun off({"--no-tty"},
                  {kPython, "-c", "import os; print([os.isatty(i) for i in range(3)])"});
  ASSERT_EQ(off.Wait(), 0) << off.out();
  EXPECT_NE(off.out().find("[False, False, False]"), std::string::npos) << off.out();
}

TEST(TerminalTest, WithoutNamespacesTheStreamsAreRelayedPipes) {
  // No devpts of the sandbox's own: no terminal for the guest, and still
  // never the caller's; -t is refused.
  TerminalRun run(
      {"--no-namespaces"},
      {kPython, "-c", "print([__import__('os').isatty(i) for i in range(3)], input())"});
  ASSERT_TRUE(run.WaitFor("notice: no namespaces")) << run.out();
  run.Type("typed\n");
  ASSERT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("[False, False, False] typed"), std::string::npos) << run.out();
  TerminalRun forced({"--no-namespaces", "-t"}, {"/bin/true"});
  EXPECT_EQ(forced.Wait(), 125) << forced.out();
  EXPECT_NE(forced.out().find("-t needs the sandbox's own devpts"), std::string::npos)
      << forced.out();
}

TEST(TerminalTest, CtrlCReachesAGuestThatTrapsItAndTheRunGoesOn) {
  TerminalRun run({}, {kPython, "-c",
                       "import signal, sys\n"
                       "n = []\n"
                       "signal.signal(signal.SIGINT, lambda *a: n.append(1))\n"
                       "print('ready', flush=True)\n"
                       "while len(n) < 2: signal.pause()\n"
                       "print('caught', len(n))\n"
                       "sys.exit(3)\n"});
  ASSERT_TRUE(run.WaitFor("ready")) << run.out();
  run.Type("\x03");
  usleep(200 * 1000);
  run.Type("\x03");
  EXPECT_EQ(run.Wait(), 3) << run.out();
  EXPECT_NE(run.out().find("caught 2"), std::string::npos) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

TEST(TerminalTest, CtrlCEndsAGuestThatDoesNotTrapIt) {
  TerminalRun run({}, {kPython, "-c",
                       "import time\n"
                       "print('ready', flush=True)\n"
                       "time.sleep(15)\n"});
  ASSERT_TRUE(run.WaitFor("ready")) << run.out();
  run.Type("\x03");
  EXPECT_EQ(run.Wait(), 128 + SIGINT) << run.out();
  EXPECT_NE(run.out().find("KeyboardInterrupt"), std::string::npos) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

TEST(TerminalTest, WithoutATerminalCtrlCIsPassedOnAndTheRunGoesOn) {
  // --no-tty: the test's terminal stays cooked, so Ctrl-C signals sentry's
  // group; sentry passes SIGINT to the guest's, and waits for the guest.
  TerminalRun run({"--no-tty"}, {kPython, "-c",
                                 "import signal, sys\n"
                                 "n = []\n"
                                 "signal.signal(signal.SIGINT, lambda *a: n.append(1))\n"
                                 "print('ready', flush=True)\n"
                                 "while len(n) < 3: signal.pause()\n"
                                 "print('caught', len(n), flush=True)\n"});
  ASSERT_TRUE(run.WaitFor("ready")) << run.out();
  for (int i = 0; i < 3; ++i) {
    run.Type("\x03");
    usleep(300 * 1000);
  }
  EXPECT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("caught 3"), std::string::npos) << run.out();
}

TEST(TerminalTest, WindowSizeFollowsTheCallersTerminal) {
  TerminalRun run({},
                  {kPython, "-c",
                   "import os, signal\n"
                   "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])\n"
                   "print('size', os.get_terminal_size(), flush=True)\n"
                   "signal.sigwait([signal.SIGWINCH])\n"
                   "print('resized', os.get_terminal_size(), flush=True)\n"
                   "print('stty', os.popen('stty size').read(), flush=True)\n"},
                  {30, 100, 0, 0});
  ASSERT_TRUE(run.WaitFor("size")) << run.out();
  EXPECT_NE(run.out().find("columns=100, lines=30"), std::string::npos) << run.out();
  run.Resize(40, 120);
  EXPECT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("resized os.terminal_size(columns=120, lines=40)"), std::string::npos)
      << run.out();
  EXPECT_NE(run.out().find("stty 40 120"), std::string::npos) << run.out();
}

TEST(TerminalTest, RawModeRoundTrip) {
  TerminalRun run({}, {kPython, "-c",
                       "import os, sys, termios, tty\n"
                       "saved = termios.tcgetattr(0)\n"
                       "tty.setraw(0)\n"
                       "print('raw', end='\\r\\n', flush=True)\n"
                       "got = b''\n"
                       "while len(got) < 4: got += os.read(0, 4 - len(got))\n"
                       "termios.tcsetattr(0, termios.TCSANOW, saved)\n"
                       "print('got', got)\n"});
  ASSERT_TRUE(run.WaitFor("raw")) << run.out();
  // Ctrl-C and Ctrl-Z are bytes in raw mode, not signals.
  run.Type(std::string("a\x03\x1a\r", 4));
  EXPECT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("got b'a\\x03\\x1a\\r'"), std::string::npos) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

TEST(TerminalTest, JobControlInAnInteractiveShell) {
  TerminalRun run({}, {"/bin/bash", "--norc", "--noprofile", "-i"});
  ASSERT_TRUE(run.WaitFor("$ ")) << run.out();
  run.Type("sleep 30\r");
  ASSERT_TRUE(run.WaitFor("sleep 30\r\n")) << run.out();
  usleep(300 * 1000);
  run.Type("\x1a");  // Ctrl-Z
  ASSERT_TRUE(run.WaitFor("Stopped")) << run.out();
  size_t typed = run.out().size();
  run.Type("fg\r");
  ASSERT_TRUE(run.WaitFor("sleep 30", 10, typed)) << run.out();
  usleep(300 * 1000);
  run.Type("\x03");
  run.Type("echo status=$?; exit\r");
  EXPECT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("status=130"), std::string::npos) << run.out();
}

TEST(TerminalTest, ACursesProgramRuns) {
  TerminalRun run({},
                  {kPython, "-c",
                   "import curses\n"
                   "def main(w):\n"
                   "    h, wd = w.getmaxyx()\n"
                   "    w.addstr(0, 0, 'curses %dx%d' % (h, wd))\n"
                   "    w.refresh()\n"
                   "    return w.getkey()\n"
                   "print('key', curses.wrapper(main))\n"},
                  {20, 70, 0, 0});
  ASSERT_TRUE(run.WaitFor("curses 20x70")) << run.out();
  run.Type("q");
  EXPECT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("key q"), std::string::npos) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

TEST(TerminalTest, TheCallersTerminalIsRestoredWhenTheTimeoutKillsTheGuest) {
  TerminalRun run({"--timeout", "1"}, {kPython, "-c",
                                       "import time, tty\n"
                                       "tty.setraw(0)\n"
                                       "print('raw', flush=True)\n"
                                       "time.sleep(30)\n"});
  ASSERT_TRUE(run.WaitFor("raw")) << run.out();
  EXPECT_EQ(run.Wait(), 124) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

TEST(TerminalTest, SignalsToSentry) {
  // SIGINT to sentry (kill, not a key): to the terminal's foreground group,
  // and the run goes on; SIGTERM: to the guest, and the sandbox ends after
  // the grace (this guest ignores it). The caller's terminal is restored.
  TerminalRun run({}, {kPython, "-c",
                       "import signal, time\n"
                       "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       "got = []\n"
                       "signal.signal(signal.SIGINT, lambda *a: got.append(1))\n"
                       "print('ready', flush=True)\n"
                       "while True:\n"
                       "    time.sleep(0.05)\n"
                       "    if got: print('sigint', flush=True); got.clear()\n"});
  ASSERT_TRUE(run.WaitFor("ready")) << run.out();
  EXPECT_FALSE(SameSettings(run.Settings(), run.before())) << "not in raw mode during the run";
  run.Signal(SIGINT);
  ASSERT_TRUE(run.WaitFor("sigint")) << run.out() << " sentry's exit: " << run.Wait(1);
  double t0 = NowSec();
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(), 128 + SIGTERM) << run.out();
  EXPECT_LT(NowSec() - t0, 5);
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

// README: a second SIGTERM/SIGHUP kills the sandbox at once, not after the
// 2 s grace; the exit code stays 128+N.
TEST(TerminalTest, ASecondSigtermEndsTheRunAtOnce) {
  TerminalRun run({}, {kPython, "-c",
                       "import signal, time\n"
                       "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       "print('ready', flush=True)\n"
                       "time.sleep(30)\n"});
  ASSERT_TRUE(run.WaitFor("ready")) << run.out();
  double t0 = NowSec();
  run.Signal(SIGTERM);
  usleep(300 * 1000);
  EXPECT_EQ(run.Wait(0.1), -1) << "ended by the first SIGTERM, which this guest ignores";
  run.Signal(SIGTERM);
  EXPECT_EQ(run.Wait(), 128 + SIGTERM) << run.out();
  EXPECT_LT(NowSec() - t0, 1.7) << "the grace (2 s) was waited out";
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

// The host pid's parent, from /proc/PID/stat (-1 when it is gone).
pid_t ParentOf(pid_t pid) {
  std::string stat = ReadHostFile("/proc/" + std::to_string(pid) + "/stat");
  size_t end = stat.rfind(')');
  if (end == std::string::npos) return -1;
  return static_cast<pid_t>(std::atol(stat.c_str() + end + 4));  // ") S PPID"
}

// Whether a process under root (a host pid) whose name starts with comm
// ("python3": the kernel names it after the file run, python3.11) is
// blocked in select(2) or pselect6(2): waiting for its input.
bool WaitsInSelect(pid_t root, const std::string& comm) {
  DIR* proc = opendir("/proc");
  if (!proc) return false;
  bool waits = false;
  while (dirent* e = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    std::string dir = "/proc/" + std::string(e->d_name);
    if (pid <= 0 || ReadHostFile(dir + "/comm").rfind(comm, 0) != 0) continue;
    bool under = false;
    for (pid_t p = pid; p > 1 && !under; p = ParentOf(p)) under = p == root;
    std::string call = ReadHostFile(dir + "/syscall");
    long nr = std::atol(call.c_str());
    if (under && !call.empty() && std::isdigit(static_cast<unsigned char>(call[0])) &&
        (nr == SYS_select || nr == SYS_pselect6)) {
      waits = true;
    }
  }
  closedir(proc);
  return waits;
}

// Python's REPL, as a user types into it: Ctrl-C at the prompt is a
// KeyboardInterrupt the REPL catches, and the session goes on.
TEST(TerminalTest, CtrlCInAPythonReplInterruptsAndTheReplGoesOn) {
  TerminalRun run({}, {kPython, "-i", "-q"});
  ASSERT_TRUE(run.WaitFor(">>> ")) << run.out();
  // As a user would, once the REPL waits for a key: Python's readline loop
  // keeps a SIGINT that comes between the prompt and its select(2) until the
  // next key. Natively too: under strace, a Ctrl-C typed at once after the
  // prompt is lost about half the time; the sandbox's trapped calls widen
  // that window as strace's stops do.
  bool waiting = false;
  for (double deadline = NowSec() + 10; !waiting && NowSec() < deadline; usleep(10000)) {
    waiting = WaitsInSelect(run.pid(), "python3");
  }
  ASSERT_TRUE(waiting) << "the REPL never waited for a key: " << run.out();
  run.Type("\x03");
  ASSERT_TRUE(run.WaitFor("KeyboardInterrupt")) << run.out();
  size_t interrupted = run.out().find("KeyboardInterrupt");
  ASSERT_TRUE(run.WaitFor(">>> ", 10, interrupted)) << "no new prompt: " << run.out();
  run.Type("print(6*7)\r");
  EXPECT_TRUE(run.WaitFor("\n42", 10, interrupted)) << run.out();
  run.Type("raise SystemExit(5)\r");
  EXPECT_EQ(run.Wait(), 5) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
}

// The guest's terminal is its own: what it does to it never reaches the
// caller's, and it holds no fd of the caller's terminal.
TEST(TerminalTest, TheGuestCannotReachTheCallersTerminal) {
  TerminalRun run({},
                  {kPython, "-c",
                   "import errno, fcntl, os, struct, termios\n"
                   "def t(name, f):\n"
                   "    try: f(); print(name, 'OK')\n"
                   "    except OSError as e: print(name, errno.errorcode[e.errno])\n"
                   "for fd in range(3):\n"
                   "    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 3, 3, 0, 0))\n"
                   "    a = termios.tcgetattr(fd); a[3] &= ~termios.ECHO\n"
                   "    termios.tcsetattr(fd, termios.TCSANOW, a)\n"
                   "t('tiocsti', lambda: fcntl.ioctl(0, termios.TIOCSTI, b'X'))\n"
                   "t('steal', lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 1))\n"
                   "st = os.fstat(0)\n"
                   "print('pts', os.major(st.st_rdev), os.stat('/dev/pts/0').st_dev == st.st_dev)\n"
                   "print('changed', flush=True)\n"
                   "import time; time.sleep(1)\n"});
  ASSERT_TRUE(run.WaitFor("changed")) << run.out();
  winsize ws = run.Size();
  EXPECT_EQ(ws.ws_row, 24);
  EXPECT_EQ(ws.ws_col, 80);
  EXPECT_EQ(run.Wait(), 0) << run.out();
  EXPECT_NE(run.out().find("tiocsti ENOTTY"), std::string::npos) << run.out();
  EXPECT_NE(run.out().find("steal ENOTTY"), std::string::npos) << run.out();
  EXPECT_NE(run.out().find("pts 136 True"), std::string::npos) << run.out();
  EXPECT_TRUE(SameSettings(run.Settings(), run.before()));
  EXPECT_EQ(run.out().find('X'), std::string::npos) << run.out();
}

}  // namespace
}  // namespace sentry::testing

namespace sentry::testing {
namespace {

// Without a terminal of the caller's (CI's pipes): -t still gives the guest
// one, relayed to the pipes; its input's end reaches it as ^D.
TEST(TerminalFlagsTest, DashTGivesATerminalOverPipes) {
  ProcessResult r = RunSentry({"-t"},
                              {"/bin/sh", "-c",
                               "test -t 0 && test -t 1 && test -t 2 && echo all-ttys; "
                               "read line; echo got=$line"},
                              "hello\n", 20);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  // The terminal echoes the input (whenever it comes), and turns \n into
  // \r\n.
  EXPECT_NE(r.out.find("all-ttys\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hello\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("got=hello\r\n"), std::string::npos) << r.out;
}

TEST(TerminalFlagsTest, PipesStayPipesByDefault) {
  ProcessResult r = RunSentry({}, {"/bin/sh", "-c", "test -t 0 || test -t 1 || echo no-tty"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "no-tty\n");
}

TEST(TerminalFlagsTest, DashTAndJsonContradict) {
  ProcessResult r = RunSentry({"-t", "--json"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.out.find("\"error\":\"-t gives the guest a terminal"), std::string::npos) << r.out;
}

TEST(TerminalFlagsTest, DashIKeepsStdinOpenWithJson) {
  ProcessResult r = RunSentry({"-i", "--json"}, {"/bin/cat"}, "kept\n");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("\"stdout\":\"kept\\n\""), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sentry::testing

namespace sentry::testing {
namespace {

// A shell's `sentry run ... &`: sentry in a background group of the
// terminal's session. It must not be stopped (SIGTTOU/SIGTTIN) for touching
// the terminal: it leaves the caller's settings alone and reads no input.
TEST(TerminalBackgroundTest, ABackgroundRunIsNotStopped) {
  std::vector<std::string> argv = {
      SentryBinary(), "run",
      "--timeout",    "20",
      "--",           "/usr/bin/python3",
      "-c",           "import os; print('bg', os.isatty(0), os.isatty(1))"};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int master = -1;
  pid_t shell = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(shell, 0);
  if (shell == 0) {
    pid_t job = fork();
    if (job == 0) {
      setpgid(0, 0);
      execv(args[0], args.data());
      _exit(127);
    }
    setpgid(job, job);
    int st = 0;
    waitpid(job, &st, WUNTRACED);
    if (WIFSTOPPED(st)) kill(job, SIGKILL);
    printf(WIFSTOPPED(st) ? "job-stopped\n" : "job-exit=%d\n", WEXITSTATUS(st));
    fflush(stdout);
    _exit(0);
  }
  std::string out;
  char buf[1024];
  double deadline = NowSec() + 30;
  while (NowSec() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    ssize_t n = read(master, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  waitpid(shell, nullptr, 0);
  close(master);
  EXPECT_NE(out.find("bg True True"), std::string::npos) << out;
  EXPECT_NE(out.find("job-exit=0"), std::string::npos) << out;
}

}  // namespace
}  // namespace sentry::testing
