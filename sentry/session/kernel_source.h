// The session kernel (sentry/session/kernel.py), embedded at build time.
//
// A session's sandbox runs `python3 -c SessionKernelSource() [--preload
// MOD,...]`. That program is not kernel.py's text itself but a loader of it:
// kernel.py base64-encoded, decoded and compiled one top-level block (the
// text between two blank lines) at a time into one namespace. Compiling the
// whole file at once would leave about 2.5 MiB of the compiler's freed
// memory in every kernel for its life; block by block it is a fifth of that.
// The frames the kernel speaks are in sentry/session/README.md.
#ifndef SENTRY_SESSION_KERNEL_SOURCE_H_
#define SENTRY_SESSION_KERNEL_SOURCE_H_

#include <string_view>

namespace sentry {

// The program for `python3 -c` (ASCII, about 4/3 of kernel.py's size).
std::string_view SessionKernelSource();

// kernel.py, byte for byte.
std::string_view SessionKernelFile();

}  // namespace sentry

#endif  // SENTRY_SESSION_KERNEL_SOURCE_H_
