#include "sentry/run/run.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "loader/filter.h"
#include "loader/prebuilt_filter.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/sha256.h"
#include "sentry/kernel/devpts.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/procfs.h"
#include "sentry/platform/notify_loop.h"
#include "sentry/platform/tracer.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/audit_log.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/guest_program.h"
#include "sentry/run/phase_clock.h"
#include "sentry/run/result.h"
#include "sentry/run/sandbox_net.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/run/seccomp_only.h"
#include "sentry/run/spawn.h"
#include "sentry/run/stdio.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

// A failure that ends the run before the guest starts, with its exit code.
struct RunError {
  int code;
  std::string message;
};

class Run {
 public:
  // warm: a sandbox made before its command is known (see WarmSandbox); o is
  // then the pool's shape, and Serve gives the request.
  Run(RunOptions o, bool warm)
      : o_(std::move(o)), warm_(warm), start_ms_(MonotonicMs()), clock_(start_ms_) {}
  int Execute();
  std::optional<RunError> Warm();
  int Serve(const RunOptions& request, int peer_fd);

 private:
  std::optional<RunError> Prepare();
  std::optional<RunError> BuildSandbox();
  std::optional<RunError> Admit();
  std::optional<RunError> StartGuest();
  std::optional<RunError> UseSeccompWallAlone(const std::string& why);
  absl::StatusOr<Spawned> StartSandbox();
  void Supervise();
  int Conclude(std::optional<RunError> error);
  void KillSandbox() {
    // Without a pid namespace nothing dies with the loader: every process of
    // the guest's uid is killed instead, and the loader, their subreaper,
    // reaps them and exits when it has no child left.
    // One sweep is enough: after it no process of the uid is left to fork,
    // and the loader makes the guest only once.
    if (seccomp_only()) {
      if (!uid_swept_.exchange(true)) KillEveryProcessOf(guest_host_uid_);
    } else if (spawned_) {
      kill(spawned_->init_pid(), SIGKILL);
    }
  }
  // No namespaces: the seccomp wall alone (see UseSeccompWallAlone).
  bool seccomp_only() const { return !spec_.namespaces; }
  // The host uid the guest's processes run as.
  uid_t GuestHostUid() const {
    if (seccomp_only()) return guest_host_uid_;
    return tree_.uid == 0 ? kHostIdBase : kHostIdBase + 1;
  }

  RunOptions o_;
  const bool warm_;
  int peer_fd_ = -1;  // a pool's client: its hang-up or signal ends the run
  double start_ms_;
  PhaseClock clock_;
  TreeConfig tree_;
  LoaderSpec spec_;
  GuestStdio stdio_;
  Cgroups cgroups_;
  std::optional<Spawned> spawned_;
  // Set once the first sweep of the guest's uid is done (see KillSandbox).
  std::atomic<bool> uid_swept_{false};
  uid_t guest_host_uid_ = 0;  // with seccomp_only(), the run's own host uid
  HostStore host_store_;      // with seccomp_only(), the backing store
  std::unique_ptr<Kernel> kernel_;
  SandboxNet net_;  // after kernel_: stopped before the kernel goes
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<Unotify> unotify_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<NotifyLoop> loop_;
  vfs::Creds creds_;
  vfs::NodeRef cwd_;
  GuestLaunch launch_;
  std::vector<GuestLaunch::Rlimit> wall_rlimits_;  // those of the seccomp wall alone
  std::string script_;
  sigset_t mask_;
  bool timed_out_ = false;
  std::atomic<bool> watchdog_fired_{false};  // the timeout, seen by the watchdog
  int user_signal_ = 0;
};

