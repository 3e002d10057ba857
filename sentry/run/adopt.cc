// S2, the supervisor of a forked child (adopt.h; sentry/session/FORK.md
// steps 3 and 5). In order:
//   1. the hand-off from S1 (platform/handoff_wire.h): the header, a pidfd,
//      the VFS copy's stream;
//   2. PTRACE_SEIZE (retried while S1 still traces it): the child sits in
//      the group-stop S1's queued SIGSTOP put it in, before any instruction
//      of its own; a shared writable mapping refuses it; "seized" to S1;
//   3. its namespaces made whole (adopt_ns.cc), its cgroups, the tree
//      (BuildSandboxTree) with the copy applied (ReadSnapshot), the kernel;
//   4. injected calls (platform/inject_syscall.h; adopt_inject.cc): setsid,
//      seccomp(NEW_LISTENER) with the sandbox's table, taken with
//      pidfd_getfd, and a trapped call during whose notification every fd
//      of the child is replaced (SECCOMP_ADDFD_FLAG_SETFD);
//   5. the child resumes at its clone's return (0), served by this
//      process's NotifyLoop and Tracer as a run's pid 1, until it ends.
#include "sentry/run/adopt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "sentry/base/fd_passing.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/log.h"
#include "sentry/base/timeline.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/procfs.h"
#include "sentry/kernel/sysfs.h"
#include "sentry/platform/handoff_wire.h"
#include "sentry/platform/tracer.h"
#include "sentry/run/adopt_internal.h"
#include "sentry/run/fork_control.h"
#include "sentry/run/run_internal.h"
#include "sentry/run/sandbox_tree.h"
#include "syscalls/table.h"
#include "vfs/store.h"
#include "vfs/vfs_snapshot.h"

namespace sentry {
namespace adopt {

void Adoption::Answer(std::string_view what) {
  if (!answered_) SendWithFds(o_.adopt_fd, what.data(), what.size(), {});
  answered_ = true;
}

std::optional<std::string> Adoption::Receive() {
  // Started ahead (sentry/session/fork_spares.h) or with its fork, S2 waits
  // for as long as the server keeps its end of the hand-off socket open, at
  // most until its --timeout backstop (from its start); SIGTERM ends it.
  // Ended so, it has adopted nothing: it exits quietly (unused_).
  pollfd p[3] = {{o_.adopt_fd, POLLIN, 0}, {sig_.get(), POLLIN, 0}, {timer_.get(), POLLIN, 0}};
  while (!p[0].revents) {
    if (poll(p, 3, -1) < 0 && errno != EINTR) return "cannot wait for the hand-off";
    signalfd_siginfo si;
    while ((p[1].revents & POLLIN) && read(sig_.get(), &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo == SIGCHLD) continue;
      unused_ = true;
      return "ended before its hand-off came";
    }
    if (p[2].revents & POLLIN) {
      unused_ = true;
      return "no hand-off came before its --timeout";
    }
  }
  std::string buf(kHandOffMaxBytes, '\0');
  std::array<UniqueFd, 2> fds;
  Received r = ReceiveWithFds(o_.adopt_fd, buf.data(), buf.size(), fds);
  if (r.bytes == 0) {
    unused_ = true;  // the server closed its end: the fork did not come
    return "no hand-off came";
  }
  if (r.bytes <= 0 || r.too_many || !fds[0] || !fds[1]) return "a malformed hand-off";
  std::string why;
  auto header = DecodeHandOff(std::string_view(buf.data(), static_cast<size_t>(r.bytes)), &why);
  if (!header) return why;
  header_ = std::move(*header);
  pidfd_ = std::move(fds[0]);
  stream_ = std::move(fds[1]);
  // The child's host pid, from its pidfd (no guest word in it).
  std::ifstream info(absl::StrCat("/proc/self/fdinfo/", pidfd_.get()));
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("Pid:", 0) == 0) child_ = static_cast<pid_t>(std::atoi(line.c_str() + 4));
  }
  if (child_ <= 0) return "the hand-off's pidfd names no live process";
  return std::nullopt;
}

