// Opening a FIFO of the sandbox: a blocking open waits for the other end, on
// a fiber (see fifo_open.cc).
#ifndef SENTRY_SYSCALLS_FIFO_OPEN_H_
#define SENTRY_SYSCALLS_FIFO_OPEN_H_

#include <string>

#include "sentry/kernel/syscall_context.h"
#include "vfs/vfs.h"

namespace sentry::sys {

// Opens node, a FIFO held in the store, with open(2)'s flags (access already
// checked); path is its sandbox path, for /proc/PID/fd.
SysResult<uint64_t> OpenFifo(SyscallContext& ctx, const vfs::NodeRef& node, int flags,
                             std::string path);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_FIFO_OPEN_H_