std::optional<RunError> Run::Prepare() {
  if (o_.root) {
    tree_.uid = 0;
    tree_.gid = 0;
  }
  creds_.uid = tree_.uid;
  creds_.gid = tree_.gid;
  spec_.lower_roots = tree_.lower_roots;
  spec_.store_options = absl::StrCat("mode=0755,size=", o_.disk_bytes);
  spec_.uid = tree_.uid;
  spec_.gid = tree_.gid;
  spec_.hostname = tree_.hostname;
  std::span<const sock_filter> filter = PrebuiltSeccompFilter();
  spec_.filter.assign(filter.begin(), filter.end());

  GuestStdio::Options so;
  so.capture = o_.json;
  so.stdin_path = o_.stdin_path;
  so.max_output = o_.max_output;
  so.pipe_uid = so.pipe_gid = GuestHostUid();
  so.relay_all = warm_;
  if (absl::Status s = stdio_.Setup(so); !s.ok()) {
    return RunError{kExitSentryError, std::string(s.message())};
  }
  spec_.stdio = stdio_.child_fds();
  if (o_.namespaces == NamespaceMode::kOff) {
    if (auto e = UseSeccompWallAlone("--no-namespaces")) return e;
  }
  clock_.Mark("prepare");
  Cgroups::SweepStale();
  if (o_.cgroups) {
    CgroupLimits limits{o_.memory_bytes, o_.pids, o_.cpus};
    cgroups_.Create(absl::StrCat("sentry-", getpid()), limits, /*every_controller=*/warm_);
  }
  clock_.Mark("cgroups");
  return std::nullopt;
}

std::optional<RunError> Run::BuildSandbox() {
  // SIGCHLD and the user's signals are read from a signalfd by this thread;
  // every thread made from here on inherits the mask.
  sigemptyset(&mask_);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&mask_, s);
  pthread_sigmask(SIG_BLOCK, &mask_, nullptr);

  auto spawned = StartSandbox();
  if (!spawned.ok()) return RunError{kExitSentryError, std::string(spawned.status().message())};
  spawned_.emplace(std::move(*spawned));
  clock_.Mark("namespaces");

  std::unique_ptr<vfs::Store> store;
  if (seccomp_only()) {
    store = std::make_unique<vfs::Store>(host_store_.OpenDir(), guest_host_uid_, guest_host_uid_);
    store->set_exec_dir(host_store_.path());
  } else {
    store = std::make_unique<vfs::Store>(spawned_->TakeStoreDir(), kHostIdBase, kHostIdBase);
  }
  auto vfs_or = BuildSandboxTree(tree_, std::move(store));
  if (!vfs_or.ok()) return RunError{kExitSentryError, std::string(vfs_or.status().message())};
  std::unique_ptr<vfs::Vfs> v = std::move(*vfs_or);
  // The guest's names and links cost the sentry memory: an eighth of --disk.
  v->set_metadata_limit(std::max<uint64_t>(o_.disk_bytes / 8, 1 << 20));
  clock_.Mark("vfs");
  KernelConfig kc;
  kc.hostname = tree_.hostname;
  kc.memory_bytes = o_.memory_bytes;
  kc.host_id_base = kHostIdBase;
  kc.user_uid = tree_.uid;
  kc.user_gid = tree_.gid;
  kc.user_host_uid = kc.user_host_gid = GuestHostUid();
  kc.namespaces = !seccomp_only();
  struct stat netns;
  if (stat(absl::StrCat("/proc/", spawned_->init_pid(), "/ns/net").c_str(), &netns) == 0) {
    kc.net_ns_ino = netns.st_ino;
  }
  kernel_ = std::make_unique<Kernel>(std::move(v), kc);
  kernel_->init_host_pid = spawned_->init_pid();
  MountProcfs(*kernel_, kernel_->vfs().Lookup(kernel_->vfs().root(), "/proc", {}, creds_).value());
  auto dev = kernel_->vfs().Lookup(kernel_->vfs().root(), "/dev", {}, creds_);
  MountDevpts(*kernel_, dev.ok() ? dev.value() : nullptr, spawned_->TakePtsDir());
  clock_.Mark("kernel");
  // Without a network namespace there is no loopback of the sandbox's own for
  // a DNS server to listen on (and the guest can make no network socket).
  if (!seccomp_only()) net_.Start(*kernel_, spawned_->init_pid(), o_);
  clock_.Mark("network");
  return std::nullopt;
}

