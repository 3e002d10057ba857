// The warm interpreter's phases of a Run (see warm_bootstrap.h): made ahead
// (WarmPython), idle until its client comes (IdleUntilReadable), and its one
// run (ServePython).
#include <dirent.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/base/fs_identity.h"
#include "sentry/pool/warm_bootstrap.h"
#include "sentry/run/guest_program.h"
#include "sentry/run/run_internal.h"

namespace sentry::run_internal {
namespace {

// How long Python (and its preloaded modules) may take to start.
constexpr int kWarmStartMs = 120 * 1000;

}  // namespace

std::optional<RunError> Run::WarmPython(const std::vector<std::string>& preload) {
  python_ = true;
  if (auto e = Prepare()) return e;
  if (auto e = BuildSandbox()) return e;
  if (auto e = AttachGuest()) return e;
  for (int fd : stdio_.child_fds()) {
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) kernel_->fds().TrustCallerObject(st);
  }
  vfs::Vfs& v = kernel_->vfs();
  cwd_ = v.Lookup(v.root(), tree_.home, {}, creds_).value();  // as Admit's (run.cc)
  ProgramLookup found = FindProgram(v, cwd_, creds_, "python3");
  if (found.exit_code) return RunError{kExitSentryError, found.error};
  launch_.path = found.path;
  launch_.argv = {"python3", "-c", WarmBootstrapSource()};
  launch_.argv.insert(launch_.argv.end(), preload.begin(), preload.end());
  launch_.envp = GuestEnv(o_, tree_, /*terminal=*/false);  // a terminal runs cold
  std::string too_high;
  launch_.rlimits =
      GuestRlimits(o_, cgroups_.has_memory(), cgroups_.has_cpu(), wall_rlimits_, &too_high);
  if (!too_high.empty()) return RunError{kExitSentryError, too_high};
  if (auto e = LaunchGuest()) return e;
  if (!IdleUntilReadable(stdio_.ready_fd(), kWarmStartMs)) {
    int s = tracer_->leader_done() ? tracer_->leader_status() : 0;
    if (tracer_->leader_done() && WIFEXITED(s) && WEXITSTATUS(s) == 3) {
      return RunError{kExitSentryError,
                      "a preloaded module failed to import (`python3 -c 'import MODULE'` says "
                      "why)"};
    }
    return RunError{kExitSentryError, "python3 did not reach the warm bootstrap"};
  }
  uint64_t ready;
  (void)!read(stdio_.ready_fd(), &ready, sizeof(ready));
  // The start-up pin is to the CPU this worker happened to be on while it
  // made the sandbox; the run pins again to the one it is on then (see
  // ServePython).
  std::lock_guard<std::mutex> lock(kernel_->mu());
  kernel_->colocation().Pause();
  return std::nullopt;
}

bool Run::IdleUntilReadable(int fd, int timeout_ms) {
  UniqueFd sig(signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK));
  // Exclusive on fd: the idle workers of a pool wait on one listener, and a
  // client wakes one of them, not all (woken together, four workers took
  // the CPUs from the one that serves: 0.3 ms a run). A woken worker whose
  // guest has died meanwhile leaves the connection to the client's
  // --pool-wait, after which it starts cold.
  UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  epoll_event on_fd{EPOLLIN | EPOLLEXCLUSIVE, {.fd = fd}};
  epoll_event on_sig{EPOLLIN, {.fd = sig.get()}};
  if (!ep || epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &on_fd) < 0 ||
      epoll_ctl(ep.get(), EPOLL_CTL_ADD, sig.get(), &on_sig) < 0) {
    return false;
  }
  double deadline = MonotonicMs() + timeout_ms;
  while (true) {
    int left = timeout_ms < 0 ? -1 : static_cast<int>(std::max(0.0, deadline - MonotonicMs()));
    epoll_event events[2];
    int r = epoll_wait(ep.get(), events, 2, left);
    if (r < 0 && errno != EINTR) return false;
    if (r == 0) return false;
    bool readable = false;
    for (int i = 0; i < r; ++i) readable |= events[i].data.fd == fd;
    // Before a run a user's signal (the pool stopping) ends the sandbox.
    signalfd_siginfo si;
    while (read(sig.get(), &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo != SIGCHLD) return false;
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
      if (pid == spawned_->init_pid()) {
        if (WIFEXITED(status) || WIFSIGNALED(status)) init_reaped_ = true;
        return false;
      }
      tracer_->OnWaitStatus(pid, status);
      if (tracer_->leader_done()) return false;
    }
    if (readable) return true;
  }
}

