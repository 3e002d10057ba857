// The one run behind `sentry run` and each warm sandbox of `sentry pool`:
// its phases (run.cc: the sandbox, the command, the guest's start;
// run_end.cc: supervision and the end), in one class both files share.
#ifndef SENTRY_RUN_RUN_INTERNAL_H_
#define SENTRY_RUN_RUN_INTERNAL_H_

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/loader.h"
#include "sentry/kernel/census.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/platform/notify_loop.h"
#include "sentry/platform/tracer.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/fork_control.h"
#include "sentry/run/fork_parent.h"
#include "sentry/run/phase_clock.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "sentry/run/sandbox_net.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/run/script_copy.h"
#include "sentry/run/seccomp_only.h"
#include "sentry/run/spawn.h"
#include "sentry/run/stdio.h"
#include "sentry/run/subid_range.h"
#include "sentry/tools/tool_channel.h"

namespace sentry::run_internal {

// The sandbox tree and the guest's credentials a run's options name (a
// run's and a fork child's adoption alike: adopt.cc).
void TreeFromOptions(const RunOptions& o, TreeConfig& tree, vfs::Creds& creds);

// A timerfd that fires once after `seconds` (unarmed for 0 or less): a
// supervisor's --timeout clock (run_end.cc).
UniqueFd TimeoutTimer(double seconds);

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
  // Takes down a sandbox that will serve no run (a pool that stops).
  void Abandon();
  // A warm interpreter (warm_python_run.cc): the sandbox, then python3 with
  // the bootstrap, up to where it waits for its script.
  std::optional<RunError> WarmPython(const std::vector<std::string>& preload);
  // Answers the guest's ptrace events until fd is readable (true) or the
  // guest is gone (false): a warm interpreter's wait for its client.
  bool IdleUntilReadable(int fd, int timeout_ms);
  bool python() const { return python_; }
  void Prioritize();
  // Ends what this process's exit would leave running for a moment (the
  // /proc opener's helper, see GuestProcOpener): the last step of a run
  // whose process then exits without destroying it (RunSandboxThenExit).
  void EndHelpers() {
    if (kernel_) kernel_->proc_opener().set_namespace_pid(0);
  }

 private:
  std::optional<RunError> Prepare();
  std::optional<RunError> BuildSandbox();
  std::optional<RunError> Admit();
  std::optional<RunError> AttachGuest();
  std::optional<RunError> LaunchGuest();
  std::optional<RunError> StartTrace();
  // --tool: the channel's node, its thread and the module (run_tools.cc).
  std::optional<RunError> AdmitTools();
  std::optional<RunError> UseSeccompWallAlone(const std::string& why);
  // Without root: the subordinate range or the single id (run_ids.cc).
  std::optional<RunError> ChooseIdMode();
  // Single-id mode (see run_ids.cc), and the notice that says why.
  void UseSingleId();
  void SaySingleId(const std::string& why);
  // --userns=auto took a range the helpers then refused (spawn_error, a
  // PermissionDenied of MapWithHelpers): single-id mode instead, said.
  // False (the error stands) for --userns=range or any other error.
  bool FallBackFromRange(const absl::Status& spawn_error);
  // The result's word for the id mode without root ("" with root).
  std::string IdModeWall() const;
  int ServePython(const RunOptions& request, int peer_fd);
  std::optional<RunError> AdmitPython();
  std::optional<RunError> ApplyRequestRlimits();
  // --copy HOST:GUEST, each copied into the VFS (cold and warm runs).
  std::optional<RunError> CopyIn();
  // The guest's cwd into *cwd: the home whatever the uid (--root too, so
  // that -v recipes mean one place for all), or --workdir, made if missing.
  std::optional<RunError> MakeGuestCwd(std::string* cwd);
  // RunOptions::files, written into the VFS (relative paths under cwd).
  std::optional<RunError> WriteRequestFiles(const std::string& cwd);
  absl::StatusOr<Spawned> StartSandbox();
  // Spawned::Start, with the census filter in the guest under --census.
  absl::StatusOr<Spawned> SpawnLoader();
  LandlockPlan GuestLandlock() const;
  void Supervise();
  // One request on the exec socket (see exec_guest.cc).
  void ServeExec(int conn);
  // Stops the exec'd processes' notify loops (theirs, and the first one's).
  void StopLoops();
  // SIGINT or SIGQUIT as a terminal sends them (see Supervise).
  void SignalForeground(int signo);
  // A session fork (fork_parent.h; sentry/session/FORK.md step 2): made by
  // AttachGuest when the run has a control socket.
  void StartForkParent();
  int Conclude(std::optional<RunError> error);
  void Report(const RunResult& r);
  // The result's `limits`: which mechanism holds each (run_end.cc).
  std::vector<std::pair<std::string, std::string>> EnforcedLimits() const;
  // Kills the sandbox and reaps its pid 1 (once).
  void EndSandboxProcesses();
  // What outlives the processes: the network servers, the cgroups and,
  // without namespaces, the host store.
  void ReleaseSandbox();
  void KillSandbox() {
    // Without a pid namespace nothing dies with the loader: every process of
    // the guest's uid is killed instead, and the loader, their subreaper,
    // reaps them and exits when it has no child left.
    // One sweep is enough: after it no process of the uid is left to fork,
    // and the loader makes the guest only once.
    // Without root that uid is the caller's own: kill(-1) as it would end
    // the caller's other processes too, so the loader's tree alone is killed
    // (every guest process is its descendant: it is their subreaper).
    if (seccomp_only() && rootless_) {
      if (spawned_) KillTreeOf(spawned_->init_pid());
    } else if (seccomp_only()) {
      if (!uid_swept_.exchange(true)) KillEveryProcessOf(guest_host_uid_);
    } else if (spawned_) {
      kill(spawned_->init_pid(), SIGKILL);
    }
  }
  // No namespaces: the seccomp wall alone (see UseSeccompWallAlone).
  bool seccomp_only() const { return !spec_.namespaces; }
  // Whether the guest's Landlock domain has the signal scope (ABI 6+).
  bool signal_scope() const { return o_.landlock && LandlockAbi() >= 6; }
  // The file identity of the threads that reach host files for the guest.
  // Without root it is the caller's own: the only one it has.
  uid_t GuestFsId() const {
    if (seccomp_only() || rootless_) return guest_host_uid_;
    return host_id_base_ + 1;
  }
  gid_t GuestFsGid() const {
    if (seccomp_only() || rootless_) return guest_host_gid_;
    return host_id_base_ + 1;
  }
  // The host uid the guest's processes run as.
  uid_t GuestHostUid() const {
    if (range_ && !seccomp_only()) return subids_.HostUid(tree_.uid);
    if (seccomp_only() || rootless_) return guest_host_uid_;
    return tree_.uid == 0 ? host_id_base_ : host_id_base_ + 1;
  }
  gid_t GuestHostGid() const {
    if (range_ && !seccomp_only()) return subids_.HostGid(tree_.gid);
    if (seccomp_only() || rootless_) return guest_host_gid_;
    return tree_.uid == 0 ? host_id_base_ : host_id_base_ + 1;
  }
  // Who owns the backing store's files on the host: the user namespace's
  // root (root's block), or the one id mapped (without root).
  uid_t StoreOwnerUid() const { return rootless_ ? geteuid() : host_id_base_; }
  gid_t StoreOwnerGid() const { return rootless_ ? getegid() : host_id_base_; }

