// The fork gate (syscalls/fork_gate.h) through the sentry's own Tracer: a
// child process under the table's seccomp program, seized with the options
// the sentry uses, its TRACE stops and lifecycle events answered by
// Tracer::OnWaitStatus on this thread. No listener: trap rows are ENOSYS
// here, so the child makes only native calls and the gated ones. What a
// sandbox run shows of the same gate: SyscallWall.ForkGate (security_test).
#include "syscalls/fork_gate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
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

// What the child reports, one byte-sized code each, in order.
enum Step : int {
  kUngranted,  // clone with the fork's flags, no grant: its errno
  kListener,   // seccomp with NEW_LISTENER: its errno
  kWantGrant,  // asks the test to grant it a fork (then waits)
  kGranted,    // the granted clone: how its child ended (100 + signal: held, then dropped)
  kSecond,     // a second clone with the fork's flags (the grant is used): its errno
  kPlainFork,  // an ordinary fork and wait: 0 if it worked
  kDone,
};

struct Report {
  int step;
  int value;
};

void Send(int fd, int step, int value) {
  Report r{step, value};
  if (write(fd, &r, sizeof(r)) != sizeof(r)) _exit(120);
}

// The child: waits to be seized, installs the table's program, then calls.
[[noreturn]] void Child(int go, int out) {
  char c;
  if (read(go, &c, 1) != 1) _exit(121);
  static const std::vector<sock_filter> prog = BuildSeccompFilter(SyscallTable());
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), const_cast<sock_filter*>(prog.data())};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(122);
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) _exit(123);

  long r = syscall(SYS_clone, kForkCloneFlags, 0, 0, 0, 0);
  if (r == 0) _exit(0);  // only if the gate let it through
  Send(out, kUngranted, r < 0 ? errno : 0);

  sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog own{1, &allow};
  r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &own);
  Send(out, kListener, r < 0 ? errno : 0);

  Send(out, kWantGrant, 0);
  if (read(go, &c, 1) != 1) _exit(124);
  r = syscall(SYS_clone, kForkCloneFlags, 0, 0, 0, 0);
  if (r == 0) _exit(syscall(SYS_getpid) == 1 ? 0 : 3);
  int status = 0;
  if (r < 0) {
    Send(out, kGranted, errno);
  } else {
    bool waited = waitpid(static_cast<pid_t>(r), &status, __WALL) == r;
    Send(out, kGranted,
         !waited               ? 200
         : WIFSIGNALED(status) ? 100 + WTERMSIG(status)
                               : WEXITSTATUS(status));
  }

  r = syscall(SYS_clone, kForkCloneFlags, 0, 0, 0, 0);
  if (r == 0) _exit(0);
  Send(out, kSecond, r < 0 ? errno : 0);

  r = fork();
  if (r == 0) _exit(7);
  Send(
      out, kPlainFork,
      r > 0 && waitpid(static_cast<pid_t>(r), &status, 0) == r && WEXITSTATUS(status) == 7 ? 0 : 1);
  Send(out, kDone, 0);
  _exit(0);
}

// Whether this process may make the namespaces of a fork (root, or
// unprivileged user namespaces).
bool CanMakeNamespaces() {
  pid_t p = fork();
  if (p == 0) _exit(unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  waitpid(p, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::unique_ptr<vfs::Vfs> MakeEmptyVfs(const std::string& store_dir) {
  int store_fd = open(store_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto store = std::make_unique<vfs::Store>(UniqueFd(store_fd), getuid(), getgid());
  vfs::Attr root_attr;
  root_attr.mode = S_IFDIR | 0755;
  root_attr.ino = 2;
  auto root = std::make_shared<vfs::Node>(vfs::NodeKind::kDir, root_attr);
  return std::make_unique<vfs::Vfs>(root, std::move(store));
}

TEST(TracerForkGate, OnlyAGrantedCloneRunsAndOnlyOnce) {
  if (!CanMakeNamespaces()) GTEST_SKIP() << "no user namespaces here";
  char tmpl[] = "/tmp/sentry-fork-gate-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string store_dir = tmpl;
  Kernel kernel(MakeEmptyVfs(store_dir), KernelConfig{});
  Tracer tracer(kernel, {}, nullptr);

  int go[2], out[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t child = fork();
  if (child == 0) {
    close(go[1]);
    close(out[0]);
    Child(go[0], out[1]);
  }
  close(go[0]);
  close(out[1]);
  {
    std::lock_guard<std::mutex> lock(kernel.mu());
    Task t;
    t.tid = child;
    t.ns_tid = ReadNsPid(child);
    t.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, child, 0)));
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

  std::vector<Report> reports;
  bool held_as_pid1 = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!tracer.leader_done() && std::chrono::steady_clock::now() < deadline) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) tracer.OnWaitStatus(pid, status);
    // The granted child is held at its first stop for a hand-off (never
    // resumed by this tracer): pid 1 of its own pid namespace; this test
    // has no S2, so it drops it (killed).
    for (pid_t ns_tid : tracer.HeldForkChildren()) {
      std::lock_guard<std::mutex> lock(kernel.mu());
      if (Task* t = kernel.tasks().FindByNsTid(ns_tid)) held_as_pid1 = ReadNsPid(t->tid) == 1;
    }
    for (pid_t ns_tid : tracer.HeldForkChildren()) tracer.DropForkChild(ns_tid);
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 2) <= 0) continue;
    Report r;
    if (read(out[0], &r, sizeof(r)) != sizeof(r)) continue;
    reports.push_back(r);
    if (r.step == kWantGrant) {
      EXPECT_FALSE(tracer.GrantFork(999999));  // no such thread
      EXPECT_TRUE(tracer.GrantFork(ReadNsPid(child)));
      ASSERT_EQ(write(go[1], "g", 1), 1);
    }
  }
  if (!tracer.leader_done()) kill(child, SIGKILL);
  while (waitpid(-1, nullptr, __WALL | WNOHANG) > 0) {
  }
  // What it reported before it ended.
  for (Report r; read(out[0], &r, sizeof(r)) == sizeof(r);) reports.push_back(r);
  close(go[1]);
  close(out[0]);
  std::filesystem::remove_all(store_dir);

  ASSERT_TRUE(tracer.leader_done()) << "the child did not finish";
  EXPECT_EQ(WEXITSTATUS(tracer.leader_status()), 0);
  std::vector<std::pair<int, int>> got;
  for (const Report& r : reports) got.emplace_back(r.step, r.value);
  std::vector<std::pair<int, int>> want = {{kUngranted, EPERM}, {kListener, EPERM}, {kWantGrant, 0},
                                           {kGranted, 109},     {kSecond, EPERM},   {kPlainFork, 0},
                                           {kDone, 0}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(held_as_pid1);
  // The refusals are listed as a run lists them, with why.
  ASSERT_EQ(kernel.denials.size(), 3u);
  EXPECT_EQ(kernel.denials[0].syscall, "clone");
  EXPECT_EQ(kernel.denials[0].err, EPERM);
  EXPECT_NE(kernel.denials[0].hint.find("session fork"), std::string::npos);
  EXPECT_EQ(kernel.denials[1].syscall, "seccomp");
  EXPECT_EQ(kernel.denials[2].syscall, "clone");
}

}  // namespace
}  // namespace sentry