std::optional<std::string> Adoption::Seize() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  // Polled from 50 us up to 1 ms: S1 detaches microseconds after its
  // header, and the stop follows the seize at once.
  auto pause = std::chrono::microseconds(50);
  auto wait = [&] {
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
  };
  int r;
  // EPERM while S1 has not detached yet.
  while ((r = Tracer::Seize(child_)) == -EPERM && std::chrono::steady_clock::now() < deadline) {
    wait();
  }
  pause = std::chrono::microseconds(50);
  if (r < 0) return absl::StrCat("cannot trace the child: ", std::strerror(-r));
  seized_ = true;
  // Its first stop: the group-stop of the SIGSTOP S1 queued, or a
  // signal's delivery, before any instruction of its own.
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t w = waitpid(child_, &status, __WALL | WNOHANG);
    if (w == 0) {
      wait();
      continue;
    }
    if (w < 0 || !WIFSTOPPED(status)) return "the child ended before it was adopted";
    int sig = WSTOPSIG(status), event = status >> 16;
    if (event == PTRACE_EVENT_STOP) return std::nullopt;
    // A signal's delivery (S1's SIGSTOP, or one the parent's side sent
    // first): not delivered, the injection resumes it without; the SIGSTOP
    // still pending then is held back by the injection alike.
    if (event == 0) {
      if (sig != SIGSTOP) held_.push_back(sig);  // dropped (MakeWhole)
      return std::nullopt;
    }
    return "the child stopped other than for its hand-off";
  }
  return "the child never stopped for its new supervisor";
}

std::optional<std::string> Adoption::ReadIds() {
  std::ifstream status(absl::StrCat("/proc/", child_, "/status"));
  std::string line;
  bool uid = false, gid = false;
  while (std::getline(status, line)) {
    unsigned r, e;
    if (std::sscanf(line.c_str(), "Uid: %u %u", &r, &e) == 2) {
      host_uid_ = e;
      uid = true;
    } else if (std::sscanf(line.c_str(), "Gid: %u %u", &r, &e) == 2) {
      host_gid_ = e;
      gid = true;
    }
  }
  if (!uid || !gid) return "cannot read the child's ids";
  return std::nullopt;
}

// The tree's configuration: the parent's (the same options).
void Adoption::ConfigureTree() { run_internal::TreeFromOptions(o_, tree_, creds_); }

// The devices of the lower layer's host files (lower roots, -v mounts but
// :rw ones): what a read-only shared mapping may map.
std::vector<dev_t> Adoption::LowerDevices() const {
  std::vector<dev_t> devs;
  auto add = [&](const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0) devs.push_back(st.st_dev);
  };
  for (const std::string& root : tree_.lower_roots) add(tree_.rootfs + root);
  if (tree_.rootfs.empty()) add("/etc");
  for (const BindMount& m : tree_.mounts) {
    if (m.mode != BindMount::Mode::kReadWrite) add(m.host_path);
  }
  return devs;
}

std::optional<std::string> Adoption::Prepare() {
  ConfigureTree();
  // Without root no cgroup is the sentry's to make (run.cc's BuildSandbox):
  // the limits hold by the rlimits the child inherited and S2's counts.
  if (o_.cgroups && SentryIsRoot()) {
    cgroups_.Create(absl::StrCat("sentry-", getpid()),
                    {o_.memory_bytes, o_.pids, o_.cpus, o_.cpu_period_us, o_.cpu_shares});
    join_files_ = cgroups_.OpenJoinFiles();
  }
  // The store's owner is the sandbox's root, known from the child's store.
  auto store = std::make_unique<vfs::Store>(UniqueFd(), 0, 0);
  auto v = BuildSandboxTree(tree_, std::move(store));
  if (!v.ok()) return std::string(v.status().message());
  vfs_ = std::move(*v);
  vfs_->set_metadata_limit(std::max<uint64_t>(o_.disk_bytes / 8, 1 << 20));
  return std::nullopt;
}

