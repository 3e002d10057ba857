#include "sentry/run/run.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "loader/filter.h"
#include "loader/landlock.h"
#include "loader/prebuilt_filter.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/log.h"
#include "sentry/base/timeline.h"
#include "sentry/kernel/devpts.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/procfs.h"
#include "sentry/kernel/sysfs.h"
#include "sentry/platform/notify_loop.h"
#include "sentry/platform/tracer.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/adopt.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/fast_meta_files.h"
#include "sentry/run/guest_files.h"
#include "sentry/run/guest_program.h"
#include "sentry/run/nproc_budget.h"
#include "sentry/run/phase_clock.h"
#include "sentry/run/result.h"
#include "sentry/run/run_internal.h"
#include "sentry/run/sandbox_net.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/run/seccomp_only.h"
#include "sentry/run/spawn.h"
#include "sentry/run/stdio.h"
#include "syscalls/table.h"
#include "vfs/store.h"

namespace sentry {
namespace run_internal {

// The CPUs the guest may run on: the sentry's own, before any pin.
cpu_set_t Run::HostCpus() const {
  if (early_pin_) return *early_pin_;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  sched_getaffinity(0, sizeof(mask), &mask);
  return mask;
}

void TreeFromOptions(const RunOptions& o, TreeConfig& tree, vfs::Creds& creds) {
  if (o.root) tree.uid = tree.gid = 0;
  if (o.uid >= 0) tree.uid = static_cast<uid_t>(o.uid);
  if (o.gid >= 0) tree.gid = static_cast<gid_t>(o.gid);
  if (!o.hostname.empty()) tree.hostname = o.hostname;
  if (!o.rootfs.empty()) {
    tree.rootfs = o.rootfs;
    tree.lower_roots = RootfsLowerRoots(o.rootfs);
  }
  tree.mounts = o.mounts;
  if (geteuid() != 0) {
    // A -v :rw mount is written by the sentry, as the caller, in either
    // id mode; the caller's files there read as the guest's.
    tree.rw_uid = geteuid();
    tree.rw_gid = getegid();
    vfs::g_host_owner_view = {true, geteuid(), tree.uid, getegid(), tree.gid};
  }
  creds.uid = tree.uid;
  creds.gid = tree.gid;
  creds.groups = o.groups;
}

std::optional<RunError> Run::Prepare() {
  // A warm sandbox is pinned when its command comes (to the CPU it is woken
  // on then); a cold run from here (see CoLocation::PinCallerEarly).
  if (!warm_) early_pin_ = CoLocation::PinCallerEarly();
  elsewhere_ = CoLocation::Elsewhere(early_pin_);
  if (early_pin_) spec_.guest_cpu = sched_getcpu();
  TreeFromOptions(o_, tree_, creds_);
  if (!o_.rootfs.empty()) spec_.lower_source = o_.rootfs;
  spec_.lower_roots = tree_.lower_roots;
  spec_.store_options = absl::StrCat("mode=0755,size=", o_.disk_bytes);
  spec_.uid = tree_.uid;
  spec_.gid = tree_.gid;
  spec_.groups = o_.groups;
  spec_.hostname = tree_.hostname;
  if (const char* delay = std::getenv("SENTRY_TEST_DETACH_DELAY_MS")) {
    spec_.detach_delay_ms = std::clamp(std::atoi(delay), 0, 2000);  // LoaderSpec::detach_delay_ms
  }
  // Root's sandboxes each take a block of host ids, and its first id makes
  // the user namespace (see spawn.h and loader/pool_caps.h).
  if (o_.namespaces != NamespaceMode::kOff && geteuid() == 0) {
    auto slot = TakeSandboxIdSlot();
    if (!slot.ok()) return RunError{kExitSentryError, std::string(slot.status().message())};
    id_slot_ = std::move(*slot);
    host_id_base_ = id_slot_.base();
    spec_.host_ids = spec_.ns_owner = host_id_base_;
  }
  std::span<const sock_filter> filter = PrebuiltSeccompFilter();
  spec_.filter.assign(filter.begin(), filter.end());

  if (o_.interactive && o_.stdin_path.empty()) o_.stdin_path.push_back('-');
  GuestStdio::Options so = GuestStdio::OptionsFor(o_);
  so.pipe_uid = GuestHostUid();
  so.pipe_gid = GuestHostGid();
  so.relay_all = warm_;
  if (!warm_) so.tty_fds = GuestTerminal::FdsFor(o_.tty, o_.json, o_.stdin_path);
  so.drop_early = python_;
  if (absl::Status s = stdio_.Setup(so); !s.ok()) {
    return RunError{kExitSentryError, std::string(s.message())};
  }
  spec_.stdio = stdio_.child_fds();
  spec_.stdio_owned = stdio_.relay_mask();
  spec_.tty_fds = stdio_.tty_fds();
  spec_.extra_fds = o_.extra_fds;
  // (After Setup: the result of a run that fails here has its streams.)
  if (o_.tty == TtyMode::kOn && o_.json) {
    return RunError{kExitSentryError,
                    "-t gives the guest a terminal and --json captures its output: not both"};
  }

  // (After stdio_.Setup, as every error from here.)
  if (rootless_) {
    if (auto e = ChooseIdMode()) return e;
  }
  if (rootless_ && o_.cpus > 0) {
    // A CPU quota is a cgroup's alone (RLIMIT_CPU bounds a total, not a rate).
    return RunError{kExitSentryError,
                    absl::StrCat("--cpus: a CPU quota needs a cpu cgroup, which uid ", geteuid(),
                                 " cannot make on this host (cgroup v1, no delegated subtree); "
                                 "run as root, or leave --cpus out (--timeout bounds the time)")};
  }
  if (o_.namespaces == NamespaceMode::kOff) {
    if (auto e = UseSeccompWallAlone("--no-namespaces")) return e;
  }
  clock_.Mark("prepare");
  return std::nullopt;
}

std::optional<RunError> Run::BuildSandbox() {
  // SIGCHLD and the user's signals are read from a signalfd by this thread;
  // every thread made from here on inherits the mask.
  sigemptyset(&mask_);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) sigaddset(&mask_, s);
  pthread_sigmask(SIG_BLOCK, &mask_, nullptr);