// What depends on the command: the guest's stdio relays, the files copied in,
// its cwd, program, argv, environment and rlimits.
std::optional<RunError> Run::Admit() {
  stdio_.Start();
  vfs::Vfs& v = kernel_->vfs();
  kernel_->set_memory_bytes(o_.memory_bytes);
  for (const auto& [host, guest] : o_.copies) {
    if (absl::Status s = CopyIntoSandbox(v, creds_, host, guest); !s.ok()) {
      return RunError{kExitSentryError,
                      absl::StrCat("--copy ", host, ":", guest, ": ", s.message())};
    }
  }
  std::string cwd = o_.root ? "/root" : tree_.home;
  if (!o_.workdir.empty()) {
    cwd = o_.workdir;
    if (auto made = MakeSandboxDirs(v, creds_, cwd); !made.ok()) {
      return RunError{kExitSentryError,
                      absl::StrCat("--workdir ", cwd, ": ", made.status().message())};
    }
  }
  script_ = CopyScriptArgument(o_, v, creds_, cwd);
  cwd_ = v.Lookup(v.root(), cwd, {}, creds_).value();

  ProgramLookup found = FindProgram(v, cwd_, creds_, o_.argv[0]);
  if (found.exit_code) return RunError{found.exit_code, found.error};
  launch_.path = found.path;
  launch_.argv = o_.argv;
  launch_.envp = GuestEnv(o_, tree_);
  launch_.rlimits = wall_rlimits_;
  // Where no cgroup holds, rlimits in the guest still do (per process).
  if (o_.memory_bytes && !cgroups_.has_memory()) {
    launch_.rlimits.push_back({RLIMIT_AS, o_.memory_bytes});
  }
  if (o_.cpus > 0 && !cgroups_.has_cpu() && o_.timeout_sec > 0) {
    launch_.rlimits.push_back({RLIMIT_CPU, static_cast<uint64_t>(o_.timeout_sec * o_.cpus) + 1});
  }
  // RLIMIT_NPROC is counted per user namespace and uid (the kernel's ucounts),
  // so it is this sandbox's own task count, threads included: the pids cap
  // holds without the pids cgroup too (which also counts the sandbox's init).
  if (o_.pids) launch_.rlimits.push_back({RLIMIT_NPROC, o_.pids});
  launch_.rlimits.push_back({RLIMIT_NOFILE, o_.nofile});
  // The guest sets them after it dropped its capabilities, so it can only
  // lower them: a limit above the sentry's own hard one is refused here.
  for (const GuestLaunch::Rlimit& r : launch_.rlimits) {
    rlimit own;
    if (getrlimit(r.resource, &own) == 0 && own.rlim_max != RLIM_INFINITY &&
        r.value > own.rlim_max) {
      return RunError{
          kExitSentryError,
          absl::StrCat("a limit of ", r.value, " is above this host's hard limit of ", own.rlim_max,
                       " (resource ", r.resource, "); ask for at most that")};
    }
  }
  clock_.Mark("admit");
  return std::nullopt;
}

std::optional<RunError> Run::StartGuest() {
  FILE* trace = o_.trace ? stderr : nullptr;
  tracer_ = std::make_unique<Tracer>(*kernel_, tree_.lower_roots, trace);
  if (absl::Status st = spawned_->AwaitGuest(); !st.ok()) {
    return RunError{kExitSentryError, std::string(st.message())};
  }
  clock_.Mark("loader");
  unotify_ = std::make_unique<Unotify>(spawned_->TakeListener());
  if (!unotify_->SetSyncWakeup() && trace) {
    std::fprintf(stderr, "sentry: notice: no synchronous wake-up (Linux < 6.6): slower traps\n");
  }
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    Task t;
    t.tid = spawned_->guest_pid();
    t.ns_tid = ReadNsPid(t.tid);
    t.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, t.tid, 0)));
    t.fs = std::make_shared<FsContext>();
    t.fs->cwd = cwd_;
    t.process = std::make_shared<Process>();
    t.process->tgid = t.tid;
    t.process->ns_pid = t.ns_tid;
    t.process->creds = creds_;
    t.started = true;
    kernel_->tasks().Add(std::move(t));
  }
  if (int r = tracer_->Seize(spawned_->guest_pid()); r < 0) {
    return RunError{kExitSentryError, absl::StrCat("cannot trace the guest: ", std::strerror(-r))};
  }
  tracer_->set_leader(spawned_->guest_pid());
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    kernel_->colocation().Start(spawned_->guest_pid());
  }
  if (seccomp_only()) {
    std::vector<std::string> dirs = tree_.lower_roots;
    dirs.push_back(host_store_.path());
    tracer_->CheckMappingsUnder(std::move(dirs));
  }
  dispatcher_ = std::make_unique<Dispatcher>(trace, !seccomp_only());
  // Both guest-facing threads (this one answers execve) reach host files as an
  // unprivileged user from here on (without namespaces, the guest's own uid,
  // the only one that may enter the store).
  const uid_t kFsId = seccomp_only() ? guest_host_uid_ : kHostIdBase + 1;
  loop_ = std::make_unique<NotifyLoop>(*kernel_, *unotify_, *dispatcher_, kFsId);
  loop_->Start();
  if (!DropFsIdentity(kFsId, kFsId)) {
    return RunError{kExitSentryError, "cannot take an unprivileged file identity"};
  }
  // The guest's first execve names the program as found above; the sentry
  // answers it like any other.
  if (absl::Status st = spawned_->Go(launch_); !st.ok()) {
    return RunError{kExitSentryError, std::string(st.message())};
  }
  clock_.Mark("supervisor");
  return std::nullopt;
}

