// A forked child handed from its parent's supervisor S1 to its own S2
// (sentry/session/FORK.md steps 3 and 5), through real processes: S1 is
// this test with the sentry's own Kernel and Tracer; the parent guest G is
// a process of its own in new user/mount/net/uts/ipc namespaces (ids from a
// sandbox slot, a pivot_root'ed view with a "store" at /.sentry-store), under
// the table's seccomp program, seized by the Tracer; S2 is RunSandbox in
// adopt mode, in a process this test forks. G forks once through the gate
// (granted here), the Tracer hands the child to S2, and the child reports
// what it sees on its stdout, which must be S2's. Root only (S2 is).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "loader/filter.h"
#include "sentry/base/fd_passing.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/procfs.h"
#include "sentry/kernel/sysfs.h"
#include "sentry/platform/tracer.h"
#include "sentry/run/fork_control.h"
#include "sentry/run/run.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/run/spawn.h"
#include "sentry/session/sandbox_launcher.h"
#include "syscalls/fork_gate.h"
#include "syscalls/table.h"
#include "vfs/store.h"
#include "vfs/vfs.h"

namespace sentry {
namespace {

void Say(int fd, const std::string& s) {
  std::string line = s + "\n";
  (void)!write(fd, line.data(), line.size());
}

std::string ReadLineFrom(int fd) {
  std::string out;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') out.push_back(c);
  return out;
}

// A shared mapping G holds when it forks.
enum class Shared { kLowerFileReadOnly, kWritable, kStoreFileReadOnly };

// What the adopted child reports, one line each, on its fd 1 (S2's pipe).
[[noreturn]] void AdoptedChild(int listener_fd, int port, const std::string& abstract_name) {
  Say(1, "MARKER");  // its first instruction's work: must reach S2's pipe, never G's
  auto cat = [](const char* path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::string("ERR") + std::to_string(errno);
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
  };
  Say(1, "before=" + cat("/home/sandbox/before.txt"));
  int w = open("/home/sandbox/child.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  (void)!write(w, "from-child", 10);
  close(w);
  Say(1, "child=" + cat("/home/sandbox/child.txt"));
  ReadLineFrom(0);  // the test wrote the parent's later file, then this line (S2's stdin)
  Say(1, "after=" + cat("/home/sandbox/after.txt"));
  struct stat st;
  int got = fstat(listener_fd, &st);
  Say(1,
      std::string("listener=") + (got == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)
                                      ? "null"
                                      : "other " + std::to_string(got < 0 ? errno : st.st_mode)));
  Say(1, "kill=" + std::to_string(kill(-1, 0) < 0 ? errno : 0));
  Say(1, "sid=" + std::to_string(getsid(0)));
  std::string pids;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') pids += std::string(e->d_name) + ",";
    }
    closedir(d);
  }
  Say(1, "pids=" + pids);
  int a = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract_name.data(), abstract_name.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size();
  Say(1, "abstract=" +
             std::to_string(connect(a, reinterpret_cast<sockaddr*>(&un), len) < 0 ? errno : 0));
  int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<uint16_t>(port));
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Say(1,
      "loopback=" +
          std::to_string(connect(t, reinterpret_cast<sockaddr*>(&in), sizeof(in)) < 0 ? errno : 0));
  utsname u{};
  uname(&u);
  Say(1, std::string("host=") + u.nodename);
  Say(1, "END");
  ReadLineFrom(0);  // the test looked at its mount view
  _exit(0);
}

