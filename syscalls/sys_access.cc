// access, faccessat, faccessat2, readlink, readlinkat.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/fast_meta_publish.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

SysResult<uint64_t> DoAccess(SyscallContext& ctx, int dirfd, GuestAddr path, int mode, int flags) {
  if (mode & ~(R_OK | W_OK | X_OK)) return Errno{EINVAL};
  if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(std::string p, ReadPath(ctx, path));
  SYS_ASSIGN_OR_RETURN(
      vfs::NodeRef node,
      NodeAtPublished(ctx, dirfd, p, !(flags & AT_SYMLINK_NOFOLLOW), flags & AT_EMPTY_PATH));
  if (mode == F_OK) return 0;
  SYS_TRY(ctx.vfs().Permission(*node, mode, ctx.creds()));
  return 0;
}

SysResult<uint64_t> DoReadlink(SyscallContext& ctx, int dirfd, GuestAddr path, GuestAddr buf,
                               int64_t size) {
  if (size <= 0) return Errno{EINVAL};
  // An empty path reads the link an O_PATH|O_NOFOLLOW fd names (Linux 2.6.39).
  SYS_ASSIGN_OR_RETURN(std::string name, ReadPath(ctx, path));
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAtPublished(ctx, dirfd, name, false, true));
  if (node->kind() != vfs::NodeKind::kSymlink) return Errno{name.empty() ? ENOENT : EINVAL};
  size_t n = std::min<size_t>(node->target.size(), static_cast<size_t>(size));
  SYS_TRY(ctx.mem.CopyOut(buf, node->target.data(), n));
  return n;
}

}  // namespace

SysResult<uint64_t> Access(SyscallContext& ctx) {
  return DoAccess(ctx, AT_FDCWD, ctx.args.Ptr(0), ctx.args.Int(1), 0);
}

SysResult<uint64_t> Faccessat(SyscallContext& ctx) {
  return DoAccess(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2), 0);
}

SysResult<uint64_t> Faccessat2(SyscallContext& ctx) {
  return DoAccess(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2), ctx.args.Int(3));
}

SysResult<uint64_t> Readlink(SyscallContext& ctx) {
  return DoReadlink(ctx, AT_FDCWD, ctx.args.Ptr(0), ctx.args.Ptr(1), ctx.args.Int(2));
}

SysResult<uint64_t> Readlinkat(SyscallContext& ctx) {
  return DoReadlink(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Ptr(2), ctx.args.Int(3));
}

}  // namespace sentry::sys
