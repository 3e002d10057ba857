// The monitor: the process an engine knows as the container's (its pid is
// in the pid file). Forked by `create`, it runs the sandbox as `sentry run`
// does, but stops with the guest at its execve until `start` writes to the
// start fifo; it then supervises the guest and exits with its status.
//
// Until the guest is ready its stderr is a pipe that `create` reads, so a
// failed create reports sentry's own error, not the engine's "exit 125".
#ifndef SENTRY_OCI_MONITOR_H_
#define SENTRY_OCI_MONITOR_H_

#include <string>

#include "sentry/base/unique_fd.h"
#include "sentry/run/run.h"

namespace sentry::oci {

struct MonitorArgs {
  RunOptions run;
  std::string fifo_path;
  std::string exec_socket_path;  // where `exec` reaches the running sandbox (0600)
  int ready_fd = -1;             // create's: "R INIT GUEST\n" once the guest waits
  int error_fd = -1;             // create's: the monitor's stderr until then
  int tty_fd = -1;               // the pty's slave of a terminal container, else -1
  bool detach = true;            // a session of its own (not `run` in the foreground)
};

[[noreturn]] void MonitorMain(MonitorArgs args);

// A unix socket at path (any length): listening (0600, non-blocking
// accepts), or connected to it; invalid on failure (errno says why).
UniqueFd UnixSocketAt(const std::string& path, bool listen_on);

}  // namespace sentry::oci

#endif  // SENTRY_OCI_MONITOR_H_