// G, the parent guest: its own namespaces and view, then the filter.
[[noreturn]] void ParentGuest(int sync_r, int report_w, const std::string& root_dir,
                              Shared shared) {
  // A lower-layer file (the host's /bin/sh), opened before the view changes.
  int lower = open("/bin/sh", O_RDONLY | O_CLOEXEC);
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC) < 0)
    _exit(90);
  Say(report_w, "unshared");
  ReadLineFrom(sync_r);  // the test wrote our id maps
  if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) _exit(91);
  if (mount("", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) _exit(92);
  if (mount("tmpfs", root_dir.c_str(), "tmpfs", 0, "mode=0755") < 0) _exit(93);
  std::string store = root_dir + "/.sentry-store", old = root_dir + "/old";
  if (mkdir(store.c_str(), 0755) < 0 || mkdir(old.c_str(), 0755) < 0) _exit(94);
  if (mount("tmpfs", store.c_str(), "tmpfs", 0, "size=1m,mode=0755") < 0) _exit(95);
  int m = open((store + "/parent-store-file").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  (void)!write(m, "x", 1);
  close(m);
  // A store file opened read-only: its shared mapping cannot be made
  // writable, but the parent could write the file through another fd.
  int store_file = open((store + "/parent-store-file").c_str(), O_RDONLY | O_CLOEXEC);
  if (chdir(root_dir.c_str()) < 0 || syscall(SYS_pivot_root, ".", "old") < 0 || chdir("/") < 0 ||
      umount2("/old", MNT_DETACH) < 0) {
    _exit(96);
  }
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  ioctl(s, SIOCGIFFLAGS, &ifr);
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) _exit(97);
  // Sockets the child must not reach, and a listener it inherits.
  std::string abstract_name = "sentry-adopt-test-" + std::to_string(getpid());
  int a = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract_name.data(), abstract_name.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size();
  if (bind(a, reinterpret_cast<sockaddr*>(&un), len) < 0 || listen(a, 4) < 0) _exit(98);
  int t = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t inlen = sizeof(in);
  if (bind(t, reinterpret_cast<sockaddr*>(&in), sizeof(in)) < 0 || listen(t, 4) < 0 ||
      getsockname(t, reinterpret_cast<sockaddr*>(&in), &inlen) < 0) {
    _exit(99);
  }
  int port = ntohs(in.sin_port);
  void* p = shared == Shared::kWritable
                ? mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
            : shared == Shared::kStoreFileReadOnly
                ? mmap(nullptr, 4096, PROT_READ, MAP_SHARED, store_file, 0)
                : mmap(nullptr, 4096, PROT_READ, MAP_SHARED, lower, 0);
  if (p == MAP_FAILED) _exit(100);
  // The sandbox's guest: uid 1000, no privilege, the table's program (no
  // listener: trapped calls are ENOSYS for G; it makes only native ones).
  if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0) _exit(101);
  static const std::vector<sock_filter> prog = BuildSeccompFilter(SyscallTable());
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), const_cast<sock_filter*>(prog.data())};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    _exit(102);
  }
  Say(report_w, "ready");
  ReadLineFrom(sync_r);  // seized and granted
  long r = syscall(SYS_clone, kForkCloneFlags, 0, 0, 0, 0);
  if (r == 0) AdoptedChild(t, port, abstract_name);
  Say(report_w, "forked " + std::to_string(r < 0 ? -errno : r));
  ReadLineFrom(sync_r);  // the end
  _exit(0);
}

struct Scenario {
  absl::Status handoff;
  std::string s2_out;      // S2's stdout: the child's reports
  std::string parent_out;  // G's stdout pipe (S1's relay)
  int s2_exit = -1;
  bool parent_vfs_has_child_file = true;
  std::string store_listing;  // the child's /.sentry-store, seen from the host
  int control_status = -1;    // via the launcher: S2's answer to a fork_prepare
  int cancel_status = -1;     // and to its fork_cancel
  long handoff_us = 0;        // S1's HandOffForkChild (until "seized")
  long first_write_us = 0;    // from its start to the child's first write on S2's pipe
};

bool WaitReadable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) > 0;
}

