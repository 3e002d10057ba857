// The session kernel's Python source (sentry/session/kernel.py), embedded at
// build time: the program a session's sandbox runs as
// `python3 -c SOURCE [--preload MOD,...]`. Its frames are described in
// sentry/session/README.md.
#ifndef SENTRY_SESSION_KERNEL_SOURCE_H_
#define SENTRY_SESSION_KERNEL_SOURCE_H_

#include <string_view>

namespace sentry {

// The text of kernel.py, byte for byte (no NUL inside).
std::string_view SessionKernelSource();

}  // namespace sentry

#endif  // SENTRY_SESSION_KERNEL_SOURCE_H_
