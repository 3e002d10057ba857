#include "sentry/run/run.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "loader/filter.h"
#include "sentry/base/fs_identity.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/procfs.h"
#include "sentry/platform/notify_loop.h"
#include "sentry/platform/tracer.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/run/spawn.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

int Fail(const std::string& message, int code = kExitSentryError) {
  std::fprintf(stderr, "sentry: %s\n", message.c_str());
  return code;
}

std::vector<std::string> GuestEnv(const RunOptions& o, const TreeConfig& tree) {
  std::vector<std::string> env = {
      "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
      "HOME=" + (o.root ? std::string("/root") : tree.home),
      "USER=" + (o.root ? std::string("root") : tree.user),
      "LOGNAME=" + (o.root ? std::string("root") : tree.user),
      "LANG=C.UTF-8",
      "LC_ALL=C.UTF-8",
      "HOSTNAME=" + tree.hostname,
      "TMPDIR=/tmp",
  };
  if (isatty(STDOUT_FILENO)) {
    const char* term = getenv("TERM");
    env.push_back(absl::StrCat("TERM=", term && *term ? term : "xterm"));
  }
  for (const std::string& kv : o.env) env.push_back(kv);
  return env;
}

// The first argument that names a host file is the script: it is copied in at
// the same relative path under the guest's cwd (or the same absolute path).
void CopyScriptArgument(const RunOptions& o, vfs::Vfs& v, const vfs::Creds& creds,
                        const TreeConfig& tree, std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.empty() || a[0] == '-') continue;
    struct stat st;
    // A plain file only: never a symlink that could name something else.
    if (lstat(a.c_str(), &st) == 0 && S_ISREG(st.st_mode) && a.find("..") == std::string::npos) {
      std::string guest = a[0] == '/' ? a : tree.home + "/" + a;
      auto r = v.Lookup(v.root(), guest, {}, creds);
      if (!r.ok()) (void)CopyIntoSandbox(v, creds, a, guest);  // unless the sandbox has it
    }
    return;
  }
}

struct SignalFds {
  UniqueFd sig, timer;
};

}  // namespace