  auto spawned = StartSandbox();
  if (!spawned.ok()) return RunError{kExitSentryError, std::string(spawned.status().message())};
  spawned_.emplace(std::move(*spawned));
  // Without root the guest's tasks are the caller's too: it gets at most
  // half of what the caller has left (nproc_budget.h). Here, where the mode
  // is known (a kernel without namespaces falls back above).
  if (rootless_) {
    NprocShare share = ShareCallerNproc(o_.pids, ReadCallerNproc(), !seccomp_only());
    if (!share.lowered.empty()) log::Info(absl::StrCat("notice: ", share.lowered));
    o_.pids = share.pids;
    wall_rlimits_.push_back({RLIMIT_NPROC, share.rlimit});
  }
  if (warm_) stdio_.StartOutputsEarly();
  // The loader builds its view on another CPU (elsewhere_, set by
  // Spawned::Start right after its clone), while this thread does the rest.
  clock_.Mark("namespaces");

  // The loader builds its mount view meanwhile: the cgroups, the tree and
  // the kernel are made at the same time, on this thread. (Made on a thread
  // of their own while the clone ran, the cgroups took no less in all:
  // both take the kernel's cgroup locks.)
  // (What dead sentries left: a cold run sweeps at most every 250 ms of the
  // host's runs, see SweepStaleNowAndThen.)
  if (warm_) {
    Cgroups::SweepStale();
  } else {
    Cgroups::SweepStaleNowAndThen();
  }
  // Without root there is no cgroup of the sentry's to make (cgroup v1, or
  // v2 without a delegated subtree: not built); the limits hold by rlimits
  // and the sentry's own counts (see Run::Prepare and the result's limits).
  if (o_.cgroups && !rootless_) {
    CgroupLimits limits{o_.memory_bytes, o_.pids, o_.cpus, o_.cpu_period_us, o_.cpu_shares};
    cgroups_.Create(absl::StrCat("sentry-", getpid()), limits, /*every_controller=*/warm_);
  }
  if (absl::Status s = spawned_->SendCgroups(cgroups_.OpenJoinFiles()); !s.ok()) {
    return RunError{kExitSentryError, std::string(s.message())};
  }
  clock_.Mark("cgroups");

