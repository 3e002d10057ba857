// `sentry exec` (runc's exec): a second guest process in a running
// container, made exactly as the first is made: in the sandbox's namespaces
// and cgroups, with no capability, the sandbox's ids, the same seccomp
// filter (a listener of its own) and the monitor as its tracer, so the same
// VFS answers it and the same walls hold. See sentry/run/exec_guest.cc for
// the monitor's side.
//
// Its host process tree:
//   sentry exec ─ helper (host pid namespace; its pid goes in --pid-file,
//                 it exits with the process's status and passes signals on)
//                 └─ the process (the sandbox's pid namespace; killed with
//                    the helper, and with the sandbox's pid 1)
#ifndef SENTRY_OCI_EXEC_H_
#define SENTRY_OCI_EXEC_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/oci/lifecycle.h"

namespace sentry::oci {

struct ExecOptions {
  std::string id;
  std::string process_file;  // an OCI process JSON; else config.json's process
  bool detach = false;
  std::string pid_file;
  std::string console_socket;
  bool tty = false;
  std::string cwd;
  std::vector<std::string> env;  // K=V, over the process's own
  std::string user;              // UID[:GID]
  std::vector<std::string> args;
  // The process gets exec's fds 3..3+N-1 as its own (they travel to the
  // monitor with its stdio: at most kMaxExecPreservedFds).
  int preserve_fds = 0;
  std::string pidfd_socket;  // gets a pidfd of the helper (the pid file's)
};

inline constexpr int kMaxExecPreservedFds = 5;

// The process to run, as exec sends it to the monitor.
struct ExecProcess {
  std::vector<std::string> args, env;
  std::string cwd = "/";
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> groups;
  int umask = -1;  // user.umask; -1: the container's
  bool terminal = false;
};

// An OCI process JSON (runtime-spec's "process" object) checked field by
// field; the error names the field that is wrong.
absl::StatusOr<ExecProcess> ParseProcessJson(const std::string& text);

// The exit code of the command: in the foreground the process's own
// (128+N for a signal), with --detach 0 once it runs.
int Exec(const Globals& g, const ExecOptions& e);

}  // namespace sentry::oci

#endif  // SENTRY_OCI_EXEC_H_
