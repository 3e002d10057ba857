// The parent's side of a session fork (sentry/session/FORK.md, step 2): the
// control socket's requests and the re-listen at the forking thread's
// seccomp(NEW_LISTENER) stop, for whichever supervisor serves the parent: a
// run's (run.cc, S1) or a forked child's adoption (adopt.cc, S2), so that a
// forked session forks again with the same walls (fork_parent.cc).
#ifndef SENTRY_RUN_FORK_PARENT_H_
#define SENTRY_RUN_FORK_PARENT_H_

#include <sys/types.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sentry/base/unique_fd.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/platform/notify_loop.h"
#include "sentry/platform/tracer.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/fork_control.h"

namespace sentry::run_internal {

// The most seccomp filters a forking thread's chain may hold before its
// fork (each fork adds one to the parent and one to each child): "fork
// depth". The kernel's own limit is far above (56 copies of the sentry's
// filter, FORK.md); the cap keeps every task's chain short.
inline constexpr int kMaxFilterDepth = 16;

class ForkParent {
 public:
  // What the supervisor lends: all used on its tracer's thread only.
  struct Host {
    Kernel& kernel;
    Tracer& tracer;
    // The guest's listener, the table it is answered with, and the loop
    // that answers it: the re-listen replaces all three.
    std::unique_ptr<Unotify>& unotify;
    std::unique_ptr<Dispatcher>& dispatcher;
    std::unique_ptr<NotifyLoop>& loop;
    int control_fd;
    // Makes `loop` from `unotify` and `dispatcher`, and starts it.
    std::function<void()> start_loop;
    // The supervisor's own ends of the guest's stdio relays, by role.
    std::function<std::array<int, 3>()> relay_ends;
    // Ends the whole sandbox (a re-listen failed past its point of return).
    std::function<void()> kill_sandbox;
    // A process outside the task table whose end during the quiesce means
    // the sandbox ends (a run's pid 1, the loader); -1: none.
    pid_t init_pid = -1;
    // Why this sandbox cannot fork ("": it can), answered EOPNOTSUPP.
    std::string unsupported;
  };
  explicit ForkParent(Host host) : h_(std::move(host)) {}

  // A request on the control socket (readable).
  void OnControlMessage();
  // The tracer's hook: a thread's seccomp(NEW_LISTENER) stop.
  void OnListenerRequest(pid_t pid);
  // The server is still there to ask for forks.
  bool control_open() const { return control_open_; }
  // The sandbox's pid 1 (init_pid) was waited for during a quiesce.
  bool init_exited() const { return init_exited_; }
  // A re-listen that failed past its point of return ("": none).
  const std::string& fatal() const { return fork_fatal_; }

 private:
  int PrepareFork(const ControlRequest& req, std::vector<UniqueFd> handoffs, std::string* why);
  std::string QuiesceAllBut(pid_t keep);
  std::string CheckRelistenable(pid_t pid);
  std::string CloseOldListener(const std::weak_ptr<Unotify>& late);
  void OnRelistenTaken(int err, UniqueFd listener);
  void ResumeQuiesced();
  std::vector<pid_t> ForkChildrenSince(size_t first);
  void KillForkChildren(const std::vector<pid_t>& children, const std::string& why);

  Host h_;
  // A prepared fork (fork_), the one being re-listened (relisten_), and
  // the tasks held stopped meanwhile.
  struct ForkPrepare {
    bool active = false;
    uint64_t id = 0;
    pid_t thread = 0;  // as the sandbox names it
    uint32_t count = 0;
    std::vector<UniqueFd> handoffs;
    size_t first_child = 0;  // its children: Kernel::fork_children from here
  };
  ForkPrepare fork_, relisten_;
  pid_t relisten_parent_ = 0;
  bool relisten_busy_ = false;
  bool control_open_ = true;
  struct Quiesced {
    pid_t tid;
    bool group_stop;
  };
  std::vector<Quiesced> quiesced_;
  bool init_exited_ = false;
  std::string fork_fatal_;
};

}  // namespace sentry::run_internal

#endif  // SENTRY_RUN_FORK_PARENT_H_