  std::unique_ptr<vfs::Store> store;
  if (seccomp_only()) {
    store = std::make_unique<vfs::Store>(host_store_.OpenDir(), guest_host_uid_, guest_host_gid_);
    store->set_exec_dir(host_store_.path());
  } else {
    store = std::make_unique<vfs::Store>(UniqueFd(), StoreOwnerUid(), StoreOwnerGid());  // below
  }
  auto vfs_or = BuildSandboxTree(tree_, std::move(store));
  if (!vfs_or.ok()) return RunError{kExitSentryError, std::string(vfs_or.status().message())};
  std::unique_ptr<vfs::Vfs> v = std::move(*vfs_or);
  // The guest's names and links cost the sentry memory: an eighth of --disk.
  v->set_metadata_limit(std::max<uint64_t>(o_.disk_bytes / 8, 1 << 20));
  clock_.Mark("vfs");
  KernelConfig kc = KernelConfigOf();
  kernel_ = std::make_unique<Kernel>(std::move(v), kc);
  kernel_->init_host_pid = spawned_->init_pid();
  // The guest's ids are the range's, not the caller's: its /proc/PID/fd and
  // the like open through a helper in the sandbox's user namespace.
  if (kc.range_count != 0) kernel_->proc_opener().set_namespace_pid(spawned_->init_pid());
  if (o_.fast_metadata) {
    if (absl::Status s = AddFastMeta(*kernel_, tree_); !s.ok() && tree_.rootfs.empty()) {
      log::Info(absl::StrCat("notice: no fast metadata: ", s.message()));
    }
  }
  MountProcfs(*kernel_, kernel_->vfs().Lookup(kernel_->vfs().root(), "/proc", {}, creds_).value());
  MountSysfs(*kernel_, kernel_->vfs().Lookup(kernel_->vfs().root(), "/sys", {}, creds_).value());
  // Its maker thread runs where the loader does; it makes tokens once the
  // store is there.
  kernel_->vfs().store().StartStash(elsewhere_);
  // Listings read ahead only beside a guest pinned to its CPU: on the
  // same CPU they would take the guest's time (vfs/listing_ahead.h).
  if (o_.fast_metadata && o_.fast_listings && o_.listing_ahead && elsewhere_ &&
      kernel_->fast_meta()) {
    // The notification thread's file identity and CPU share (NotifyLoop).
    kernel_->vfs().StartListingAhead(elsewhere_, GuestFsId(), GuestFsId(),
                                     [this](uint64_t ns) { cpu_share_.Charge(ns); });
  }
  // A released token's reference is closed there too, in batches
  // (FdHolds::set_close_later). The store outlives the holds (Kernel).
  vfs::Store* stash_store = &kernel_->vfs().store();
  kernel_->holds().set_close_later(
      [stash_store](UniqueFd fd) { stash_store->CloseLater(std::move(fd)); });
  clock_.Mark("kernel");

  if (absl::Status s = spawned_->AwaitNetns(); !s.ok()) {
    return RunError{kExitSentryError, std::string(s.message())};
  }
  // The loader's network namespace (the host's without namespaces) is the one
  // whose sockets the guest may use.
  struct stat netns;
  if (stat(absl::StrCat("/proc/", spawned_->init_pid(), "/ns/net").c_str(), &netns) == 0) {
    kernel_->set_net_ns_ino(netns.st_ino);
  }
  // Without a network namespace there is no loopback of the sandbox's own for
  // a DNS server to listen on (and the guest can make no network socket).
  if (!seccomp_only()) net_.Start(*kernel_, spawned_->init_pid(), o_, spawned_->TakeDnsSocket());
  clock_.Mark("network");

