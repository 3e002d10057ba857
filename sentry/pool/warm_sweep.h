// The directories of warm pools ($TMPDIR/sentry-warm-PID-XXXXXX, /tmp when
// TMPDIR is unset or unfit: the pool's socket and its ready count) that a
// crashed server left behind.
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

// Where warm directories go: $TMPDIR when it is an absolute path to a
// directory short enough for the pool's socket path (sun_path holds 108
// bytes), else /tmp.
std::string WarmDirParent();

// Removes the stale warm directories under dir; how many it removed.
int SweepStaleWarmDirs(const std::string& dir = WarmDirParent());

// Makes dir/lock and holds an exclusive flock on it (the returned fd, which
// the pool keeps open); an invalid fd on failure.
UniqueFd LockWarmDir(const std::string& dir);

}  // namespace sentry

#endif  // SENTRY_POOL_WARM_SWEEP_H_
