// The directories of warm pools (/tmp/sentry-warm-PID-XXXXXX: the pool's
// socket and its ready count) that a crashed server left behind.
//
// A live server holds an exclusive flock on the directory's "lock" file for
// as long as its pool lives (the kernel drops it when the process dies,
// however it dies). A directory is stale when its lock can be taken; one
// without a lock yet (a server between mkdtemp and flock) is stale only
// when the pid in its name is gone. Only directories of the caller's own
// uid, never through a symlink, are looked at.
#ifndef SENTRY_POOL_WARM_SWEEP_H_
#define SENTRY_POOL_WARM_SWEEP_H_

#include <string>

#include "sentry/base/unique_fd.h"

namespace sentry {

inline constexpr const char* kWarmDirPrefix = "sentry-warm-";

// Removes the stale warm directories under dir ("/tmp"); how many it removed.
int SweepStaleWarmDirs(const std::string& dir = "/tmp");

// Makes dir/lock and holds an exclusive flock on it (the returned fd, which
// the pool keeps open); an invalid fd on failure.
UniqueFd LockWarmDir(const std::string& dir);

}  // namespace sentry

#endif  // SENTRY_POOL_WARM_SWEEP_H_
