// The xattr family: names resolve as usual (ENOENT, ENOTDIR, EBADF...), then
// extended attributes are unsupported on every sandbox file, consistently.
#include <fcntl.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {

SysResult<uint64_t> PathXattr(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  (void)node;
  return Errno{EOPNOTSUPP};
}

SysResult<uint64_t> LinkXattr(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), false, false));
  (void)node;
  return Errno{EOPNOTSUPP};
}

SysResult<uint64_t> FdXattr(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, ctx.args.Int(0)));
  (void)ref;
  return Errno{EOPNOTSUPP};
}

}  // namespace sentry::sys
