// The re-listen (sentry/platform/tracer_relisten.cc, FORK.md step 2) through
// the sentry's own Tracer: a child process under the table's seccomp program
// with a listener (L1) the test holds, as a sandbox's supervisor holds its
// own. The test closes L1 (a call waiting in it then fails, never hangs), the
// child stacks a filter with a listener of its own, and the Tracer puts the
// supervisor's program (the table after a fork, pid-naming calls trapped)
// in place of the child's and hands the new listener (L2) to the test: the
// child holds no new fd, and its kill() now arrives on L2, which the test
// answers. Native calls stay native.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "loader/filter.h"
#include "sentry/kernel/kernel.h"
#include "sentry/platform/tracer.h"
#include "syscalls/table.h"
#include "vfs/store.h"
#include "vfs/vfs.h"

namespace sentry {
namespace {

enum RelistenStep : int {
  kListenerFd,    // the child's L1 (value: its fd number); waits for the test's copy
  kKillBefore,    // kill(self, 0) before: native (0) under the namespaced table
  kInFlight,      // a trapped call waiting in L1 when the test closed it: its errno
  kWantRelisten,  // asks the test to arm the re-listen (then waits)
  kRelisten,      // its seccomp(NEW_LISTENER): the result (0) or errno
  kNoNewFd,       // 0 if the lowest free fd is what it was before the call
  kKillAfter,     // kill(self, 0) after: the errno the test answered on L2
  kPpidAfter,     // getppid() after: 0 if it ran natively (> 0)
  kHandler,       // the SIGUSR1 the test sent at the exit stop: 0 if its handler ran
                  // once, after the listener's fd was closed
  kRelistenDone,
};

struct RelistenReport {
  int step;
  int value;
};

void SendStep(int fd, int step, int value) {
  RelistenReport r{step, value};
  if (write(fd, &r, sizeof(r)) != sizeof(r)) _exit(120);
}

void* GetcwdInThread(void* arg) {
  char buf[64];
  long r = syscall(SYS_getcwd, buf, sizeof(buf));
  *static_cast<int*>(arg) = r < 0 ? errno : 0;
  return nullptr;
}

int LowestFreeFd() {
  int fd = dup(0);
  if (fd >= 0) close(fd);
  return fd;
}

// The SIGUSR1 handler: runs only once the guest's copy of the listener is
// closed (the tracer holds the signal back until then).
volatile sig_atomic_t g_free_before = -1, g_handler_runs = 0, g_handler_saw_fd = 0;
void OnUsr1(int) {
  g_handler_runs = g_handler_runs + 1;
  if (LowestFreeFd() != g_free_before) g_handler_saw_fd = 1;
}

[[noreturn]] void RelistenChild(int go, int out) {
  char c;
  if (read(go, &c, 1) != 1) _exit(121);
  static const std::vector<sock_filter> prog = BuildSeccompFilter(SyscallTable());
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), const_cast<sock_filter*>(prog.data())};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(122);
  long l1 = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
  if (l1 < 0) _exit(123);
  SendStep(out, kListenerFd, static_cast<int>(l1));
  if (read(go, &c, 1) != 1) _exit(124);
  close(static_cast<int>(l1));  // the test holds L1 now, as a supervisor does

  SendStep(out, kKillBefore, syscall(SYS_kill, getpid(), 0) < 0 ? errno : 0);

  int in_flight = -1;
  pthread_t t;
  pthread_create(&t, nullptr, GetcwdInThread, &in_flight);
  pthread_join(t, nullptr);  // returns once the test closed L1
  SendStep(out, kInFlight, in_flight);

  SendStep(out, kWantRelisten, 0);
  if (read(go, &c, 1) != 1) _exit(125);
  // The buffer the supervisor writes its program over: room for the most a
  // program may have. What is in it does not matter.
  static sock_filter room[BPF_MAXINSNS];
  for (sock_filter& f : room) f = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog offer{BPF_MAXINSNS, room};
  signal(SIGUSR1, OnUsr1);
  int free_before = LowestFreeFd();
  g_free_before = free_before;
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &offer);
  SendStep(out, kRelisten, r < 0 ? errno : static_cast<int>(r));
  SendStep(out, kNoNewFd, LowestFreeFd() == free_before ? 0 : 1);
  SendStep(out, kKillAfter, syscall(SYS_kill, getpid(), 0) < 0 ? errno : 0);
  SendStep(out, kPpidAfter, syscall(SYS_getppid) > 0 ? 0 : 1);
  SendStep(out, kHandler, g_handler_runs == 1 && !g_handler_saw_fd ? 0 : 1);
  SendStep(out, kRelistenDone, 0);
  _exit(0);
}

bool CanRelistenHere() {
  // pidfds and pidfd_getfd (Linux 5.6+): the rest of the suite needs them
  // anyway.
  int fd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (fd < 0) return false;
  close(fd);
  return true;
}