int RunSandbox(const RunOptions& o) {
  if (o.argv.empty()) return Fail("no command given; usage: sentry run [flags] -- CMD [ARGS...]");
  TreeConfig tree;
  if (o.root) {
    tree.uid = 0;
    tree.gid = 0;
  }
  LoaderSpec spec;
  spec.lower_roots = tree.lower_roots;
  spec.store_options = absl::StrCat("mode=0755,size=", o.disk_bytes);
  spec.uid = tree.uid;
  spec.gid = tree.gid;
  spec.hostname = tree.hostname;
  spec.filter = BuildSeccompFilter(SyscallTable());
  spec.argv = o.argv;
  spec.envp = GuestEnv(o, tree);

  // SIGCHLD and the user's signals are read from a signalfd by this thread;
  // every thread (the notification loop included) inherits the mask.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);

  auto spawned = Spawned::Start(spec);
  if (!spawned.ok()) return Fail(std::string(spawned.status().message()));
  Spawned& sp = *spawned;
  auto cleanup_init = [&] {
    kill(sp.init_pid(), SIGKILL);
  };

  uid_t store_owner = kHostIdBase;
  auto store = std::make_unique<vfs::Store>(sp.TakeStoreDir(), store_owner, store_owner);
  auto vfs_or = BuildSandboxTree(tree, std::move(store));
  if (!vfs_or.ok()) {
    cleanup_init();
    return Fail(std::string(vfs_or.status().message()));
  }
  std::unique_ptr<vfs::Vfs> v = std::move(*vfs_or);
  vfs::Creds creds;
  creds.uid = tree.uid;
  creds.gid = tree.gid;
  for (const auto& [host, guest] : o.copies) {
    absl::Status s = CopyIntoSandbox(*v, creds, host, guest);
    if (!s.ok()) {
      cleanup_init();
      return Fail(absl::StrCat("--copy ", host, ":", guest, ": ", s.message()));
    }
  }
  std::vector<std::string> argv = o.argv;
  if (o.copy_script) CopyScriptArgument(o, *v, creds, tree, argv);

  vfs::NodeRef home = v->Lookup(v->root(), o.root ? "/root" : tree.home, {}, creds).value();
  // Find the program as execvp would, to fail early with a clear message.
  std::string program = o.argv[0];
  if (program.find('/') == std::string::npos) {
    std::string found;
    for (const char* dir : {"/usr/local/bin/", "/usr/bin/", "/bin/", "/usr/local/sbin/",
                            "/usr/sbin/", "/sbin/"}) {
      auto n = v->Lookup(v->root(), dir + program, {}, creds);
      if (n.ok() && (*n)->kind() == vfs::NodeKind::kFile) {
        found = dir + program;
        break;
      }
    }
    if (found.empty()) {
      cleanup_init();
      return Fail(absl::StrCat(program,
                               ": command not found in the sandbox (it shows /usr, /bin, /sbin "
                               "and /lib of the host; copy other programs in with --copy)"),
                  kExitNotFound);
    }
    program = found;
  } else {
    auto n = v->Lookup(home, program, {}, creds);
    if (!n.ok()) {
      cleanup_init();
      return Fail(absl::StrCat(program, ": ", std::strerror(n.error()), " in the sandbox"),
                  n.error() == ENOENT ? kExitNotFound : kExitCannotExec);
    }
  }

  KernelConfig kc;
  kc.hostname = tree.hostname;
  struct stat netns;
  if (stat(absl::StrCat("/proc/", sp.init_pid(), "/ns/net").c_str(), &netns) == 0) {
    kc.net_ns_ino = netns.st_ino;
  }
  Kernel kernel(std::move(v), kc);
  kernel.init_host_pid = sp.init_pid();
  MountProcfs(kernel, kernel.vfs().Lookup(kernel.vfs().root(), "/proc", {}, creds).value());
  FILE* trace = o.trace ? stderr : nullptr;
  Tracer tracer(kernel, tree.lower_roots, trace);

  absl::Status st = sp.AwaitGuest();
  if (!st.ok()) {
    cleanup_init();
    return Fail(std::string(st.message()));
  }
  Unotify unotify(sp.TakeListener());
  if (!unotify.SetSyncWakeup() && trace) {
    std::fprintf(stderr, "sentry: notice: no synchronous wake-up (Linux < 6.6): slower traps\n");
  }
  {
    std::lock_guard<std::mutex> lock(kernel.mu());
    Task t;
    t.tid = sp.guest_pid();
    t.ns_tid = ReadNsPid(t.tid);
    t.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, t.tid, 0)));
    t.fs = std::make_shared<FsContext>();
    t.fs->cwd = home;
    t.process = std::make_shared<Process>();
    t.process->tgid = t.tid;
    t.process->ns_pid = t.ns_tid;
    t.process->creds = creds;
    t.started = true;
    kernel.tasks().Add(std::move(t));
  }
  if (int r = tracer.Seize(sp.guest_pid()); r < 0) {
    cleanup_init();
    return Fail(absl::StrCat("cannot trace the guest: ", std::strerror(-r)));
  }
  tracer.set_leader(sp.guest_pid());
  Dispatcher dispatcher(trace);
  // Both guest-facing threads (this one answers execve) reach host files as an
  // unprivileged user from here on.
  constexpr uid_t kFsId = kHostIdBase + 1;
  NotifyLoop loop(kernel, unotify, dispatcher, kFsId);
  loop.Start();
  if (!DropFsIdentity(kFsId, kFsId)) {
    cleanup_init();
    return Fail("cannot take an unprivileged file identity");
  }
  // The guest's first execve names the program as found above; the sentry
  // answers it like any other.
  st = sp.Go(program);
  if (!st.ok()) {
    cleanup_init();
    return Fail(std::string(st.message()));
  }

  SignalFds fds;
  fds.sig = UniqueFd(signalfd(-1, &mask, SFD_CLOEXEC));
  fds.timer = UniqueFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  if (o.timeout_sec > 0) {
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(o.timeout_sec);
    its.it_value.tv_nsec = static_cast<long>((o.timeout_sec - its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    timerfd_settime(fds.timer.get(), 0, &its, nullptr);
  }
  bool timed_out = false;
  int user_signal = 0;
  bool init_reaped = false;
  while (!init_reaped) {
    pollfd pfd[2] = {{fds.sig.get(), POLLIN, 0}, {fds.timer.get(), POLLIN, 0}};
    if (poll(pfd, 2, -1) < 0 && errno != EINTR) break;
    if (pfd[1].revents & POLLIN) {
      timed_out = true;
      cleanup_init();
      uint64_t ticks;
      (void)!read(fds.timer.get(), &ticks, sizeof(ticks));
    }
    if (pfd[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(fds.sig.get(), &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo != SIGCHLD) {
          user_signal = static_cast<int>(si.ssi_signo);
          cleanup_init();
        }
        break;
      }
      int status;
      pid_t pid;
      while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
        if (pid == sp.init_pid()) {
          if (WIFEXITED(status) || WIFSIGNALED(status)) init_reaped = true;
          continue;
        }
        tracer.OnWaitStatus(pid, status);
        if (tracer.leader_done()) cleanup_init();
      }
    }
  }
  loop.Stop();
  if (!tracer.violation().empty()) return Fail(tracer.violation(), kExitSentryError);
  if (timed_out) return Fail(absl::StrCat("timed out after ", o.timeout_sec, "s"), kExitTimeout);
  if (user_signal) return 128 + user_signal;
  if (tracer.leader_done()) {
    int s = tracer.leader_status();
    if (WIFEXITED(s)) return WEXITSTATUS(s);
    if (WIFSIGNALED(s)) return 128 + WTERMSIG(s);
  }
  return Fail("the guest ended without an exit status");
}

}  // namespace sentry
