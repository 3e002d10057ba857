// unlink, unlinkat, rename, renameat, renameat2, link, linkat, symlink,
// symlinkat, mknod, mknodat: changes to the namespace, all in the upper layer.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// Walks to a name without following a final symlink: what every call here that
// changes a name does (the name itself is the object).
SysResult<vfs::Resolved> WalkName(SyscallContext& ctx, int dirfd, GuestAddr path_addr) {
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, path_addr));
  vfs::ResolveOpts opts;
  opts.follow_final = false;
  return WalkAt(ctx, dirfd, path, opts);
}

SysResult<uint64_t> DoUnlink(SyscallContext& ctx, int dirfd, GuestAddr path, int flags) {
  if (flags & ~AT_REMOVEDIR) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(vfs::Resolved r, WalkName(ctx, dirfd, path));
  if (flags & AT_REMOVEDIR) {
    SYS_TRY(ctx.vfs().Rmdir(r, ctx.creds()));
  } else {
    SYS_TRY(ctx.vfs().Unlink(r, ctx.creds()));
  }
  return 0;
}

SysResult<uint64_t> DoRename(SyscallContext& ctx, int olddirfd, GuestAddr oldpath, int newdirfd,
                             GuestAddr newpath, unsigned flags) {
  SYS_ASSIGN_OR_RETURN(vfs::Resolved from, WalkName(ctx, olddirfd, oldpath));
  SYS_ASSIGN_OR_RETURN(vfs::Resolved to, WalkName(ctx, newdirfd, newpath));
  SYS_TRY(ctx.vfs().Rename(from, to, flags, ctx.creds()));
  return 0;
}

SysResult<uint64_t> DoLink(SyscallContext& ctx, int olddirfd, GuestAddr oldpath, int newdirfd,
                           GuestAddr newpath, int flags) {
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, olddirfd, oldpath, flags & AT_SYMLINK_FOLLOW,
                                                 flags & AT_EMPTY_PATH));
  SYS_ASSIGN_OR_RETURN(vfs::Resolved to, WalkName(ctx, newdirfd, newpath));
  SYS_TRY(ctx.vfs().Link(node, to, ctx.creds()));
  return 0;
}

SysResult<uint64_t> DoSymlink(SyscallContext& ctx, GuestAddr target_addr, int newdirfd,
                              GuestAddr linkpath) {
  SYS_ASSIGN_OR_RETURN(std::string target, ReadPath(ctx, target_addr));
  SYS_ASSIGN_OR_RETURN(vfs::Resolved at, WalkName(ctx, newdirfd, linkpath));
  SYS_TRY(ctx.vfs().Symlink(at, target, ctx.creds()));
  return 0;
}

// Only FIFOs and regular files can be made: device nodes would be a way out.
SysResult<uint64_t> DoMknod(SyscallContext& ctx, int dirfd, GuestAddr path, mode_t mode) {
  vfs::NodeKind kind;
  switch (mode & S_IFMT) {
    case 0:
    case S_IFREG:
      kind = vfs::NodeKind::kFile;
      break;
    case S_IFIFO:
      kind = vfs::NodeKind::kFifo;
      break;
    case S_IFCHR:
    case S_IFBLK:
    case S_IFSOCK:
      return Errno{EPERM};
    case S_IFDIR:
      return Errno{EPERM};
    default:
      return Errno{EINVAL};
  }
  SYS_ASSIGN_OR_RETURN(vfs::Resolved at, WalkName(ctx, dirfd, path));
  SYS_TRY(ctx.vfs().Create(at, kind, ApplyUmask(ctx, mode), ctx.creds()));
  return 0;
}

}  // namespace

SysResult<uint64_t> Unlink(SyscallContext& ctx) {
  return DoUnlink(ctx, AT_FDCWD, ctx.args.Ptr(0), 0);
}
SysResult<uint64_t> Unlinkat(SyscallContext& ctx) {
  return DoUnlink(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2));
}
SysResult<uint64_t> Rename(SyscallContext& ctx) {
  return DoRename(ctx, AT_FDCWD, ctx.args.Ptr(0), AT_FDCWD, ctx.args.Ptr(1), 0);
}
SysResult<uint64_t> Renameat(SyscallContext& ctx) {
  return DoRename(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2), ctx.args.Ptr(3), 0);
}
SysResult<uint64_t> Renameat2(SyscallContext& ctx) {
  return DoRename(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2), ctx.args.Ptr(3),
                  ctx.args.Uint(4));
}
SysResult<uint64_t> Link(SyscallContext& ctx) {
  return DoLink(ctx, AT_FDCWD, ctx.args.Ptr(0), AT_FDCWD, ctx.args.Ptr(1), 0);
}
SysResult<uint64_t> Linkat(SyscallContext& ctx) {
  return DoLink(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2), ctx.args.Ptr(3),
                ctx.args.Int(4));
}
SysResult<uint64_t> Symlink(SyscallContext& ctx) {
  return DoSymlink(ctx, ctx.args.Ptr(0), AT_FDCWD, ctx.args.Ptr(1));
}
SysResult<uint64_t> Symlinkat(SyscallContext& ctx) {
  return DoSymlink(ctx, ctx.args.Ptr(0), ctx.args.Int(1), ctx.args.Ptr(2));
}
SysResult<uint64_t> Mknod(SyscallContext& ctx) {
  return DoMknod(ctx, AT_FDCWD, ctx.args.Ptr(0), ctx.args.Uint(1));
}
SysResult<uint64_t> Mknodat(SyscallContext& ctx) {
  return DoMknod(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Uint(2));
}

}  // namespace sentry::sys
