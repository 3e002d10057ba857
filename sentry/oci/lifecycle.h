// runc's lifecycle, for one container id: create (the monitor made and
// stopped before the guest's execve), start, kill, delete, state, ps.
// Each command holds the id's lock (StateDir) for its whole length.
#ifndef SENTRY_OCI_LIFECYCLE_H_
#define SENTRY_OCI_LIFECYCLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"
#include "sentry/oci/oci_log.h"

namespace sentry::oci {

// Where the containers' state goes without --root: /run/sentry-oci for root,
// else (as runc's $XDG_RUNTIME_DIR/runc) $XDG_RUNTIME_DIR/sentry-oci where
// that directory is the caller's, or /tmp/sentry-oci-UID.
std::string DefaultStateRoot();

struct Globals {
  std::string root = DefaultStateRoot();
  OciLog* log = nullptr;
};

struct CreateOptions {
  std::string id;
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  // The guest gets this process's fds 3..3+N-1 as its own 3..3+N-1 (the
  // caller checks that they were open when sentry started).
  int preserve_fds = 0;
  // --pidfd-socket: a unix socket that gets a pidfd of the monitor (the
  // pid file's process) with SCM_RIGHTS once the container is created.
  std::string pidfd_socket;
  // `run` in the foreground: the monitor stays this process's child, and
  // the guest takes this process's terminal if it has one.
  bool foreground = false;
};

// Each returns the command's exit code (0 on success; errors are logged).
int Create(const Globals& g, const CreateOptions& c);
int Start(const Globals& g, const std::string& id);
// create + start; in the foreground (not detach) waits for the container
// and returns its exit status, then deletes it.
int RunContainer(const Globals& g, const CreateOptions& c, bool detach);
int Kill(const Globals& g, const std::string& id, int signo, bool all);
int Delete(const Globals& g, const std::string& id, bool force);
int State(const Globals& g, const std::string& id);
int List(const Globals& g, bool json, bool quiet);
int Ps(const Globals& g, const std::string& id, bool json);

// The pty runc would make for a terminal container (or exec'd process): its
// master goes to the engine over the console socket (with the slave's name,
// as runc sends it); returns the slave.
absl::StatusOr<UniqueFd> MakeConsole(const std::string& socket_path);

// Sends a pidfd of pid over a new connection to the unix socket at
// socket_path (SCM_RIGHTS, with name as the data), as runc's --pidfd-socket.
absl::Status SendPidfd(const std::string& socket_path, pid_t pid, const std::string& name);

// "9", "KILL", "SIGKILL" → 9; 0 if none.
int ParseSignal(const std::string& s);

}  // namespace sentry::oci

#endif  // SENTRY_OCI_LIFECYCLE_H_
