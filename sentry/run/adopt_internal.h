// The adoption of a forked child by its own supervisor (adopt.h), in one
// class adopt.cc (its phases) and adopt_inject.cc (the injected calls)
// share.
#ifndef SENTRY_RUN_ADOPT_INTERNAL_H_
#define SENTRY_RUN_ADOPT_INTERNAL_H_

#include <signal.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sentry/abi/guest_memory.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/platform/handoff_wire.h"
#include "sentry/platform/notify_loop.h"
#include "sentry/platform/tracer.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/fork_parent.h"
#include "sentry/run/run.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/run/stdio.h"

namespace sentry::adopt {

class Adoption {
 public:
  explicit Adoption(const RunOptions& o) : o_(o) {}
  int Execute();

 private:
  std::optional<std::string> Receive();
  std::optional<std::string> Seize();
  std::optional<std::string> ReadIds();
  void ConfigureTree();
  // What does not depend on the child, done before it comes: the tree's
  // configuration, the cgroups (made, joined by the child later), the tree
  // of the lower layer (its store's directory and owner given later).
  std::optional<std::string> Prepare();
  std::vector<dev_t> LowerDevices() const;
  std::optional<std::string> Build();
  // The injected calls and the fds (adopt_inject.cc); the child is left
  // running, served.
  std::optional<std::string> MakeWhole();
  std::optional<std::string> DropCapabilities(GuestMemory& mem, const user_regs_struct& at);
  // Every fd of the child replaced, during the notification of one trapped
  // call injected for it (adopt_inject.cc).
  std::optional<std::string> ReplaceFds(const user_regs_struct& at);
  int Supervise();
  int Fail(const std::string& why);
  void Answer(std::string_view what);
  void SendSignal(int sig);
  // The child's own forks (fork_parent.h), as a run's: made once it runs.
  void StartForkParent();

  RunOptions o_;
  HandOffHeader header_;
  UniqueFd pidfd_, stream_;
  pid_t child_ = -1;
  bool seized_ = false, answered_ = false, timed_out_ = false;
  bool unused_ = false;    // ended before any hand-off: nothing to clean but its own
  std::vector<int> held_;  // signals that came before the child ran: dropped
  uid_t host_uid_ = 0;
  gid_t host_gid_ = 0;
  uid_t fs_uid_ = 0;  // the file identity of the threads that reach host files
  gid_t fs_gid_ = 0;
  TreeConfig tree_;
  std::unique_ptr<vfs::Vfs> vfs_;  // built by Prepare, the kernel's from Build on
  vfs::Creds creds_;
  Cgroups cgroups_;
  // The child's move into the cgroups (their tasks files opened by Prepare),
  // on a thread of its own from the seize on (each write waits for the
  // kernel's cgroup lock: milliseconds on a busy host), joined before the
  // child runs an instruction of its own (FinishCgroupJoin). Only write(2)s
  // on that thread: the namespace helper may be forked meanwhile.
  void StartCgroupJoin();
  void FinishCgroupJoin();
  std::array<UniqueFd, 4> join_files_;
  std::thread join_;
  int join_refused_ = 0;
  GuestStdio stdio_;
  sigset_t mask_;
  UniqueFd sig_;    // SIGCHLD, SIGTERM & co (mask_)
  UniqueFd timer_;  // the --timeout backstop
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Tracer> tracer_;
  std::unique_ptr<Unotify> unotify_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<NotifyLoop> loop_;
  std::unique_ptr<run_internal::ForkParent> fork_parent_;  // a session's (control_fd)
};

}  // namespace sentry::adopt

#endif  // SENTRY_RUN_ADOPT_INTERNAL_H_