void Run::Prioritize() {
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, 0);
  if (errno == 0) refill_nice_ = nice;
  std::vector<pid_t> processes = {getpid()};
  if (spawned_) processes.insert(processes.end(), {spawned_->init_pid(), spawned_->guest_pid()});
  for (pid_t p : processes) {
    // nice is per thread on Linux: each task of the process.
    DIR* d = opendir(absl::StrCat("/proc/", p, "/task").c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      int tid = atoi(e->d_name);
      if (tid > 0) setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 0);
    }
    closedir(d);
  }
}

int Run::ServePython(const RunOptions& request, int peer_fd) {
  o_ = request;  // of the sandbox's shape (pool::TakeShape)
  peer_fd_ = client_fd_ = peer_fd;
  start_ms_ = MonotonicMs();
  clock_ = PhaseClock(start_ms_);
  cpu_base_ns_ = cgroups_.CpuNanos();
  cgroups_.SetLimits({o_.memory_bytes, o_.pids, o_.cpus, o_.cpu_period_us, o_.cpu_shares});
  cpu_share_.Restart(o_.cpus);  // the run's share, counted from here
  std::string why;
  if (!WarmPythonCanServe(o_, &why)) return Conclude(RunError{kExitSentryError, why});
  if (absl::Status s = stdio_.Configure(GuestStdio::OptionsFor(o_)); !s.ok()) {
    return Conclude(RunError{kExitSentryError, std::string(s.message())});
  }
  // The run's files come in as the sentry's own (a cold run's Admit does
  // this before the guest starts); the guest's threads keep theirs.
  DropFsIdentity(0, 0);
  // A warm run's trace begins with its request (the interpreter's start was
  // the pool's).
  if (auto e = StartTrace()) return Conclude(e);
  {
    // The guest runs where this thread is about to wait, as a cold run's
    // does (not where the warm-up ran: that CPU may be busy now).
    std::lock_guard<std::mutex> lock(kernel_->mu());
    kernel_->colocation().Resume();
  }
  if (auto e = AdmitPython()) return Conclude(e);
  if (!DropFsIdentity(GuestFsId(), GuestFsGid())) {
    return Conclude(RunError{kExitSentryError, "cannot take an unprivileged file identity"});
  }
  Supervise();
  return Conclude(std::nullopt);
}

// Admit's work for a guest that has started: the files, the rlimits, then
// the request on the bootstrap's stdin, which lets the script run.
std::optional<RunError> Run::AdmitPython() {
  vfs::Vfs& v = kernel_->vfs();
  kernel_->set_memory_bytes(o_.memory_bytes);
  if (auto e = CopyIn()) return e;
  std::string cwd;
  if (auto e = MakeGuestCwd(&cwd)) return e;
  if (auto e = WriteRequestFiles(cwd)) return e;
  script_ = CopyScriptArgument(o_, v, creds_, cwd);
  if (auto e = ApplyRequestRlimits()) return e;
  std::string request = EncodeBootstrapRequest(o_.argv, o_.env, o_.workdir.empty() ? "" : cwd);
  if (request.size() > kMaxBootstrapRequest) {
    return RunError{kExitSentryError, "the command line is too long for a warm interpreter"};
  }
  stdio_.set_stdin_prefix(std::move(request));
  stdio_.Start();
  clock_.Mark("admit");
  return std::nullopt;
}

std::optional<RunError> Run::WriteRequestFiles(const std::string& cwd) {
  for (const auto& [guest, data] : o_.files) {
    std::string path = !guest.empty() && guest[0] == '/' ? guest : absl::StrCat(cwd, "/", guest);
    if (absl::Status s = WriteIntoSandbox(kernel_->vfs(), creds_, data, 0644, path); !s.ok()) {
      return RunError{kExitSentryError, absl::StrCat("file ", guest, ": ", s.message())};
    }
  }
  return std::nullopt;
}