std::unique_ptr<vfs::Vfs> MakeRelistenVfs(const std::string& store_dir) {
  int store_fd = open(store_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto store = std::make_unique<vfs::Store>(UniqueFd(store_fd), getuid(), getgid());
  vfs::Attr root_attr;
  root_attr.mode = S_IFDIR | 0755;
  root_attr.ino = 2;
  auto root = std::make_shared<vfs::Node>(vfs::NodeKind::kDir, root_attr);
  return std::make_unique<vfs::Vfs>(root, std::move(store));
}

// One notification on listener, if any is ready within ms; answers it with
// -err and returns its syscall number (-1: none).
int AnswerOne(int listener, int err, int ms) {
  pollfd p{listener, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return -1;
  seccomp_notif req{};
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return -1;
  seccomp_notif_resp resp{};
  resp.id = req.id;
  resp.error = -err;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  return req.data.nr;
}

TEST(TracerRelisten, TheSupervisorTakesTheNewListenerAndItsProgramHolds) {
  if (!CanRelistenHere()) GTEST_SKIP() << "no pidfds here";
  char tmpl[] = "/tmp/sentry-relisten-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string store_dir = tmpl;
  Kernel kernel(MakeRelistenVfs(store_dir), KernelConfig{});
  Tracer tracer(kernel, {}, nullptr);

  int go[2], out[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t child = fork();
  if (child == 0) {
    close(go[1]);
    close(out[0]);
    RelistenChild(go[0], out[1]);
  }
  close(go[0]);
  close(out[1]);
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, child, 0)));
  {
    std::lock_guard<std::mutex> lock(kernel.mu());
    Task t;
    t.tid = child;
    t.ns_tid = ReadNsPid(child);
    t.pidfd = UniqueFd(dup(pidfd.get()));
    t.fs = std::make_shared<FsContext>();
    t.process = std::make_shared<Process>();
    t.process->tgid = child;
    t.process->ns_pid = t.ns_tid;
    t.started = true;
    kernel.tasks().Add(std::move(t));
  }
  ASSERT_EQ(tracer.Seize(child), 0);
  tracer.set_leader(child);
  ASSERT_EQ(write(go[1], "g", 1), 1);

  UniqueFd l1, l2;
  int taken_err = -1, guest_fd_of_l1 = -1;
  bool l1_closed = false, signalled = false;
  std::vector<std::pair<int, int>> got;
  std::vector<int> l2_calls;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!tracer.leader_done() && std::chrono::steady_clock::now() < deadline) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
      // The seccomp call's exit stop (the only syscall stop): a signal now
      // would run the guest's handler while it holds the listener, were it
      // not held back.
      if (WIFSTOPPED(status) && WSTOPSIG(status) == (SIGTRAP | 0x80) && !signalled) {
        syscall(SYS_tgkill, child, pid, SIGUSR1);
        signalled = true;
      }
      tracer.OnWaitStatus(pid, status);
    }
    if (l1 && !l1_closed) {
      // The child's thread waits in L1 (getcwd traps): the supervisor closes
      // L1 without answering it.
      pollfd p{l1.get(), POLLIN, 0};
      if (poll(&p, 1, 0) == 1) {
        l1.Reset();
        l1_closed = true;
      }
    }
    if (l2) {
      int nr = AnswerOne(l2.get(), ESRCH, 0);
      if (nr >= 0) l2_calls.push_back(nr);
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 2) <= 0) continue;
    RelistenReport r;
    if (read(out[0], &r, sizeof(r)) != sizeof(r)) continue;
    got.emplace_back(r.step, r.step == kListenerFd ? 0 : r.value);
    if (r.step == kListenerFd) {
      guest_fd_of_l1 = r.value;
      l1 = UniqueFd(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), r.value, 0)));
      ASSERT_TRUE(l1) << "cannot take L1";
      ASSERT_EQ(write(go[1], "g", 1), 1);
    } else if (r.step == kWantRelisten) {
      EXPECT_TRUE(l1_closed);
      std::vector<sock_filter> program = BuildSeccompFilter(SyscallTableAfterFork());
      EXPECT_FALSE(tracer.BeginRelisten(999999, program, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                                        [](int, UniqueFd) {}));
      EXPECT_TRUE(tracer.BeginRelisten(ReadNsPid(child), program, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                                       [&](int err, UniqueFd listener) {
                                         taken_err = err;
                                         l2 = std::move(listener);
                                       }));
      ASSERT_EQ(write(go[1], "g", 1), 1);
    }
  }
  if (!tracer.leader_done()) kill(child, SIGKILL);
  while (waitpid(-1, nullptr, __WALL | WNOHANG) > 0) {
  }
  // What it reported before it ended.
  for (RelistenReport r; read(out[0], &r, sizeof(r)) == sizeof(r);)
    got.emplace_back(r.step, r.value);
  close(go[1]);
  close(out[0]);
  std::filesystem::remove_all(store_dir);

  ASSERT_TRUE(tracer.leader_done()) << "the child did not finish";
  EXPECT_EQ(WEXITSTATUS(tracer.leader_status()), 0);
  EXPECT_GE(guest_fd_of_l1, 0);
  EXPECT_EQ(taken_err, 0);
  std::vector<std::pair<int, int>> want = {
      {kListenerFd, 0}, {kKillBefore, 0},  {kInFlight, ENOSYS}, {kWantRelisten, 0},
      {kRelisten, 0},   {kNoNewFd, 0},     {kKillAfter, ESRCH}, {kPpidAfter, 0},
      {kHandler, 0},    {kRelistenDone, 0}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(signalled);
  // Only the pid-naming call reached L2 (getppid and the pipe writes are
  // native in that table too).
  EXPECT_EQ(l2_calls, std::vector<int>{SYS_kill});
}

}  // namespace
}  // namespace sentry
