// Sessions, process groups and controlling terminals: setsid, getsid,
// setpgid, TIOCSCTTY, TIOCNOTTY, TIOCGPGRP/TIOCSPGRP, TIOCGSID, as a login
// shell and Python's pty.fork() use them. Each case runs in a child of its
// own (a session leader cannot make a new session), which reports the first
// step that differed as its exit code.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <functional>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

// Runs body in a forked child; its return value is the child's exit code.
int InChild(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// A new pty pair, unlocked; the slave opened by its name (with flags).
bool OpenPair(int* master, int* slave, int slave_flags) {
  *master = posix_openpt(O_RDWR | O_NOCTTY);
  if (*master < 0 || grantpt(*master) < 0 || unlockpt(*master) < 0) return false;
  const char* name = ptsname(*master);
  if (name == nullptr) return false;
  *slave = open(name, O_RDWR | slave_flags);
  return *slave >= 0;
}

TEST(SessionTest, SetsidMakesANewSessionAndGroup) {
  EXPECT_EQ(InChild([] {
              if (setsid() != getpid()) return 1;
              if (getsid(0) != getpid() || getsid(getpid()) != getpid()) return 2;
              if (getpgrp() != getpid() || getpgid(0) != getpid()) return 3;
              // A session leader cannot make another.
              if (setsid() != -1 || errno != EPERM) return 4;
              // Nor change its group.
              if (setpgid(0, 0) != -1 || errno != EPERM) return 5;
              return 0;
            }),
            0);
}

TEST(SessionTest, AGroupLeaderCannotSetsid) {
  EXPECT_EQ(InChild([] {
              if (setpgid(0, 0) != 0) return 1;
              if (setsid() != -1 || errno != EPERM) return 2;
              return 0;
            }),
            0);
}

TEST(SessionTest, GetsidOfAChildIsOursUntilItSetsid) {
  int to_child[2], from_child[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe(to_child));
  ASSERT_SYSCALL_SUCCEEDS(pipe(from_child));
  pid_t pid = fork();
  ASSERT_SYSCALL_SUCCEEDS(pid);
  if (pid == 0) {
    char c;
    if (read(to_child[0], &c, 1) != 1) _exit(1);
    setsid();
    (void)!write(from_child[1], "s", 1);
    (void)!read(to_child[0], &c, 1);
    _exit(0);
  }
  EXPECT_EQ(getsid(pid), getsid(0));
  EXPECT_EQ(getpgid(pid), getpgrp());
  ASSERT_EQ(write(to_child[1], "g", 1), 1);
  char c;
  ASSERT_EQ(read(from_child[0], &c, 1), 1);
  EXPECT_EQ(getsid(pid), pid);
  EXPECT_EQ(getpgid(pid), pid);
  // Another session's process may not join our group.
  EXPECT_SYSCALL_FAILS_WITH(setpgid(pid, getpgrp()), EPERM);
  ASSERT_EQ(write(to_child[1], "x", 1), 1);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_SYSCALL_FAILS_WITH(getsid(pid), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(getsid(INT_MAX), ESRCH);
  for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
}

TEST(PtyTest, SessionLeaderTakesAControllingTerminal) {
  EXPECT_EQ(InChild([] {
              int master, slave;
              if (setsid() < 0) return 1;
              if (!OpenPair(&master, &slave, O_NOCTTY)) return 2;
              // No controlling terminal yet: O_NOCTTY gave none.
              if (tcgetpgrp(slave) != -1 || errno != ENOTTY) return 3;
              if (ioctl(slave, TIOCSCTTY, 0) != 0) return 4;
              if (tcgetpgrp(slave) != getpgrp()) return 5;
              pid_t sid = -1;
              if (ioctl(slave, TIOCGSID, &sid) != 0 || sid != getsid(0)) return 6;
              // The master answers for its slave.
              if (tcgetpgrp(master) != getpgrp()) return 7;
              char* name = ttyname(slave);
              if (name == nullptr || std::strcmp(name, ptsname(master)) != 0) return 8;
              // Again on the same terminal: nothing to do.
              if (ioctl(slave, TIOCSCTTY, 0) != 0) return 9;
              // A second terminal: the session has one already.
              int master2, slave2;
              if (!OpenPair(&master2, &slave2, O_NOCTTY)) return 10;
              if (ioctl(slave2, TIOCSCTTY, 0) != -1 || errno != EPERM) return 11;
              if (tcgetpgrp(slave2) != -1 || errno != ENOTTY) return 12;
              return 0;
            }),
            0);
}

TEST(PtyTest, OnlyASessionLeaderTakesOne) {
  EXPECT_EQ(InChild([] {
              int master, slave;
              if (setpgid(0, 0) != 0) return 1;
              if (!OpenPair(&master, &slave, O_NOCTTY)) return 2;
              if (ioctl(slave, TIOCSCTTY, 0) != -1 || errno != EPERM) return 3;
              return 0;
            }),
            0);
}

TEST(PtyTest, ATerminalOfAnotherSessionCannotBeTaken) {
  int master, slave;
  int ready[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe(ready));
  ASSERT_TRUE(OpenPair(&master, &slave, O_NOCTTY)) << ErrnoString();
  pid_t owner = fork();
  ASSERT_SYSCALL_SUCCEEDS(owner);
  if (owner == 0) {
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) _exit(1);
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(InChild([slave] {
              if (setsid() < 0) return 1;
              if (ioctl(slave, TIOCSCTTY, 0) != -1 || errno != EPERM) return 2;
              return 0;
            }),
            0);
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  for (int fd : {master, slave, ready[0], ready[1]}) close(fd);
}

// (A session leader without one that opens a terminal without O_NOCTTY
// takes it natively; under sentry the open is the sentry's, so it does not:
// a known gap, see README. login_tty(3), pty.fork() and forkpty() all use
// TIOCSCTTY.)
TEST(PtyTest, TiocnottyGivesItUp) {
  EXPECT_EQ(InChild([] {
              int master, slave;
              if (setsid() < 0) return 1;
              if (!OpenPair(&master, &slave, O_NOCTTY)) return 2;
              if (ioctl(slave, TIOCSCTTY, 0) != 0) return 3;
              // TIOCNOTTY gives it up (a session leader's: the group gets
              // SIGHUP and SIGCONT, which this one ignores).
              signal(SIGHUP, SIG_IGN);
              if (ioctl(slave, TIOCNOTTY) != 0) return 4;
              if (tcgetpgrp(slave) != -1 || errno != ENOTTY) return 5;
              return 0;
            }),
            0);
}

TEST(PtyTest, ForegroundGroupMovesWithTcsetpgrp) {
  EXPECT_EQ(InChild([] {
              int master, slave;
              if (setsid() < 0) return 1;
              if (!OpenPair(&master, &slave, O_NOCTTY)) return 2;
              if (ioctl(slave, TIOCSCTTY, 0) != 0) return 3;
              int go[2];
              if (pipe(go) < 0) return 4;
              pid_t job = fork();
              if (job == 0) {
                char c;
                (void)!read(go[0], &c, 1);
                _exit(0);
              }
              if (setpgid(job, job) != 0) return 5;
              // A background group's tcsetpgrp would stop it with SIGTTOU.
              signal(SIGTTOU, SIG_IGN);
              if (tcsetpgrp(slave, job) != 0) return 6;
              if (tcgetpgrp(slave) != job || tcgetpgrp(master) != job) return 7;
              if (tcsetpgrp(slave, getpgrp()) != 0) return 8;
              // A group that does not exist in the session.
              if (tcsetpgrp(slave, INT_MAX) != -1 || errno != ESRCH) return 9;
              (void)!write(go[1], "x", 1);
              waitpid(job, nullptr, 0);
              return 0;
            }),
            0);
}

TEST(PtyTest, DevTtyIsTheControllingTerminal) {
  EXPECT_EQ(InChild([] {
              if (setsid() < 0) return 1;
              if (open("/dev/tty", O_RDWR) != -1 || errno != ENXIO) return 2;
              int master, slave;
              if (!OpenPair(&master, &slave, O_NOCTTY)) return 3;
              if (ioctl(slave, TIOCSCTTY, 0) != 0) return 4;
              int tty = open("/dev/tty", O_RDWR | O_CLOEXEC);
              if (tty < 0) return 5;
              // (Its fstat differs: natively /dev/tty's own node, 5:0; under
              // sentry the pty's. See README, Known gaps.)
              if (tcgetpgrp(tty) != getpgrp()) return 6;
              struct termios raw;
              if (tcgetattr(tty, &raw) < 0) return 7;
              cfmakeraw(&raw);
              if (tcsetattr(tty, TCSANOW, &raw) < 0) return 8;
              if (write(tty, "hi", 2) != 2) return 9;
              char buf[8];
              if (read(master, buf, sizeof(buf)) != 2 || std::memcmp(buf, "hi", 2) != 0) return 10;
              struct stat node;
              if (stat("/dev/tty", &node) < 0 || !S_ISCHR(node.st_mode) ||
                  node.st_rdev != makedev(5, 0)) {
                return 11;
              }
              return 0;
            }),
            0);
}

TEST(PtyTest, ForkptyGivesTheChildItsTerminal) {
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_SYSCALL_SUCCEEDS(pid);
  if (pid == 0) {
    bool ok = isatty(0) && isatty(1) && getsid(0) == getpid() && tcgetpgrp(0) == getpgrp() &&
              ttyname(0) != nullptr && std::string(ttyname(0)).rfind("/dev/pts/", 0) == 0;
    printf(ok ? "child-ok\n" : "child-bad\n");
    fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(master, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("child-ok"), std::string::npos) << out;
  close(master);
}

}  // namespace
}  // namespace sentry::conformance