void Run::Supervise() {
  UniqueFd sig(signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK));
  UniqueFd timer(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  if (o_.timeout_sec > 0) {
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(o_.timeout_sec);
    its.it_value.tv_nsec = static_cast<long>((o_.timeout_sec - its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    timerfd_settime(timer.get(), 0, &its, nullptr);
  }
  // The timeout must hold even if this thread is held up (waiting for the
  // kernel lock behind a handler that waits on the guest): a watchdog that
  // needs nothing but the init pid kills the sandbox shortly after it.
  std::mutex watchdog_mu;
  std::condition_variable watchdog_cv;
  bool supervised = false;
  std::thread watchdog;
  if (o_.timeout_sec > 0) {
    watchdog = std::thread([&] {
      constexpr double kSlackSec = 0.1;
      std::unique_lock<std::mutex> lock(watchdog_mu);
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration<double>(o_.timeout_sec + kSlackSec);
      if (!watchdog_cv.wait_until(lock, deadline, [&] { return supervised; })) {
        watchdog_fired_ = true;
        KillSandbox();
      }
    });
  }
  // A signal the user sends sentry goes to the guest first; the sandbox ends
  // when the guest does, or after this grace, or at a second signal.
  UniqueFd grace(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  constexpr time_t kGraceSec = 2;
  // The start-up pin ends when the guest traps rarely: it computes, and may
  // do it on any CPU (see sentry/kernel/colocation.h).
  UniqueFd pin_check(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  constexpr long kPinCheckNs = 50 * 1000 * 1000;
  constexpr uint64_t kMinTrapsPerCheck = 20;  // 400 a second
  uint64_t traps_seen = 0;
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    if (kernel_->colocation().active()) {
      itimerspec its{{0, kPinCheckNs}, {0, kPinCheckNs}};
      timerfd_settime(pin_check.get(), 0, &its, nullptr);
    }
  }
  bool init_reaped = false;
  bool leader_seen_done = false;
  // A user signal (from this process's signalfd, or from a pool's client)
  // goes to the guest; a second one, or the grace's end, ends the sandbox.
  auto user_signal = [&](int signo) {
    if (user_signal_ == 0) {
      user_signal_ = signo;
      kill(spawned_->guest_pid(), user_signal_);
      itimerspec its{};
      its.it_value.tv_sec = kGraceSec;
      timerfd_settime(grace.get(), 0, &its, nullptr);
    } else {
      KillSandbox();
    }
  };
  while (!init_reaped) {
    pollfd pfd[5] = {{sig.get(), POLLIN, 0},
                     {timer.get(), POLLIN, 0},
                     {grace.get(), POLLIN, 0},
                     {pin_check.get(), POLLIN, 0},
                     {peer_fd_, POLLIN, 0}};
    if (poll(pfd, peer_fd_ >= 0 ? 5 : 4, -1) < 0 && errno != EINTR) break;
    uint64_t ticks;
    if (pfd[3].revents & POLLIN) {
      (void)!read(pin_check.get(), &ticks, sizeof(ticks));
      uint64_t traps = loop_->handled();
      if (traps - traps_seen < kMinTrapsPerCheck * ticks) {
        std::lock_guard<std::mutex> lock(kernel_->mu());
        kernel_->colocation().End();
        itimerspec off{};
        timerfd_settime(pin_check.get(), 0, &off, nullptr);
      }
      traps_seen = traps;
    }
    if (peer_fd_ >= 0 && pfd[4].revents) {
      // A pool's client forwards the signals it gets; when it is gone
      // (killed, or its caller hung up) nobody waits for the run: it ends.
      int32_t signo = 0;
      if (read(peer_fd_, &signo, sizeof(signo)) == sizeof(signo) && signo > 0 && signo < NSIG) {
        user_signal(signo);
      } else {
        peer_fd_ = -1;
        if (user_signal_ == 0) user_signal_ = SIGHUP;
        KillSandbox();
      }
    }
    if (pfd[1].revents & POLLIN) {
      (void)!read(timer.get(), &ticks, sizeof(ticks));
      if (!tracer_->leader_done()) timed_out_ = true;
      KillSandbox();
    }
    if (pfd[2].revents & POLLIN) {
      (void)!read(grace.get(), &ticks, sizeof(ticks));
      KillSandbox();
    }
    if (!(pfd[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    while (read(sig.get(), &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo != SIGCHLD) user_signal(static_cast<int>(si.ssi_signo));
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
      if (pid == spawned_->init_pid()) {
        if (WIFEXITED(status) || WIFSIGNALED(status)) init_reaped = true;
        continue;
      }
      tracer_->OnWaitStatus(pid, status);
      if (tracer_->leader_done() && !leader_seen_done) {
        leader_seen_done = true;
        clock_.Mark("guest");
      }
      if (tracer_->leader_done()) KillSandbox();
    }
  }
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(watchdog_mu);
      supervised = true;
    }
    watchdog_cv.notify_all();
    watchdog.join();
  }
  if (!leader_seen_done) clock_.Mark("guest");  // killed with the sandbox (timeout, signal)
  clock_.Mark("sandbox exit");
}

int Run::Conclude(std::optional<RunError> error) {
  RunResult r;
  // The guest is gone or going: this thread works for the operator again
  // (cgroups to remove, the log to write).
  DropFsIdentity(0, 0);
  if (error) {
    KillSandbox();
    if (spawned_) {
      kill(spawned_->init_pid(), SIGKILL);
      int status;
      while (waitpid(spawned_->init_pid(), &status, __WALL) < 0 && errno == EINTR) {
      }
    }
  }
  if (loop_) loop_->Stop();
  stdio_.Finish();
  clock_.Mark("drain");
  r.duration_ms = static_cast<uint64_t>(MonotonicMs() - start_ms_);
  r.stdout_text = stdio_.out().Text();
  r.stderr_text = stdio_.err().Text();
  r.stdout_dropped = stdio_.out().dropped();
  r.stderr_dropped = stdio_.err().dropped();
  r.cpu_ms = cgroups_.CpuNanos() / 1000000;
  r.peak_memory_bytes = cgroups_.PeakMemoryBytes();
  r.walls = {"seccomp"};
  if (!seccomp_only()) r.walls.push_back("namespaces");
  for (const std::string& w : cgroups_.enforced()) r.walls.push_back(w);
  if (!cgroups_.has_memory() && o_.memory_bytes) r.walls.push_back("rlimit-as");
  if (o_.pids) r.walls.push_back("rlimit-nproc");
  if (o_.cpus > 0 && !cgroups_.has_cpu() && o_.timeout_sec > 0) r.walls.push_back("rlimit-cpu");

  int code;
  if (error) {
    code = error->code;
    r.error = error->message;
  } else if (tracer_ && !tracer_->violation().empty()) {
    code = kExitSentryError;
    r.error = tracer_->violation();
  } else if (timed_out_ || (watchdog_fired_ && !(tracer_ && tracer_->leader_done()))) {
    code = kExitTimeout;
    r.timed_out = true;
    r.limit = "timeout";
    r.signal = "SIGKILL";
  } else if (user_signal_) {
    code = 128 + user_signal_;
    r.signal = SignalName(user_signal_);
    r.error = absl::StrCat("sentry received ", SignalName(user_signal_));
  } else if (tracer_ && tracer_->leader_done()) {
    int s = tracer_->leader_status();
    if (WIFEXITED(s)) {
      code = WEXITSTATUS(s);
    } else {
      code = 128 + WTERMSIG(s);
      r.signal = SignalName(WTERMSIG(s));
      if (WTERMSIG(s) == SIGKILL && cgroups_.MemoryLimitHit()) r.limit = "memory";
    }
  } else {
    code = kExitSentryError;
    r.error = "the guest ended without an exit status";
  }
  r.exit_code = code;
  if (kernel_) {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    for (const Denial& d : kernel_->denials) r.denied.push_back(ExplainDenial(d));
  }
  if (!r.limit && cgroups_.PidsLimitHit()) r.limit = "pids";
  net_.Conclude(&r);
  net_.Stop();
  cgroups_.Remove();
  if (seccomp_only()) {
    KillEveryProcessOf(guest_host_uid_);  // a process that outlived the sandbox's end
    ReapOrphans();
    host_store_.Remove();
  }
  clock_.Mark("cleanup");

  if (!o_.log_path.empty()) {
    AuditRecord rec;
    rec.run_id = absl::StrFormat("%d-%d", getpid(), static_cast<int>(start_ms_));
    rec.argv = o_.argv;
    if (!script_.empty()) {
      std::ifstream f(script_, std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      rec.code_hash = Sha256Hex(ss.str());
      rec.code = ss.str().substr(0, 64 << 10);
    }
    rec.limits = absl::StrFormat(
        "{\"timeoutSec\":%g,\"memoryBytes\":%d,\"pids\":%d,\"cpus\":%g,\"diskBytes\":%d,"
        "\"maxOutputBytes\":%d,\"nofile\":%d}",
        o_.timeout_sec, o_.memory_bytes, o_.pids, o_.cpus, o_.disk_bytes, o_.max_output, o_.nofile);
    rec.result = &r;
    rec.phases_ms = clock_.Json();
    rusage self;
    if (getrusage(RUSAGE_SELF, &self) == 0) {
      rec.sentry_max_rss_bytes = static_cast<uint64_t>(self.ru_maxrss) * 1024;
    }
    if (absl::Status s = AppendAuditRecord(o_.log_path, rec); !s.ok()) {
      std::fprintf(stderr, "sentry: %s\n", std::string(s.message()).c_str());
    }
  }
  if (o_.timings) {
    clock_.Mark("log");
    std::fputs(clock_.Text().c_str(), stderr);
  }
  if (o_.json) {
    std::string json = ResultJson(r) + "\n";
    fwrite(json.data(), 1, json.size(), stdout);
    fflush(stdout);
  } else if (r.error) {
    std::fprintf(stderr, "sentry: %s\n", r.error->c_str());
  } else if (r.timed_out) {
    std::fprintf(stderr, "sentry: timed out after %gs\n", o_.timeout_sec);
  } else if (r.limit == "memory") {
    std::fprintf(stderr, "sentry: the guest was killed at its memory limit\n");
  }
  return code;
}

// Starts the loader in new namespaces; where the kernel refuses them (and the
// operator did not --require-namespaces), on the seccomp wall alone.
absl::StatusOr<Spawned> Run::StartSandbox() {
  auto joined = [this](pid_t init) { cgroups_.Add(init); };
  if (seccomp_only()) return Spawned::Start(spec_, joined);
  auto spawned = Spawned::Start(spec_, joined);
  if (spawned.ok() || !absl::IsFailedPrecondition(spawned.status())) return spawned;
  if (o_.namespaces == NamespaceMode::kRequire) {
    return absl::FailedPreconditionError(absl::StrCat(
        spawned.status().message(),
        ", and --require-namespaces forbids running without them (sentry needs user, mount, "
        "pid and net namespaces: run as root or enable unprivileged user namespaces; `sentry "
        "check` says what this host lacks)"));
  }
  if (auto e = UseSeccompWallAlone(std::string(spawned.status().message()))) {
    return absl::FailedPreconditionError(e->message);
  }
  return Spawned::Start(spec_, joined);
}

// Makes this run one without namespaces (see seccomp_only.h and
// syscalls/table_without_namespaces.cc), and says so.
std::optional<RunError> Run::UseSeccompWallAlone(const std::string& why) {
  if (!o_.net.allow.empty() || !o_.net.secrets.empty()) {
    return RunError{kExitSentryError,
                    absl::StrCat("--allow-net and --secret need a network namespace, which this "
                                 "run cannot have (",
                                 why, ")")};
  }
  HostStore::SweepStale();
  guest_host_uid_ = SeccompOnlyGuestId(getpid());
  auto store = HostStore::Create(guest_host_uid_, o_.disk_bytes);
  if (!store.ok()) return RunError{kExitSentryError, std::string(store.status().message())};
  host_store_ = std::move(*store);
  // If the loader dies first, its orphans come here (see ReapOrphans), not
  // to the host's init.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  spec_.namespaces = false;
  spec_.uid = spec_.gid = guest_host_uid_;
  spec_.filter = BuildSeccompFilter(SyscallTableWithoutNamespaces());
  // Where the host lets no tmpfs cap the store, a file may grow to --disk at
  // most (EFBIG past it), and the memory cgroup, where there is one, counts
  // what all of them hold.
  if (!host_store_.capped()) wall_rlimits_.push_back({RLIMIT_FSIZE, o_.disk_bytes});
  // A core file would be written by the kernel in the host's tree (where
  // core_pattern names it), not in a mount view: none.
  wall_rlimits_.push_back({RLIMIT_CORE, 0});
  stdio_.SetPipeOwner(guest_host_uid_, guest_host_uid_);
  std::fprintf(stderr,
               "sentry: notice: no namespaces (%s): the sandbox stands on the seccomp wall "
               "alone. The guest runs as a host uid of its own, sees host process ids, and has "
               "no network%s; `sentry check` says what this host lacks, and "
               "--require-namespaces refuses to run without them.\n",
               why.c_str(),
               host_store_.capped() ? "" : ", and --disk caps each file only (no tmpfs here)");
  return std::nullopt;
}

int Run::Execute() {
  if (auto e = Prepare()) return Conclude(e);
  if (auto e = BuildSandbox()) return Conclude(e);
  if (auto e = Admit()) return Conclude(e);
  if (auto e = StartGuest()) return Conclude(e);
  Supervise();
  return Conclude(std::nullopt);
}

std::optional<RunError> Run::Warm() {
  if (auto e = Prepare()) return e;
  return BuildSandbox();
}

int Run::Serve(const RunOptions& request, int peer_fd) {
  // What the sandbox was made with stays (the pool only serves requests of
  // its shape: see PoolCanServe); the rest is the request's.
  RunOptions shape = std::move(o_);
  o_ = request;
  o_.root = shape.root;
  o_.disk_bytes = shape.disk_bytes;
  o_.cgroups = shape.cgroups;
  o_.namespaces = shape.namespaces;
  o_.net = shape.net;
  o_.net_bytes = shape.net_bytes;
  peer_fd_ = peer_fd;
  start_ms_ = MonotonicMs();
  clock_ = PhaseClock(start_ms_);
  cgroups_.SetLimits({o_.memory_bytes, o_.pids, o_.cpus});
  GuestStdio::Options so;
  so.capture = o_.json;
  so.stdin_path = o_.stdin_path;
  so.max_output = o_.max_output;
  if (absl::Status s = stdio_.Configure(so); !s.ok()) {
    return Conclude(RunError{kExitSentryError, std::string(s.message())});
  }
  if (auto e = Admit()) return Conclude(e);
  if (auto e = StartGuest()) return Conclude(e);
  Supervise();
  return Conclude(std::nullopt);
}

}  // namespace

int RunSandbox(const RunOptions& options) {
  if (options.argv.empty()) {
    std::fprintf(stderr, "sentry: no command given; usage: sentry run [flags] -- CMD [ARGS...]\n");
    return kExitSentryError;
  }
  return Run(options, /*warm=*/false).Execute();
}

struct WarmSandbox::Impl {
  explicit Impl(const RunOptions& shape) : run(shape, /*warm=*/true) {}
  Run run;
};

std::unique_ptr<WarmSandbox> WarmSandbox::Make(const RunOptions& shape, std::string* error) {
  auto w = std::unique_ptr<WarmSandbox>(new WarmSandbox());
  w->impl_ = std::make_unique<Impl>(shape);
  if (auto e = w->impl_->run.Warm()) {
    *error = e->message;
    return nullptr;
  }
  return w;
}

WarmSandbox::~WarmSandbox() = default;

int WarmSandbox::Serve(const RunOptions& request, int peer_fd) {
  return impl_->run.Serve(request, peer_fd);
}

}  // namespace sentry
