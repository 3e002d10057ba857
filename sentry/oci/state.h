// A container's state on disk, under --root: ROOT/ID/state.json, the start
// fifo the monitor waits on, and the lock that serializes commands on ID.
//
// The monitor is the host process whose pid the engine gets (the pid file):
// the `sentry` that runs the sandbox and exits with the container's status.
// The status is read from the processes, never trusted from the file: a
// monitor gone (or its pid reused, told by its start time) is "stopped".
#ifndef SENTRY_OCI_STATE_H_
#define SENTRY_OCI_STATE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"

namespace sentry::oci {

enum class Status { kCreated, kRunning, kStopped };
const char* StatusName(Status s);

struct ContainerState {
  std::string id;
  std::string bundle;
  std::string rootfs;
  std::string created;  // RFC 3339
  pid_t pid = 0;        // the monitor
  uint64_t pid_start = 0;
  pid_t init_pid = 0;  // the sandbox's pid 1 (the loader)
  uint64_t init_start = 0;
  pid_t guest_pid = 0;  // the container's process
  bool started = false;
  std::map<std::string, std::string> annotations;
};

// runc's rule for ids: letters, digits, '_', '+', '-', '.'; not "." or "..".
bool ValidId(const std::string& id);

// The start time of pid in clock ticks since boot (/proc/PID/stat field 22),
// 0 if it is gone or a zombie.
uint64_t ProcessStartTime(pid_t pid);

class StateDir final {
 public:
  // Makes ROOT/ID (and ROOT) and locks it; an error if ID exists.
  static absl::StatusOr<StateDir> Create(const std::string& root, const std::string& id);
  // Opens ROOT/ID and locks it, waiting for the command that holds it; an
  // error naming ID if it does not exist (or was deleted meanwhile).
  static absl::StatusOr<StateDir> Open(const std::string& root, const std::string& id);
  // Every id under root.
  static std::vector<std::string> List(const std::string& root);

  StateDir(StateDir&&) = default;
  StateDir& operator=(StateDir&&) = default;

  const std::string& path() const { return path_; }
  std::string fifo_path() const { return path_ + "/start.fifo"; }
  std::string exec_socket_path() const { return path_ + "/exec.sock"; }
  int lock_fd() const { return lock_.get(); }
  absl::StatusOr<ContainerState> Read() const;
  absl::Status Write(const ContainerState& s) const;  // atomically (rename)
  // Removes the directory and all it holds; the lock goes with the object.
  void Remove();

 private:
  StateDir(std::string path, UniqueFd lock) : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  UniqueFd lock_;
};

Status StatusOf(const ContainerState& s);

// runc's `state` JSON for s.
std::string StateJson(const ContainerState& s, bool pretty);

}  // namespace sentry::oci

#endif  // SENTRY_OCI_STATE_H_