std::optional<std::string> Adoption::Build() {
  auto store_dir = PrepareChildNamespaces(child_, tree_.hostname, o_.disk_bytes);
  if (!store_dir.ok()) return std::string(store_dir.status().message());
  timeline::Mark("s2.ns");
  struct stat st;
  if (fstat(store_dir->get(), &st) < 0) return "cannot stat the child's store";
  // As a run's (GuestFsId): root's sandbox has a block of host ids, whose
  // root owns the store, and host files are reached as its first
  // unprivileged id; without root the caller's own ids are the only ones.
  const bool root = SentryIsRoot();
  fs_uid_ = root ? st.st_uid + 1 : geteuid();
  fs_gid_ = root ? st.st_gid + 1 : getegid();
  timeline::Mark("s2.cgroups");
  vfs_->store().set_owner(st.st_uid, st.st_gid);
  vfs_->store().set_dir_fd(std::move(*store_dir));
  KernelConfig kc;
  kc.hostname = tree_.hostname;
  kc.memory_bytes = o_.memory_bytes;
  kc.cpus = o_.cpus;
  kc.pids = o_.pids;
  CPU_ZERO(&kc.host_cpus);
  sched_getaffinity(0, sizeof(kc.host_cpus), &kc.host_cpus);
  kc.host_id_base = st.st_uid;
  kc.user_uid = tree_.uid;
  kc.user_gid = tree_.gid;
  kc.user_host_uid = host_uid_;
  kc.user_host_gid = host_gid_;
  kc.namespaces = true;
  // On a subordinate range the guest's ids are the range's: its /proc/PID/fd
  // and the like open through a helper in the sandbox's user namespace (not
  // the child's own: the guest made and owns that one).
  ChildRange range = root ? ChildRange{} : RangeOfChild(child_);
  if (range.count != 0) {
    kc.range_uid = range.uid;
    kc.range_gid = range.gid;
    kc.range_count = range.count;
  }
  kc.fast_fd_identity = o_.fast_fd_identity;
  kc.fast_trap = o_.fast_trap;
  kc.fast_listings = o_.fast_listings;
  kc.fast_negatives = o_.fast_negatives;
  kc.fast_dir_streams = o_.fast_dir_streams;
  kc.fast_upper = o_.fast_upper;
  kc.fast_fd_records = o_.fast_fd_records;
  kc.fast_upper_files = o_.fast_upper_files;
  kernel_ = std::make_unique<Kernel>(std::move(vfs_), kc);
  kernel_->init_host_pid = child_;
  if (range.count != 0) {
    UniqueFd userns = SandboxUserns(child_);
    if (!userns) return "the sandbox's user namespace is out of reach";
    kernel_->proc_opener().set_namespace(std::move(userns));
  }
  kernel_->set_memory_bytes(o_.memory_bytes);
  kernel_->set_cpus(o_.cpus);
  kernel_->set_pids(o_.pids);
  vfs::Vfs& fs = kernel_->vfs();
  // Its own /proc and /sys, before the copy: the copy names the parent's
  // (generated nodes) and keeps the new tree's at those names.
  auto proc = fs.Lookup(fs.root(), "/proc", {}, creds_);
  auto sys = fs.Lookup(fs.root(), "/sys", {}, creds_);
  if (!proc.ok() || !sys.ok()) return "the tree has no /proc or /sys";
  MountProcfs(*kernel_, *proc);
  MountSysfs(*kernel_, *sys);
  timeline::Mark("s2.kernel");
  vfs::SnapshotResult copied;
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    copied = vfs::ReadSnapshot(fs, stream_.get(), {.disk_bytes = o_.disk_bytes});
  }
  stream_.Reset();
  timeline::Mark("s2.copy");
  if (!copied.ok()) return absl::StrCat("the parent's files: ", copied.error);
  // The copy names the parent's /proc and /sys as generated nodes the new
  // tree keeps; a stream that put anything else there is refused.
  auto proc_after = fs.Lookup(fs.root(), "/proc", {}, creds_);
  auto sys_after = fs.Lookup(fs.root(), "/sys", {}, creds_);
  if (!proc_after.ok() || !sys_after.ok() || *proc_after != *proc || *sys_after != *sys) {
    return "the parent's files replaced the child's /proc or /sys";
  }
  fs.store().StartStash(std::nullopt);
  struct stat netns;
  if (stat(absl::StrCat("/proc/", child_, "/ns/net").c_str(), &netns) == 0) {
    kernel_->set_net_ns_ino(netns.st_ino);
  }
  // Its relays (S2's own pipes, as a run's).
  GuestStdio::Options so = GuestStdio::OptionsFor(o_);
  so.pipe_uid = host_uid_;
  so.pipe_gid = host_gid_;
  if (absl::Status s = stdio_.Setup(so); !s.ok()) return std::string(s.message());
  for (int fd : stdio_.child_fds()) {
    struct stat sst;
    if (fd >= 0 && fstat(fd, &sst) == 0) kernel_->fds().TrustCallerObject(sst);
  }
  // Its task, with the parent's cwd where the copy has it (else its home, /).
  timeline::Mark("s2.stdio");
  tracer_ = std::make_unique<Tracer>(*kernel_, tree_.lower_roots, nullptr);
  std::lock_guard<std::mutex> lock(kernel_->mu());
  Task t;
  t.tid = child_;
  t.ns_tid = ReadNsPid(child_);
  t.pidfd = UniqueFd(fcntl(pidfd_.get(), F_DUPFD_CLOEXEC, 3));
  t.fs = std::make_shared<FsContext>();
  t.fs->umask = o_.umask & 0777;
  auto cwd = fs.Lookup(fs.root(), header_.cwd, {}, creds_);
  if (!cwd.ok()) cwd = fs.Lookup(fs.root(), tree_.home, {}, creds_);
  t.fs->cwd = cwd.ok() ? *cwd : fs.root();
  t.process = std::make_shared<Process>();
  t.process->tgid = t.tid;
  t.process->ns_pid = t.ns_tid;
  t.process->creds = creds_;
  t.started = true;
  kernel_->tasks().Add(std::move(t));
  tracer_->set_leader(child_);
  return std::nullopt;
}