  if (absl::Status s = spawned_->AwaitReady(); !s.ok()) {
    return RunError{kExitSentryError, std::string(s.message())};
  }
  cgroups_.Joined(spawned_->cgroups_refused());
  // The backing store is the loader's tmpfs, in the view it has now built.
  if (!seccomp_only()) kernel_->vfs().store().set_dir_fd(spawned_->TakeStoreDir());
  auto dev = kernel_->vfs().Lookup(kernel_->vfs().root(), "/dev", {}, creds_);
  MountDevpts(*kernel_, dev.ok() ? dev.value() : nullptr, spawned_->TakePtsDir());
  clock_.Mark("mount view");
  return std::nullopt;
}

// What depends on the command: the guest's stdio relays, the files copied in,
// its cwd, program, argv, environment and rlimits.
std::optional<RunError> Run::Admit() {
  // The guest's stdio is the caller's (a tty, /dev/null) or the sentry's
  // relay pipes: not the VFS's, but the guest's own to fstat (see GetFd).
  // So are the extra fds the caller gave it (an engine's --preserve-fds).
  for (int fd : stdio_.child_fds()) {
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) kernel_->fds().TrustCallerObject(st);
  }
  for (int fd : o_.extra_fds) {
    struct stat st;
    if (fstat(fd, &st) == 0) kernel_->fds().TrustCallerObject(st);
  }
  stdio_.Start();
  vfs::Vfs& v = kernel_->vfs();
  kernel_->set_memory_bytes(o_.memory_bytes);
  kernel_->set_cpus(o_.cpus);
  cpu_share_.set_share(o_.cpus);
  kernel_->set_pids(o_.pids);
  if (auto e = CopyIn()) return e;
  for (const std::string& dir : o_.dirs) {
    if (auto made = MakeSandboxDirs(v, creds_, dir); !made.ok()) {
      return RunError{kExitSentryError, absl::StrCat(dir, ": ", made.status().message())};
    }
  }
  for (const auto& [guest, content] : o_.engine_files) {
    if (absl::Status s = ReplaceInSandbox(v, creds_, content, guest); !s.ok()) {
      return RunError{kExitSentryError, absl::StrCat(guest, ": ", s.message())};
    }
  }
  if (absl::Status s = WriteInlineFiles(v, creds_, o_.inline_files); !s.ok()) {
    return RunError{kExitSentryError, std::string(s.message())};
  }
  std::string cwd;
  if (auto e = MakeGuestCwd(&cwd)) return e;
  if (auto e = WriteRequestFiles(cwd)) return e;
  if (auto e = AdmitTools()) return e;
  script_ = CopyScriptArgument(o_, v, creds_, cwd);
  cwd_ = v.Lookup(v.root(), cwd, {}, creds_).value();

  ProgramLookup found = FindProgram(v, cwd_, creds_, o_.argv[0], o_.copy_hint);
  if (found.exit_code) return RunError{found.exit_code, found.error};
  launch_.path = found.path;
  launch_.argv = o_.argv;
  launch_.envp = GuestEnv(o_, tree_, stdio_.tty_fds() != 0);
  std::string too_high;
  launch_.rlimits =
      GuestRlimits(o_, cgroups_.has_memory(), cgroups_.has_cpu(), wall_rlimits_, &too_high);
  if (!too_high.empty()) return RunError{kExitSentryError, too_high};
  clock_.Mark("admit");
  return std::nullopt;
}

// The guest, waiting for its go: its listener, its task, its tracer and the
// thread that answers its traps (a warm sandbox does this ahead).
std::optional<RunError> Run::AttachGuest() {
  tracer_ = std::make_unique<Tracer>(*kernel_, tree_.lower_roots, nullptr);
  if (absl::Status st = spawned_->AwaitGuest(); !st.ok()) {
    return RunError{kExitSentryError, std::string(st.message())};
  }
  clock_.Mark("loader");
  if (UniqueFd master = spawned_->TakeTtyMaster()) stdio_.StartTerminal(std::move(master));
  unotify_ = std::make_unique<Unotify>(spawned_->TakeListener());
  sync_wakeup_ = unotify_->SetSyncWakeup();
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    Task t;
    t.tid = spawned_->guest_pid();
    t.ns_tid = ReadNsPid(t.tid);
    t.pidfd = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, t.tid, 0)));
    t.fs = std::make_shared<FsContext>();
    t.fs->umask = o_.umask & 0777;
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
  if (seccomp_only()) {
    std::vector<std::string> dirs = tree_.lower_roots;
    dirs.push_back(host_store_.path());
    tracer_->CheckMappingsUnder(std::move(dirs));
  }
  dispatcher_ =
      std::make_unique<Dispatcher>(nullptr, !seccomp_only()  ? &FindSyscall
                                            : signal_scope() ? &FindSyscallWithSignalScope
                                                             : &FindSyscallWithoutNamespaces);
  loop_ = std::make_unique<NotifyLoop>(*kernel_, *unotify_, *dispatcher_, GuestFsId());
  loop_->set_cpu_share(&cpu_share_);
  if (!o_.census_path.empty()) {
    census_ = std::make_shared<Census>(!seccomp_only());
    loop_->set_census(ordinary_filter_);
    loop_->set_observer(census_);
    tracer_->set_observer(census_);
  }
  loop_->Start();
  if (o_.control_fd >= 0) StartForkParent();
  return std::nullopt;
}

