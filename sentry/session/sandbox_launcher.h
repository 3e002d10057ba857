// SandboxLauncher: starts the long-lived sandbox of a session: a `sentry
// run` sandbox (its own supervisor process, the same walls, limits and
// cgroup as a run) whose program is the session kernel, with its stdin and
// stdout pipes held by the server.
//
// As agent/cold_runner.h does for runs, a small fork server (a "zygote"),
// forked while the server still has one thread, forks one child per
// session; the child runs RunSandbox with the session's options and is the
// sandbox's supervisor for the session's life. The zygote answers each
// launch with a pidfd of that child, so the server can end it (SIGTERM, as
// `sentry run` is ended) without owning it.
//
// The supervisor's fd 0 and 1 are the kernel's request and frame pipes
// (relayed into the guest as its stdio), fd 2 its own messages (bounded by
// the reader), and fd 3 gets its --log line at the end: the run's result
// object, which says whether the cgroup's memory limit ended it. It also
// holds one end of a control socket (RunOptions::control_fd), the server
// the other.
#ifndef SENTRY_SESSION_SANDBOX_LAUNCHER_H_
#define SENTRY_SESSION_SANDBOX_LAUNCHER_H_

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/run.h"

namespace sentry::session {

// What one session's sandbox is made with, on top of the server's options.
struct SandboxSpec {
  std::vector<std::string> argv;  // the kernel's command line (python3 -c SOURCE ...)
  uint64_t memory_bytes = 0;      // 0: the server's
  uint64_t pids = 0;
  uint64_t disk_bytes = 0;
  uint64_t nofile = 0;
  double cpus = -1;  // <0: the server's
  // The backstop on the supervisor's clock (the session's lifetime, with
  // slack): the sandbox ends by itself even if the server is gone.
  double timeout_sec = 0;
  bool network_none = false;
  std::vector<std::string> allow;  // HOST[:PORT] rules, within the server's
  std::vector<std::string> env;    // extra K=V
  // Adopt mode (sentry/run/adopt.h): the sandbox is a forked child of
  // another session's, handed over on this SOCK_SEQPACKET socket by that
  // session's supervisor (Tracer::HandOffForkChild). The spec is then the
  // parent's (its limits; argv is not run). Borrowed: Launch passes a copy.
  int adopt_fd = -1;
};

// The server's ends of one sandbox.
struct SandboxProcess {
  UniqueFd pidfd;     // the supervisor
  UniqueFd requests;  // write: the kernel's fd 0
  UniqueFd frames;    // read: the kernel's fd 1
  UniqueFd messages;  // read: the supervisor's stderr
  UniqueFd log;       // read: the supervisor's --log line, at its end
  // The supervisor's control socket (SOCK_SEQPACKET; sentry/run/fork_control.h):
  // a fork is prepared through it (sentry/session/FORK.md).
  UniqueFd control;
};

class SandboxLauncher final {
 public:
  // Forks the zygote, which keeps base. Call while the process has one thread.
  static absl::StatusOr<std::unique_ptr<SandboxLauncher>> Start(const RunOptions& base);
  ~SandboxLauncher();
  SandboxLauncher(const SandboxLauncher&) = delete;
  SandboxLauncher& operator=(const SandboxLauncher&) = delete;

  // Starts a sandbox (returns once its supervisor runs; the kernel says
  // "ready" on its frames pipe when it is).
  absl::StatusOr<SandboxProcess> Launch(const SandboxSpec& spec);

 private:
  SandboxLauncher(UniqueFd sock, pid_t zygote) : sock_(std::move(sock)), zygote_(zygote) {}
  std::mutex mu_;  // one launch at a time on the socket
  UniqueFd sock_;
  pid_t zygote_;
};

}  // namespace sentry::session

#endif  // SENTRY_SESSION_SANDBOX_LAUNCHER_H_
