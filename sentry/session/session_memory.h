// The memory a session's sandbox holds now: its cgroup's usage. The
// supervisor names its cgroup "sentry-PID" under its own (run/cgroups.h),
// which is the server's: the supervisor is forked from the server's
// launcher and stays in its cgroup.
#ifndef SENTRY_SESSION_SESSION_MEMORY_H_
#define SENTRY_SESSION_SESSION_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace sentry::session {

// nullopt where the sandbox has no memory cgroup (rootless without a
// delegated subtree).
std::optional<uint64_t> SessionMemoryBytes(pid_t supervisor_pid);

}  // namespace sentry::session

#endif  // SENTRY_SESSION_SESSION_MEMORY_H_
