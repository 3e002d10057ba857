// stat, lstat, fstat, newfstatat, statx, statfs, fstatfs: answered from the VFS.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/fast_meta_publish.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// The stat of an fd: the VFS's view for donated objects, the host object's own
// for what the guest made natively (pipes, sockets, eventfds, memfds).
SysResult<struct stat> StatFd(SyscallContext& ctx, int fd) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, fd));
  if (!ref.object) {
    struct stat st = ref.host_st;
    st.st_uid = ctx.kernel.config().GuestUid(st.st_uid);
    st.st_gid = ctx.kernel.config().GuestGid(st.st_gid);
    return st;
  }
  const vfs::Node& node = *ref.node();
  if (!node.IsUpperFile()) return ctx.vfs().Stat(node);
  // The fd's own data stat: still right after the last name is gone.
  return ctx.vfs().StatWithData(node, ref.host_st);
}

SysResult<struct stat> StatAt(SyscallContext& ctx, int dirfd, GuestAddr path, int flags) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE)) {
    return Errno{EINVAL};
  }
  SYS_ASSIGN_OR_RETURN(std::string p, ReadPath(ctx, path));
  // An empty path with AT_EMPTY_PATH is the fd itself, which may be a pipe or
  // socket the VFS does not know: StatFd answers for those too.
  if (p.empty() && (flags & AT_EMPTY_PATH) && dirfd != AT_FDCWD) return StatFd(ctx, dirfd);
  SYS_ASSIGN_OR_RETURN(
      vfs::NodeRef node,
      NodeAtPublished(ctx, dirfd, p, !(flags & AT_SYMLINK_NOFOLLOW), flags & AT_EMPTY_PATH));
  return ctx.vfs().Stat(*node);
}

SysResult<uint64_t> CopyOutStat(SyscallContext& ctx, GuestAddr out, const struct stat& st) {
  SYS_TRY(ctx.mem.CopyOutValue(out, st));
  return 0;
}

statx_timestamp ToStatx(const timespec& ts) {
  statx_timestamp t{};
  t.tv_sec = ts.tv_sec;
  t.tv_nsec = static_cast<uint32_t>(ts.tv_nsec);
  return t;
}

}  // namespace

SysResult<uint64_t> Stat(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(struct stat st, StatAt(ctx, AT_FDCWD, ctx.args.Ptr(0), 0));
  return CopyOutStat(ctx, ctx.args.Ptr(1), st);
}

SysResult<uint64_t> Lstat(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(struct stat st, StatAt(ctx, AT_FDCWD, ctx.args.Ptr(0), AT_SYMLINK_NOFOLLOW));
  return CopyOutStat(ctx, ctx.args.Ptr(1), st);
}

SysResult<uint64_t> Fstat(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(struct stat st, StatFd(ctx, ctx.args.Int(0)));
  return CopyOutStat(ctx, ctx.args.Ptr(1), st);
}

SysResult<uint64_t> Newfstatat(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(struct stat st,
                       StatAt(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(3)));
  return CopyOutStat(ctx, ctx.args.Ptr(2), st);
}

SysResult<uint64_t> Statx(SyscallContext& ctx) {
  int flags = ctx.args.Int(2);
  unsigned mask = ctx.args.Uint(3);
  if (mask & STATX__RESERVED) return Errno{EINVAL};
  if ((flags & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(struct stat st, StatAt(ctx, ctx.args.Int(0), ctx.args.Ptr(1), flags));
  struct statx sx {};
  sx.stx_mask = STATX_BASIC_STATS;
  sx.stx_blksize = st.st_blksize;
  sx.stx_nlink = st.st_nlink;
  sx.stx_uid = st.st_uid;
  sx.stx_gid = st.st_gid;
  sx.stx_mode = st.st_mode;
  sx.stx_ino = st.st_ino;
  sx.stx_size = st.st_size;
  sx.stx_blocks = st.st_blocks;
  sx.stx_atime = ToStatx(st.st_atim);
  sx.stx_mtime = ToStatx(st.st_mtim);
  sx.stx_ctime = ToStatx(st.st_ctim);
  sx.stx_rdev_major = major(st.st_rdev);
  sx.stx_rdev_minor = minor(st.st_rdev);
  sx.stx_dev_major = major(st.st_dev);
  sx.stx_dev_minor = minor(st.st_dev);
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(4), sx));
  return 0;
}

namespace {

// Every path reports the sandbox's one writable filesystem: the backing store,
// whose size is the run's --disk.
struct statfs SandboxStatfs(SyscallContext& ctx) {
  struct statfs sf {};
  if (fstatfs(ctx.vfs().store().dir_fd(), &sf) < 0) sf.f_type = TMPFS_MAGIC;
  sf.f_flags = ST_NOSUID | ST_NODEV | ST_RELATIME;
  sf.f_fsid = {};
  return sf;
}

}  // namespace

SysResult<uint64_t> Statfs(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), true, false));
  (void)node;
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(1), SandboxStatfs(ctx)));
  return 0;
}

SysResult<uint64_t> Fstatfs(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, ctx.args.Int(0)));
  struct statfs sf = SandboxStatfs(ctx);
  if (!ref.object && fstatfs(ref.host.get(), &sf) < 0) return Errno{errno};
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(1), sf));
  return 0;
}

}  // namespace sentry::sys