  RunOptions o_;
  const bool warm_;
  int peer_fd_ = -1;    // a pool's client: its hang-up or signal ends the run
  int client_fd_ = -1;  // the same, kept to answer it
  double start_ms_;
  PhaseClock clock_;
  TreeConfig tree_;
  LoaderSpec spec_;
  GuestStdio stdio_;
  Cgroups cgroups_;
  std::optional<Spawned> spawned_;
  // Set once the first sweep of the guest's uid is done (see KillSandbox).
  std::atomic<bool> uid_swept_{false};
  // With namespaces, the sandbox's block of host ids (spawn.h): a slot of
  // its own when the sentry is root, held until the run object goes.
  IdSlot id_slot_;
  uid_t host_id_base_ = kHostIdBase;
  // The caller is not root: the user namespace is the caller's (single-id
  // mode: its own uid and gid map to the guest's), and without namespaces
  // the guest runs as the caller (see DESIGN.md, "Who makes the sandbox").
  const bool rootless_ = geteuid() != 0;
  // With seccomp_only() or rootless_, the guest's processes' host ids.
  uid_t guest_host_uid_ = rootless_ ? geteuid() : 0;
  gid_t guest_host_gid_ = rootless_ ? getegid() : 0;
  // Without root, with a subordinate range (subid_range.h): the user
  // namespace maps it (range_), else the caller's single id.
  SubidPlan subids_;
  bool range_ = false;
  HostStore host_store_;  // with seccomp_only(), the backing store
  // The sentry's CPU on the guest's calls, shared by every loop below and
  // the kernel's listings-ahead thread. Declared before kernel_: it outlives
  // that thread.
  CpuShare cpu_share_;
  // --tool. Declared before kernel_: it outlives the /dev node that points at it.
  std::unique_ptr<tools::ToolChannel> tools_;
  std::unique_ptr<Kernel> kernel_;
  SandboxNet net_;  // after kernel_: stopped before the kernel goes
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<Unotify> unotify_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<NotifyLoop> loop_;
  // Each exec'd process's listener and the loop that answers it (the loop
  // goes first: it uses the listener).
  struct ExecLoop {
    std::unique_ptr<Unotify> unotify;
    std::unique_ptr<NotifyLoop> loop;
  };
  std::vector<ExecLoop> exec_loops_;
  std::unique_ptr<ForkParent> fork_parent_;   // a session's (control_fd), else none
  std::shared_ptr<Census> census_;            // --census
  std::vector<sock_filter> ordinary_filter_;  // --census: decides each call
  bool sync_wakeup_ = true;
  std::optional<cpu_set_t> early_pin_;  // the mask a cold run comes back to
  cpu_set_t HostCpus() const;           // the CPUs the guest may run on (sysfs.h)
  KernelConfig KernelConfigOf() const;  // run_kernel_config.cc
  std::optional<cpu_set_t> elsewhere_;  // that mask but the pinned CPU
  bool init_reaped_ = false;            // the sandbox's pid 1 (the loader) is reaped
  vfs::Creds creds_;
  vfs::NodeRef cwd_;
  GuestLaunch launch_;
  std::vector<GuestLaunch::Rlimit> wall_rlimits_;  // those of the seccomp wall alone
  ScriptCopy script_;                              // what the script argument brought in
  sigset_t mask_;
  bool timed_out_ = false;
  std::atomic<bool> watchdog_fired_{false};  // the timeout, seen by the watchdog
  int user_signal_ = 0;
  bool python_ = false;  // a warm interpreter (WarmPython), not a bare sandbox
  uint64_t cpu_base_ns_ = 0;
  int refill_nice_ = 0;  // the nice Prioritize took this thread from  // the sandbox's CPU time
                         // before its run (a warm one's start)
};

}  // namespace sentry::run_internal

#endif  // SENTRY_RUN_RUN_INTERNAL_H_