// S2 is RunSandbox in adopt mode: in a process forked here, or started as
// the server starts it (the session launcher's zygote, an adopting spec).
Scenario RunScenario(Shared shared, bool via_launcher = false) {
  Scenario out;
  // S2 first, while this process has one thread.
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd s2_requests, s2_frames;  // S2's fd 0 (written here) and fd 1 (read here)
  pid_t s2 = -1;
  std::unique_ptr<session::SandboxLauncher> launcher;
  session::SandboxProcess launched;
  RunOptions s2_base;
  s2_base.timeout_sec = 20;
  s2_base.disk_bytes = 64 << 20;
  if (via_launcher) {
    auto started = session::SandboxLauncher::Start(s2_base);
    EXPECT_TRUE(started.ok());
    launcher = std::move(*started);
    session::SandboxSpec spec;
    spec.argv = {"unused: adopt mode runs the handed-over child"};
    spec.adopt_fd = sv[1];
    auto p = launcher->Launch(spec);
    EXPECT_TRUE(p.ok()) << p.status().message();
    if (p.ok()) launched = std::move(*p);
    s2_requests = std::move(launched.requests);
    s2_frames = std::move(launched.frames);
  } else {
    int s2in[2], s2out[2];
    EXPECT_EQ(pipe2(s2in, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(s2out, O_CLOEXEC), 0);
    s2 = fork();
    if (s2 == 0) {
      dup2(s2in[0], 0);
      dup2(s2out[1], 1);
      close(sv[0]);
      RunOptions o = s2_base;
      o.adopt_fd = sv[1];
      _exit(RunSandbox(o));
    }
    close(s2in[0]);
    close(s2out[1]);
    s2_requests = UniqueFd(s2in[1]);
    s2_frames = UniqueFd(s2out[0]);
  }
  close(sv[1]);

  auto slot = TakeSandboxIdSlot();
  EXPECT_TRUE(slot.ok());
  uid_t base = slot.ok() ? slot->base() : kHostIdBase;
  char store_tmpl[] = "/tmp/sentry-adopt-store-XXXXXX";
  char root_tmpl[] = "/tmp/sentry-adopt-root-XXXXXX";
  EXPECT_NE(mkdtemp(store_tmpl), nullptr);
  EXPECT_NE(mkdtemp(root_tmpl), nullptr);
  vfs::Creds creds;
  creds.uid = creds.gid = 1000;
  auto store = std::make_unique<vfs::Store>(
      UniqueFd(open(store_tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC)), getuid(), getgid());
  auto tree = BuildSandboxTree(TreeConfig{}, std::move(store));
  EXPECT_TRUE(tree.ok());
  EXPECT_TRUE(
      WriteIntoSandbox(**tree, creds, "from-parent", 0644, "/home/sandbox/before.txt").ok());
  Kernel kernel(std::move(*tree), KernelConfig{});
  // Its /proc and /sys, as a run's (the copy names them as generated nodes).
  MountProcfs(kernel, kernel.vfs().Lookup(kernel.vfs().root(), "/proc", {}, creds).value());
  MountSysfs(kernel, kernel.vfs().Lookup(kernel.vfs().root(), "/sys", {}, creds).value());
  Tracer tracer(kernel, {}, nullptr);

  int sync[2], report[2], gin[2], gout[2];
  EXPECT_EQ(pipe2(sync, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(report, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(gin, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(gout, O_CLOEXEC), 0);
  pid_t g = fork();
  if (g == 0) {
    dup2(gin[0], 0);
    dup2(gout[1], 1);
    ParentGuest(sync[0], report[1], root_tmpl, shared);
  }
  close(sync[0]);
  close(report[1]);
  close(gin[0]);
  close(gout[1]);
  fcntl(gout[0], F_SETFL, O_NONBLOCK);
  EXPECT_EQ(ReadLineFrom(report[0]), "unshared");
  std::string proc = "/proc/" + std::to_string(g);
  auto write_file = [](const std::string& path, const std::string& text) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (fd >= 0) close(fd);
    return ok;
  };
  std::string map = "0 " + std::to_string(base) + " 1\n1000 " + std::to_string(base + 1) + " 1\n";
  EXPECT_TRUE(write_file(proc + "/uid_map", map));
  EXPECT_TRUE(write_file(proc + "/gid_map", map));
  Say(sync[1], "mapped");
  EXPECT_EQ(ReadLineFrom(report[0]), "ready");
  {
    std::lock_guard<std::mutex> lock(kernel.mu());
    Task t;
    t.tid = g;
    t.ns_tid = ReadNsPid(g);
    t.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, g, 0)));
    t.fs = std::make_shared<FsContext>();
    t.fs->cwd = kernel.vfs().Lookup(kernel.vfs().root(), "/home/sandbox", {}, creds).value();
    t.process = std::make_shared<Process>();
    t.process->tgid = g;
    t.process->ns_pid = t.ns_tid;
    t.process->creds = creds;
    t.started = true;
    kernel.tasks().Add(std::move(t));
  }
  EXPECT_EQ(tracer.Seize(g), 0);
  tracer.set_leader(g);
  EXPECT_TRUE(tracer.GrantFork(ReadNsPid(g)));
  Say(sync[1], "go");

  int s2_status = 0;
  bool s2_reaped = false;
  auto pump = [&] {
    int status;
    pid_t pid;
    // (Only the traced tasks and S2: not the launcher's zygote.)
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
      if (s2 > 0 && pid == s2) {
        s2_status = status;
        s2_reaped = true;
      } else {
        tracer.OnWaitStatus(pid, status);
      }
    }
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<pid_t> held;
  while (held.empty() && std::chrono::steady_clock::now() < deadline) {
    pump();
    held = tracer.HeldForkChildren();
    if (held.empty()) usleep(1000);
  }
  EXPECT_EQ(held.size(), 1u);
  pid_t child_host = -1;
  if (!held.empty()) {
    {
      std::lock_guard<std::mutex> lock(kernel.mu());
      if (Task* t = kernel.tasks().FindByNsTid(held[0])) child_host = t->tid;
    }
    Tracer::ForkHandOff h;
    h.relay_ends = {gin[1], gout[0], -1};
    auto t0 = std::chrono::steady_clock::now();
    out.handoff = tracer.HandOffForkChild(held[0], sv[0], h);
    out.handoff_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // Until the child's first write reaches S2's pipe: seized, made whole, run.
    if (out.handoff.ok() && WaitReadable(s2_frames.get(), 5000)) {
      out.first_write_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - t0)
                               .count();
    }
  }
  if (out.handoff.ok()) {
    // The parent's later write, then the child may look.
    EXPECT_TRUE(
        WriteIntoSandbox(kernel.vfs(), creds, "late", 0644, "/home/sandbox/after.txt").ok());
    Say(s2_requests.get(), "go");
  }
  bool looked = false;
  // S2's output until it ends (the child's end).
  while (std::chrono::steady_clock::now() < deadline + std::chrono::seconds(10)) {
    pump();
    if (!WaitReadable(s2_frames.get(), 20)) continue;
    char buf[4096];
    ssize_t n = read(s2_frames.get(), buf, sizeof(buf));
    if (n <= 0) break;
    out.s2_out.append(buf, static_cast<size_t>(n));
    if (!looked && out.s2_out.find("END\n") != std::string::npos) {
      // Its mount view, while it waits: S2's store over the parent's.
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(
               "/proc/" + std::to_string(child_host) + "/root/.sentry-store", ec)) {
        out.store_listing += e.path().filename().string() + ",";
      }
      if (ec) out.store_listing = "error: " + ec.message();
      if (launched.control) {
        // A fork of the forked session: S2 grants it as S1 would (its
        // ForkParent), and withdraws it on a cancel; answered, never left
        // hanging.
        auto ask = [&](ControlOp op, uint32_t count, std::span<const int> fds) {
          ControlRequest req;
          req.op = static_cast<uint32_t>(op);
          req.id = 5;
          req.count = count;
          req.thread = 1;
          ControlReply reply;
          if (SendWithFds(launched.control.get(), &req, sizeof(req), fds) ==
                  static_cast<ssize_t>(sizeof(req)) &&
              WaitReadable(launched.control.get(), 5000) &&
              recv(launched.control.get(), &reply, sizeof(reply), 0) == sizeof(reply) &&
              reply.id == 5) {
            return static_cast<int>(reply.status);
          }
          return -1;
        };
        int hs[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, hs) == 0) {
          int handoff[1] = {hs[0]};
          out.control_status = ask(ControlOp::kForkPrepare, 1, handoff);
          out.cancel_status = ask(ControlOp::kForkCancel, 0, {});
          close(hs[0]);
          close(hs[1]);
        }
      }
      looked = true;
      Say(s2_requests.get(), "bye");
    }
  }
  if (s2 > 0 && !s2_reaped) s2_reaped = waitpid(s2, &s2_status, 0) == s2;
  if (s2_reaped && WIFEXITED(s2_status)) out.s2_exit = WEXITSTATUS(s2_status);
  char buf[4096];
  ssize_t n = read(gout[0], buf, sizeof(buf));
  if (n > 0) out.parent_out.assign(buf, static_cast<size_t>(n));
  out.parent_vfs_has_child_file =
      kernel.vfs().Lookup(kernel.vfs().root(), "/home/sandbox/child.txt", {}, creds).ok();
  Say(sync[1], "end");
  while (!tracer.leader_done() &&
         std::chrono::steady_clock::now() < deadline + std::chrono::seconds(15)) {
    pump();
    usleep(1000);
  }
  if (!tracer.leader_done()) kill(g, SIGKILL);
  launcher.reset();  // (its zygote reaped by it)
  while (waitpid(-1, nullptr, __WALL | WNOHANG) > 0) {
  }
  for (int fd : {sv[0], sync[1], report[0], gin[1], gout[0]}) close(fd);
  std::filesystem::remove_all(store_tmpl);
  rmdir(root_tmpl);
  return out;
}

