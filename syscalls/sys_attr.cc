// chmod, fchmod, fchmodat, fchmodat2, chown, fchown, lchown, fchownat, truncate:
// attributes live in the VFS nodes (emulated ownership), data in the store.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

SysResult<uint64_t> DoChmod(SyscallContext& ctx, const vfs::NodeRef& node, mode_t mode) {
  SYS_TRY(ctx.vfs().Chmod(*node, mode, ctx.creds()));
  return 0;
}

SysResult<uint64_t> DoChown(SyscallContext& ctx, const vfs::NodeRef& node, uid_t uid, gid_t gid) {
  SYS_TRY(ctx.vfs().Chown(*node, uid, gid, ctx.creds()));
  return 0;
}

}  // namespace

SysResult<uint64_t> Chmod(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  return DoChmod(ctx, node, ctx.args.Uint(1));
}

SysResult<uint64_t> Fchmod(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeOfFd(ctx, ctx.args.Int(0), EPERM));
  return DoChmod(ctx, node, ctx.args.Uint(1));
}

SysResult<uint64_t> Fchmodat(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node,
                       NodeAt(ctx, ctx.args.Int(0), ctx.args.Ptr(1), true, false));
  return DoChmod(ctx, node, ctx.args.Uint(2));
}

SysResult<uint64_t> Fchmodat2(SyscallContext& ctx) {
  int flags = ctx.args.Int(3);
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node,
                       NodeAt(ctx, ctx.args.Int(0), ctx.args.Ptr(1), !(flags & AT_SYMLINK_NOFOLLOW),
                              flags & AT_EMPTY_PATH));
  if (node->kind() == vfs::NodeKind::kSymlink) return Errno{EOPNOTSUPP};
  return DoChmod(ctx, node, ctx.args.Uint(2));
}

SysResult<uint64_t> Chown(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  return DoChown(ctx, node, ctx.args.Uint(1), ctx.args.Uint(2));
}

SysResult<uint64_t> Lchown(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), false, false));
  return DoChown(ctx, node, ctx.args.Uint(1), ctx.args.Uint(2));
}

SysResult<uint64_t> Fchown(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeOfFd(ctx, ctx.args.Int(0), EPERM));
  return DoChown(ctx, node, ctx.args.Uint(1), ctx.args.Uint(2));
}

SysResult<uint64_t> Fchownat(SyscallContext& ctx) {
  int flags = ctx.args.Int(4);
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node,
                       NodeAt(ctx, ctx.args.Int(0), ctx.args.Ptr(1), !(flags & AT_SYMLINK_NOFOLLOW),
                              flags & AT_EMPTY_PATH));
  return DoChown(ctx, node, ctx.args.Uint(2), ctx.args.Uint(3));
}

SysResult<uint64_t> Truncate(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  if (ctx.args.Long(1) < 0) return Errno{EINVAL};
  if (node->IsDir()) return Errno{EISDIR};
  if (node->kind() != vfs::NodeKind::kFile) return Errno{EINVAL};
  SYS_TRY(ctx.vfs().Permission(*node, W_OK, ctx.creds()));
  SYS_TRY(ctx.vfs().Truncate(*node, ctx.args.Long(1), ctx.creds()));
  return 0;
}

}  // namespace sentry::sys