namespace {

struct RlimitChange {
  int resource;
  rlimit value;
};

struct SetRlimitsJob {
  pid_t pid;
  uid_t owner;
  const std::vector<RlimitChange>* changes;
  int failed_resource = -1;
  int err = 0;
};

// The body of SetGuestRlimits's child: raw calls only (it shares the
// sentry's memory on a stack of its own), not instrumented.
__attribute__((no_sanitize("address", "undefined"))) int SetRlimitsAsOwner(void* arg) {
  auto* job = static_cast<SetRlimitsJob*>(arg);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  caps[0].effective = caps[0].permitted = 1u << CAP_SYS_RESOURCE;
  if (syscall(SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 ||
      syscall(SYS_setresgid, job->owner, job->owner, job->owner) < 0 ||
      syscall(SYS_setresuid, job->owner, job->owner, job->owner) < 0) {
    job->err = errno;
    return 1;
  }
  // Kept where the sentry has it (a container's root may not: then a hard
  // limit cannot be raised, as by the sentry itself).
  (void)syscall(SYS_capset, &hdr, caps);
  for (const RlimitChange& c : *job->changes) {
    if (syscall(SYS_prlimit64, job->pid, c.resource, &c.value, nullptr) < 0) {
      job->failed_resource = c.resource;
      job->err = errno;
      return 1;
    }
  }
  return 0;
}

// Sets the guest's rlimits from the sentry; nullopt, or {resource, errno}.
// Linux lets the caller set them on a process in another user namespace
// only through CAP_SYS_RESOURCE over that namespace, which a root without
// it (this CI's root has none) gets only as the namespace's owner. Root's
// sandboxes' namespaces are made by their own ids (sentry/run/spawn.h): so
// a child process takes the owner's id, which may act on the namespace's
// processes, and keeps CAP_SYS_RESOURCE where it has it (to raise a hard
// limit, which Linux checks in the host's namespace).
std::optional<std::pair<int, int>> SetGuestRlimits(pid_t pid, uid_t owner,
                                                   const std::vector<RlimitChange>& changes) {
  if (owner == 0) {
    for (const RlimitChange& c : changes) {
      if (prlimit(pid, static_cast<__rlimit_resource>(c.resource), &c.value, nullptr) < 0) {
        return std::make_pair(c.resource, errno);
      }
    }
    return std::nullopt;
  }
  SetRlimitsJob job{pid, owner, &changes};
  std::vector<char> stack(64 << 10);
  pid_t child =
      clone(SetRlimitsAsOwner, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &job);
  if (child < 0) return std::make_pair(-1, errno);
  while (waitpid(child, nullptr, __WALL) < 0 && errno == EINTR) {
  }
  if (job.err != 0) return std::make_pair(job.failed_resource, job.err);
  return std::nullopt;
}

}  // namespace

// The guest set the pool's rlimits before its execve; the request's replace
// them (the sentry may raise them: it is root where the guest is not).
std::optional<RunError> Run::ApplyRequestRlimits() {
  std::string too_high;
  auto limits =
      GuestRlimits(o_, cgroups_.has_memory(), cgroups_.has_cpu(), wall_rlimits_, &too_high);
  if (!too_high.empty()) return RunError{kExitSentryError, too_high};
  std::vector<RlimitChange> changes;
  for (const GuestLaunch::Rlimit& r : limits) {
    rlimit l{r.value, r.value};
    // CPU time counts from the process's start: the warm start's is added.
    if (r.resource == RLIMIT_CPU && l.rlim_cur != RLIM_INFINITY) {
      l.rlim_cur = l.rlim_max = r.value + cpu_base_ns_ / 1000000000 + 1;
    }
    changes.push_back({r.resource, l});
  }
  // A namespace made by the sandbox's own id (spawn.h): set by that id.
  uid_t owner = id_slot_.held() ? host_id_base_ : 0;
  if (auto failed = SetGuestRlimits(spawned_->guest_pid(), owner, changes)) {
    return RunError{kExitSentryError, absl::StrCat("cannot set the guest's rlimit ", failed->first,
                                                   ": ", std::strerror(failed->second))};
  }
  return std::nullopt;
}

}  // namespace sentry::run_internal