void Adoption::StartCgroupJoin() {
  if (!o_.cgroups) return;
  std::string pid = std::to_string(child_);
  join_ = std::thread([this, pid] {
    int refused = 0;
    for (size_t i = 0; i < join_files_.size(); ++i) {
      const UniqueFd& f = join_files_[i];
      if (f && write(f.get(), pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
        refused |= 1 << i;
      }
    }
    join_refused_ = refused;
  });
}

void Adoption::FinishCgroupJoin() {
  if (!join_.joinable()) return;
  join_.join();
  cgroups_.Joined(join_refused_);
  for (UniqueFd& f : join_files_) f.Reset();
  timeline::Mark("s2.cgroups.joined");
}

int Adoption::Supervise() {
  int sig = sig_.get(), timer = timer_.get();
  while (!tracer_->leader_done()) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) tracer_->OnWaitStatus(pid, status);
    if (tracer_->leader_done()) break;
    // (A negative fd: no control socket.)
    int control = fork_parent_ && fork_parent_->control_open() ? o_.control_fd : -1;
    pollfd p[3] = {{sig, POLLIN, 0}, {timer, POLLIN, 0}, {control, POLLIN, 0}};
    if (poll(p, 3, -1) < 0 && errno != EINTR) break;
    if (p[2].revents) fork_parent_->OnControlMessage();  // the session's own fork
    if (p[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(sig, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo != SIGCHLD) SendSignal(SIGKILL);  // SIGTERM & co: the sandbox ends
      }
    }
    if (p[1].revents & POLLIN) {
      log::Error("the forked sandbox's --timeout ended it");
      SendSignal(SIGKILL);
      timed_out_ = true;
      uint64_t n;
      (void)!read(timer, &n, sizeof(n));
    }
  }
  if (loop_) loop_->Stop();
  stdio_.Finish();
  cgroups_.Remove();
  if (!tracer_->violation().empty()) log::Error(tracer_->violation());
  int st = tracer_->leader_status();
  // Its end, for the session's record (the server ends a session by SIGTERM:
  // its program is then killed, and nobody reads this).
  if (WIFSIGNALED(st)) {
    log::Error(absl::StrCat("the forked program was killed by signal ", WTERMSIG(st)));
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
    log::Error(absl::StrCat("the forked program exited with ", WEXITSTATUS(st)));
  }
  if (timed_out_) return kExitTimeout;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return kExitSentryError;
}

