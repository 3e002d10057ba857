// The hint of a denied file operation that no handler explained: chosen from
// what was called on which path, so that it is true for that call or absent.
// (A read of a 0600 file in a -v mount is not a write to a system file, and
// a write under the home is not to be told to write under the home.)
#ifndef SENTRY_RUN_DENIAL_HINT_H_
#define SENTRY_RUN_DENIAL_HINT_H_

#include <string>
#include <vector>

#include "sentry/run/sandbox_tree.h"

namespace sentry {

// Where a run's paths are: its -v mounts, its cwd (relative paths are taken
// from it) and its home.
struct DenialPlace {
  std::vector<BindMount> mounts;
  std::string cwd;
  std::string home;
};

// The hint for err (EACCES, EPERM or EROFS) on `call` as the trace formats it
// ("openat(AT_FDCWD, \"/data/x\", O_RDONLY)"); "" where none is surely true.
std::string FileDenialHint(const std::string& syscall, const std::string& call, int err,
                           const DenialPlace& place);

}  // namespace sentry

#endif  // SENTRY_RUN_DENIAL_HINT_H_
