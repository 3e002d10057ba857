// getcwd, chdir, fchdir, umask: the per-process fs context the sentry keeps.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "sentry/kernel/kernel.h"
#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {

SysResult<uint64_t> Getcwd(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(std::string path, ctx.vfs().PathOf(ctx.task.fs->cwd));
  size_t size = ctx.args.Ulong(1);
  if (size < path.size() + 1) return Errno{ERANGE};
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(0), path.c_str(), path.size() + 1));
  return path.size() + 1;
}

namespace {

SysResult<uint64_t> SetCwd(SyscallContext& ctx, const vfs::NodeRef& node) {
  if (!node->IsDir()) return Errno{ENOTDIR};
  SYS_TRY(ctx.vfs().Permission(*node, X_OK, ctx.creds()));
  // The working directories the guest's library reads go first (region.h
  // SENTRY_FM_CWD): this one may be shared by other threads.
  if (FastMeta* fm = ctx.kernel.fast_meta()) fm->ForgetCwds();
  ctx.task.fs->cwd = node;
  return 0;
}

}  // namespace

SysResult<uint64_t> Chdir(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  return SetCwd(ctx, node);
}

SysResult<uint64_t> Fchdir(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeOfFd(ctx, ctx.args.Int(0), ENOTDIR));
  return SetCwd(ctx, node);
}

SysResult<uint64_t> Umask(SyscallContext& ctx) {
  mode_t old = ctx.task.fs->umask;
  ctx.task.fs->umask = ctx.args.Uint(0) & 0777;
  return old;
}

}  // namespace sentry::sys