bool Root() { return geteuid() == 0; }

TEST(AdoptTest, TheForkedChildRunsOnlyUnderItsOwnSupervisorWithItsOwnCopy) {
  if (!Root()) GTEST_SKIP() << "S2 adopts as root only";
  Scenario s = RunScenario(Shared::kLowerFileReadOnly);  // (a read-only lower file: allowed)
  std::cout << "hand-off (S1, until seized): " << s.handoff_us
            << " us; until the child's first write: " << s.first_write_us << " us\n";
  ASSERT_TRUE(s.handoff.ok()) << s.handoff.message();
  EXPECT_EQ(s.s2_exit, 0) << s.s2_out;
  // Its first instruction's write went to S2's pipe: it ran only after the
  // seize and the fd replacement; the parent's pipe never saw it.
  EXPECT_EQ(s.s2_out.rfind("MARKER\n", 0), 0u) << s.s2_out;
  EXPECT_EQ(s.parent_out.find("MARKER"), std::string::npos) << s.parent_out;
  EXPECT_NE(s.s2_out.find("before=from-parent\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("child=from-child\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("after=ERR2\n"), std::string::npos) << s.s2_out;  // ENOENT
  EXPECT_FALSE(s.parent_vfs_has_child_file);
  EXPECT_NE(s.s2_out.find("listener=null\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("kill=3\n"), std::string::npos) << s.s2_out;  // ESRCH: nobody else
  EXPECT_NE(s.s2_out.find("sid=1\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("pids=1,\n"), std::string::npos) << s.s2_out;
  EXPECT_EQ(s.s2_out.find("abstract=0\n"), std::string::npos) << s.s2_out;
  EXPECT_EQ(s.s2_out.find("loopback=0\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("host=sandbox\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("END\n"), std::string::npos) << s.s2_out;
  // Its view's store is S2's, over the parent's.
  EXPECT_EQ(s.store_listing.find("parent-store-file"), std::string::npos) << s.store_listing;
}

TEST(AdoptTest, TheSessionLauncherStartsTheChildsSupervisorInAdoptMode) {
  if (!Root()) GTEST_SKIP() << "S2 adopts as root only";
  Scenario s = RunScenario(Shared::kLowerFileReadOnly, /*via_launcher=*/true);
  ASSERT_TRUE(s.handoff.ok()) << s.handoff.message();
  EXPECT_EQ(s.s2_out.rfind("MARKER\n", 0), 0u) << s.s2_out;
  EXPECT_EQ(s.parent_out.find("MARKER"), std::string::npos) << s.parent_out;
  EXPECT_NE(s.s2_out.find("before=from-parent\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("after=ERR2\n"), std::string::npos) << s.s2_out;
  EXPECT_NE(s.s2_out.find("END\n"), std::string::npos) << s.s2_out;
  EXPECT_EQ(s.control_status, 0);  // a forked session's own fork is granted
  EXPECT_EQ(s.cancel_status, 0);
}

TEST(AdoptTest, AParentWithASharedWritableMappingHasItsForkRefused) {
  if (!Root()) GTEST_SKIP() << "S2 adopts as root only";
  // Writable, and read-only but of a file the parent could write elsewhere.
  for (Shared kind : {Shared::kWritable, Shared::kStoreFileReadOnly}) {
    Scenario s = RunScenario(kind);
    EXPECT_FALSE(s.handoff.ok());
    EXPECT_NE(s.handoff.message().find("shared mapping a fork cannot copy"), std::string::npos)
        << s.handoff.message();
    EXPECT_NE(s.handoff.message().find(kind == Shared::kWritable ? "(writable)"
                                                                 : "(not a lower-layer file)"),
              std::string::npos)
        << s.handoff.message();
    EXPECT_EQ(s.s2_exit, kExitSentryError);
    EXPECT_EQ(s.s2_out.find("MARKER"), std::string::npos);
    EXPECT_EQ(s.parent_out.find("MARKER"), std::string::npos);
  }
}

}  // namespace
}  // namespace sentry