// A forked session forks again as any other (FORK.md, "A fork of a fork"):
// its adopted child is a session's kernel, served here as a run serves its
// own, and the grandchildren's supervisors take them from this one.
void Adoption::StartForkParent() {
  if (o_.control_fd < 0) return;
  fork_parent_ = std::make_unique<run_internal::ForkParent>(run_internal::ForkParent::Host{
      .kernel = *kernel_,
      .tracer = *tracer_,
      .unotify = unotify_,
      .dispatcher = dispatcher_,
      .loop = loop_,
      .control_fd = o_.control_fd,
      .start_loop =
          [this] {
            loop_ = std::make_unique<NotifyLoop>(*kernel_, *unotify_, *dispatcher_, fs_uid_);
            loop_->Start();
          },
      .relay_ends = [this] { return stdio_.relay_ends(); },
      .kill_sandbox = [this] { SendSignal(SIGKILL); },
      .init_pid = -1,
      .unsupported = "",
  });
  tracer_->set_on_listener_request([this](pid_t pid) { fork_parent_->OnListenerRequest(pid); });
}

void Adoption::SendSignal(int sig) {
  if (pidfd_) syscall(SYS_pidfd_send_signal, pidfd_.get(), sig, nullptr, 0);
}

int Adoption::Fail(const std::string& why) {
  FinishCgroupJoin();
  Answer(absl::StrCat("error: ", why));
  if (seized_ || pidfd_) SendSignal(SIGKILL);
  if (seized_) waitpid(child_, nullptr, __WALL);
  log::Error(absl::StrCat("cannot adopt the forked child: ", why));
  cgroups_.Remove();
  return kExitSentryError;
}

int Adoption::Execute() {
  sigemptyset(&mask_);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask_, s);
  pthread_sigmask(SIG_BLOCK, &mask_, nullptr);
  signal(SIGPIPE, SIG_IGN);
  sig_ = UniqueFd(signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK));
  timer_ = run_internal::TimeoutTimer(o_.timeout_sec);  // the backstop, from S2's start
  timeline::Mark("s2.start");
  // A failure here is answered on the hand-off socket: S1 reads it when it
  // hands the child over, and kills the child.
  if (auto e = Prepare()) return Fail(*e);
  timeline::Mark("s2.prepared");
  if (auto e = Receive()) {
    if (!unused_) return Fail(*e);
    cgroups_.Remove();
    return 0;
  }
  timeline::Mark("s2.received");
  // Moved while stopped (held by S1, then group-stopped, then ours):
  // nothing it does escapes the limits. Its pid is the pidfd's.
  StartCgroupJoin();
  if (auto e = Seize()) return Fail(*e);
  // S1's SIGSTOP left the child's process group-stopped (the kernel's
  // SIGNAL_STOP_STOPPED), which no resumption by ptrace clears: every later
  // ptrace interrupt of its threads would report a group-stop, and a fork's
  // quiesce (fork_parent.cc) would leave them stopped (PTRACE_LISTEN) as a
  // stop the guest chose. A SIGCONT clears it; the child, held at its stop,
  // gets it as a signal-delivery stop in the injections, where it is
  // dropped (held_) as any signal that came before it ran.
  SendSignal(SIGCONT);
  timeline::Mark("s2.seized");
  std::string mapping;
  if (HasRefusedSharedMapping(child_, LowerDevices(), &mapping)) {
    return Fail(absl::StrCat("the parent holds a shared mapping a fork cannot copy (", mapping,
                             "): a fork would share that memory with it"));
  }
  timeline::Mark("s2.mapcheck");
  Answer(kHandOffSeized);
  if (auto e = ReadIds()) return Fail(*e);
  if (auto e = Build()) return Fail(*e);
  timeline::Mark("s2.built");
  StartForkParent();  // (its events come in Supervise, on this thread)
  if (auto e = MakeWhole()) return Fail(*e);
  timeline::Mark("s2.running");
  return Supervise();
}

}  // namespace adopt

int AdoptSandbox(const RunOptions& options) { return adopt::Adoption(options).Execute(); }

}  // namespace sentry