void Run::StartForkParent() {
  std::string unsupported;
  if (seccomp_only()) {
    unsupported = "a fork needs the sandbox's namespaces, which this run has not";
  } else if (census_) {
    unsupported = "a fork is not made under --census";
  }
  fork_parent_ = std::make_unique<ForkParent>(ForkParent::Host{
      .kernel = *kernel_,
      .tracer = *tracer_,
      .unotify = unotify_,
      .dispatcher = dispatcher_,
      .loop = loop_,
      .control_fd = o_.control_fd,
      .start_loop =
          [this] {
            loop_ = std::make_unique<NotifyLoop>(*kernel_, *unotify_, *dispatcher_, GuestFsId());
            loop_->set_cpu_share(&cpu_share_);
            loop_->Start();
          },
      .relay_ends = [this] { return stdio_.relay_ends(); },
      .kill_sandbox = [this] { KillSandbox(); },
      .init_pid = spawned_->init_pid(),
      .unsupported = std::move(unsupported),
  });
  tracer_->set_on_listener_request([this](pid_t pid) { fork_parent_->OnListenerRequest(pid); });
}

// --trace: on sentry's own stderr or the file, never the guest's streams
// (with --json those are the result's).
// The go: what the command decided (cwd, --trace), the start-up pin, and the
// guest's execve.
std::optional<RunError> Run::LaunchGuest() {
  if (auto e = StartTrace()) return e;
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    if (Task* t = kernel_->tasks().Find(spawned_->guest_pid())) t->fs->cwd = cwd_;
    kernel_->colocation().Start(spawned_->guest_pid(), loop_->tid(), early_pin_,
                                spawned_->init_pid());
  }
  // Both guest-facing threads (this one answers execve) reach host files as an
  // unprivileged user from here on (without namespaces, the guest's own uid,
  // the only one that may enter the store).
  if (!DropFsIdentity(GuestFsId(), GuestFsGid())) {
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

// Starts the loader in new namespaces; where the kernel refuses them (and the
// operator did not --require-namespaces), on the seccomp wall alone.
absl::StatusOr<Spawned> Run::StartSandbox() {
  auto spawned = SpawnLoader();
  if (!spawned.ok() && FallBackFromRange(spawned.status())) spawned = SpawnLoader();
  if (seccomp_only() || spawned.ok() || !absl::IsFailedPrecondition(spawned.status())) {
    return spawned;
  }
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
  return SpawnLoader();
}

absl::StatusOr<Spawned> Run::SpawnLoader() {
  spec_.landlock = GuestLandlock();
  const SubidPlan* subids = range_ ? &subids_ : nullptr;
  // The loader was cloned onto this thread's CPU (see PinCallerEarly).
  const cpu_set_t* loader_cpus = elsewhere_ ? &*elsewhere_ : nullptr;
  if (o_.census_path.empty()) return Spawned::Start(spec_, subids, loader_cpus);
  ordinary_filter_ = spec_.filter;
  spec_.census = true;
  return Spawned::Start(spec_, subids, loader_cpus);
}

// The guest's exec finds its files beneath the lower roots and the backing
// store: in the mount view, or on the host without one (see loader/landlock.h).
LandlockPlan Run::GuestLandlock() const {
  int abi = o_.landlock ? LandlockAbi() : 0;
  if (o_.landlock && abi == 0) {
    static std::once_flag said;
    std::call_once(said, [] {
      log::Notice("notice: this kernel has no Landlock: the sandbox stands on its other walls");
    });
  }
  if (abi == 0) return {};
  std::vector<std::string> exec_roots;
  for (const std::string& root : spec_.lower_roots) {
    exec_roots.push_back(seccomp_only() ? spec_.lower_source + root : root);
  }
  exec_roots.push_back(seccomp_only() ? host_store_.path() : vfs::Store::kGuestPath);
  return GuestLandlockPlan(abi, exec_roots, seccomp_only() ? "" : kGuestPtsPath);
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
  if (spec_.tty_fds) {
    if (o_.tty == TtyMode::kOn) {
      return RunError{kExitSentryError,
                      absl::StrCat("-t needs the sandbox's own devpts, which a run without "
                                   "namespaces has not (",
                                   why, ")")};
    }
    if (absl::Status s = stdio_.DropTerminal(); !s.ok()) {
      return RunError{kExitSentryError, std::string(s.message())};
    }
    spec_.stdio = stdio_.child_fds();
    spec_.stdio_owned = stdio_.relay_mask();
    spec_.tty_fds = 0;
  }
  HostStore::SweepStale();
  // Root gives the guest a host uid of the run's own; a caller without root
  // has only its own, which the guest runs as (see KillSandbox).
  if (!rootless_) guest_host_uid_ = guest_host_gid_ = SeccompOnlyGuestId(getpid());
  auto store = HostStore::Create(guest_host_uid_, guest_host_gid_, o_.disk_bytes);
  if (!store.ok()) return RunError{kExitSentryError, std::string(store.status().message())};
  host_store_ = std::move(*store);
  // If the loader dies first, its orphans come here (see ReapOrphans), not
  // to the host's init.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  spec_.namespaces = false;
  spec_.uid = guest_host_uid_;
  spec_.gid = guest_host_gid_;
  spec_.groups.clear();  // no user namespace to map them in
  creds_.groups.clear();
  // fcntl is native where the guest's Landlock signal scope keeps F_SETOWN's
  // signals in the sandbox (see GuestLandlock).
  spec_.filter = BuildSeccompFilter(signal_scope() ? SyscallTableWithSignalScope()
                                                   : SyscallTableWithoutNamespaces());
  // Where the host lets no tmpfs cap the store, a file may grow to --disk at
  // most (EFBIG past it), and the memory cgroup, where there is one, counts
  // what all of them hold.
  if (!host_store_.capped()) wall_rlimits_.push_back({RLIMIT_FSIZE, o_.disk_bytes});
  // A core file would be written by the kernel in the host's tree (where
  // core_pattern names it), not in a mount view: none.
  wall_rlimits_.push_back({RLIMIT_CORE, 0});
  stdio_.SetPipeOwner(guest_host_uid_, guest_host_gid_);
  log::Notice(
      absl::StrFormat(
          "notice: no namespaces (%s): the sandbox stands on the seccomp wall alone. The guest "
          "runs "
          "as %s, sees host process ids, and has no network%s; `sentry check` "
          "says what this host lacks, and --require-namespaces refuses to run without them.",
          why, rootless_ ? "the caller's own uid" : "a host uid of its own",
          host_store_.capped() ? "" : ", and --disk caps each file only (no tmpfs here)"),
      log::Level::kWarn);
  return std::nullopt;
}

int Run::Execute() {
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug(absl::StrCat("run: ", absl::StrJoin(o_.argv, " "), " (memory ", o_.memory_bytes,
                            " bytes, pids ", o_.pids, ", timeout ", o_.timeout_sec, " s)"));
  }
  if (auto e = Prepare()) return Conclude(e);
  if (auto e = BuildSandbox()) return Conclude(e);
  log::Debug("run: sandbox built");
  if (auto e = Admit()) return Conclude(e);
  if (auto e = AttachGuest()) return Conclude(e);
  log::Debug("run: the guest waits at its execve");
  if (o_.before_go) {
    if (int code = o_.before_go(spawned_->init_pid(), spawned_->guest_pid()); code != 0) {
      return Conclude(RunError{code, "the container was ended before it started"});
    }
  }
  if (auto e = LaunchGuest()) return Conclude(e);
  Supervise();
  return Conclude(std::nullopt);
}

}  // namespace run_internal

using run_internal::Run;

int RunSandbox(const RunOptions& options) {
  if (options.adopt_fd >= 0) return AdoptSandbox(options);
  if (options.argv.empty()) {
    std::fprintf(stderr, "sentry: no command given; usage: sentry run [flags] -- CMD [ARGS...]\n");
    return kExitSentryError;
  }
  return Run(options, /*warm=*/false).Execute();
}

void RunSandboxThenExit(const RunOptions& options) {
  if (options.adopt_fd >= 0 || options.argv.empty()) std::exit(RunSandbox(options));
#if defined(__SANITIZE_ADDRESS__)
  // Sanitized builds destroy the run, so that LeakSanitizer checks its end.
  int sanitized_code = RunSandbox(options);
  timeline::Mark("exit");
  std::exit(sanitized_code);
#endif
  // Never destroyed: by now the sandbox is gone (its processes reaped, its
  // cgroups removed, the result written) and what is left is this
  // process's own, which the exit frees at once.
  auto* run = new Run(options, /*warm=*/false);
  int code = run->Execute();
  run->EndHelpers();
  std::fflush(nullptr);
  timeline::Mark("exit");
  _exit(code);
}

}  // namespace sentry
