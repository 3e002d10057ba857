// The go message (sentry -> guest, see LoaderPipes::go_read): what the guest
// needs for its execve, written by EncodeGuestLaunch (loader.h) and read by
// the guest before its execve with ReadLaunch. Internal to the loader.
#ifndef SENTRY_LOADER_LAUNCH_H_
#define SENTRY_LOADER_LAUNCH_H_

#include <cstdint>

#include "loader/loader.h"

namespace sentry {

// The go message: a header, the rlimits, then NUL-terminated strings (the
// path, argv, envp). Static: the loader allocates nothing after clone().
struct LaunchHeader {
  uint32_t bytes;  // the whole message
  uint32_t argc, envc, rlimits;
};
struct LaunchRlimit {
  int32_t resource;
  uint32_t unused;
  uint64_t soft, hard;
};
struct Launch {
  LaunchHeader header;
  LaunchRlimit rlimits[kMaxLaunchRlimits];
  char* path;
  char** argv;
  char** envp;
};

// Reads and checks the go message into static memory (the loader allocates
// nothing after clone()); false if it is missing or malformed. Runs on the
// guest's own stack: not instrumented in sanitizer builds (see loader.cc).
__attribute__((no_sanitize("address", "undefined"))) bool ReadLaunch(int fd, Launch* l);

}  // namespace sentry

#endif  // SENTRY_LOADER_LAUNCH_H_
