// utime, utimes, futimesat, utimensat: file timestamps.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <utime.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

SysResult<uint64_t> SetTimes(SyscallContext& ctx, const vfs::NodeRef& node, const timespec* ts) {
  SYS_TRY(ctx.vfs().Utimens(*node, ts, ctx.creds()));
  return 0;
}

// utimes-style microsecond pairs; null means "now".
SysResult<uint64_t> TimevalsAt(SyscallContext& ctx, int dirfd, GuestAddr path, GuestAddr tv_addr) {
  timespec ts[2];
  const timespec* p = nullptr;
  if (!tv_addr.null()) {
    timeval tv[2];
    SYS_TRY(ctx.mem.CopyIn(tv_addr, tv, sizeof(tv)));
    for (int i = 0; i < 2; ++i) {
      if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return Errno{EINVAL};
      ts[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
    }
    p = ts;
  }
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, dirfd, path, true, false));
  return SetTimes(ctx, node, p);
}

}  // namespace

SysResult<uint64_t> Utime(SyscallContext& ctx) {
  timespec ts[2];
  const timespec* p = nullptr;
  if (!ctx.args.Ptr(1).null()) {
    SYS_ASSIGN_OR_RETURN(utimbuf buf, ctx.mem.CopyIn<utimbuf>(ctx.args.Ptr(1)));
    ts[0] = {buf.actime, 0};
    ts[1] = {buf.modtime, 0};
    p = ts;
  }
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  return SetTimes(ctx, node, p);
}

SysResult<uint64_t> Utimes(SyscallContext& ctx) {
  return TimevalsAt(ctx, AT_FDCWD, ctx.args.Ptr(0), ctx.args.Ptr(1));
}

SysResult<uint64_t> Futimesat(SyscallContext& ctx) {
  return TimevalsAt(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Ptr(2));
}

SysResult<uint64_t> Utimensat(SyscallContext& ctx) {
  int dirfd = ctx.args.Int(0);
  int flags = ctx.args.Int(3);
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return Errno{EINVAL};
  timespec ts[2];
  const timespec* p = nullptr;
  if (!ctx.args.Ptr(2).null()) {
    SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(2), ts, sizeof(ts)));
    p = ts;
    // Both omitted: nothing to do, and Linux checks nothing else.
    if (ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec == UTIME_OMIT) return 0;
  }
  vfs::NodeRef node;
  if (ctx.args.Ptr(1).null()) {
    // futimens(): a null path means dirfd itself.
    if (dirfd == AT_FDCWD) return Errno{EFAULT};
    SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, dirfd));
    if (!ref.object) {
      if (futimens(ref.host.get(), p) < 0) return Errno{errno};
      return 0;
    }
    node = ref.node();
  } else {
    SYS_ASSIGN_OR_RETURN(node, NodeAt(ctx, dirfd, ctx.args.Ptr(1), !(flags & AT_SYMLINK_NOFOLLOW),
                                      flags & AT_EMPTY_PATH));
  }
  return SetTimes(ctx, node, p);
}

}  // namespace sentry::sys
