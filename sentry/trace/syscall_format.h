// One syscall as --trace prints it, in strace's notation:
//   openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3
//   newfstatat(3, "", {st_mode=S_IFREG|0644, st_size=48715, ...}, AT_EMPTY_PATH) = 0
//   access("/nope", R_OK) = -1 ENOENT (No such file or directory)
//
// The printer takes any syscall, whoever answered it: the dispatcher (a
// trapped call), the tracer (execve, clone, fork), or a census of native
// calls. Arguments the call reads are shown as the guest passed them; those it
// writes (a stat buffer, a read's data) only once it succeeded, as strace does.
// Guest memory is read through GuestMemory, bounded (see trace_structs.h); with
// no memory, pointers are shown as addresses.
#ifndef SENTRY_TRACE_SYSCALL_FORMAT_H_
#define SENTRY_TRACE_SYSCALL_FORMAT_H_

#include <cstdint>
#include <string>

#include "sentry/abi/guest_memory.h"

namespace sentry::trace {

struct TracedCall {
  int nr = -1;
  uint64_t args[6] = {};
  int64_t ret = 0;    // the value, or -errno
  bool done = false;  // ret is known (else what the call writes is not shown)
};

// "read", or "syscall_0x1c2" for a number with no name.
std::string SyscallName(int nr);
// The arguments, without the name and parentheses: `AT_FDCWD, "/tmp", O_RDONLY`.
std::string FormatArgs(const TracedCall& call, GuestMemory* mem);
// "name(args)".
std::string FormatCall(const TracedCall& call, GuestMemory* mem);
// What follows " = ": "3", "0x7f2a1c000000", "022", "?" (exit),
// "-1 ENOENT (No such file or directory)", "0x1 (flags FD_CLOEXEC)".
std::string FormatReturn(const TracedCall& call);

}  // namespace sentry::trace

#endif  // SENTRY_TRACE_SYSCALL_FORMAT_H_
