#include "syscalls/common.h"

#include <fcntl.h>

#include <cerrno>

namespace sentry::sys {

SysResult<std::string> ReadPath(SyscallContext& ctx, GuestAddr addr) {
  return ctx.mem.CopyInString(addr, vfs::kPathMax - 1);
}

const vfs::NodeRef& FdRef::node() const { return object->node; }

SysResult<FdRef> GetFd(SyscallContext& ctx, int fd) {
  if (fd < 0) return Errno{EBADF};
  FdRef ref;
  SYS_ASSIGN_OR_RETURN(ref.host, ctx.fds.Get(fd));
  if (fstat(ref.host.get(), &ref.host_st) < 0) return Errno{EBADF};
  ref.object = ctx.kernel.fds().Find(ref.host_st);
  return ref;
}

SysResult<vfs::NodeRef> NodeOfFd(SyscallContext& ctx, int fd, int not_ours) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, fd));
  if (!ref.object) return Errno{not_ours};
  return ref.object->node;
}

SysResult<vfs::NodeRef> StartDir(SyscallContext& ctx, int dirfd, const std::string& path) {
  if ((!path.empty() && path[0] == '/') || dirfd == AT_FDCWD) return ctx.task.fs->cwd;
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeOfFd(ctx, dirfd, ENOTDIR));
  if (!node->IsDir()) return Errno{ENOTDIR};
  return node;
}

SysResult<vfs::Resolved> WalkAt(SyscallContext& ctx, int dirfd, const std::string& path,
                                const vfs::ResolveOpts& opts) {
  if (path.empty()) return Errno{ENOENT};
  // RESOLVE_BENEATH and RESOLVE_IN_ROOT scope even an absolute path to dirfd.
  bool scoped = opts.beneath || opts.in_root;
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef start, StartDir(ctx, dirfd, scoped ? "" : path));
  return ctx.vfs().Walk(start, path, opts, ctx.creds());
}

SysResult<vfs::NodeRef> NodeAt(SyscallContext& ctx, int dirfd, GuestAddr path_addr, bool follow,
                               bool empty_ok) {
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, path_addr));
  return NodeAtPath(ctx, dirfd, path, follow, empty_ok);
}

SysResult<vfs::NodeRef> NodeAtPath(SyscallContext& ctx, int dirfd, const std::string& path,
                                   bool follow, bool empty_ok) {
  if (path.empty()) {
    if (!empty_ok) return Errno{ENOENT};
    if (dirfd == AT_FDCWD) return ctx.task.fs->cwd;
    return NodeOfFd(ctx, dirfd, EBADF);
  }
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef start, StartDir(ctx, dirfd, path));
  vfs::ResolveOpts opts;
  opts.follow_final = follow;
  return ctx.vfs().Lookup(start, path, opts, ctx.creds());
}

SysResult<uint64_t> Donate(SyscallContext& ctx, UniqueFd host_fd, const vfs::NodeRef& node,
                           bool dir_token, bool cloexec, std::string path) {
  struct stat st;
  if (fstat(host_fd.get(), &st) < 0) return Errno{errno};
  ctx.kernel.fds().Register(st, OpenObject{node, dir_token, std::move(path)});
  SYS_ASSIGN_OR_RETURN(int guest_fd, ctx.fds.Install(host_fd.get(), cloexec));
  return static_cast<uint64_t>(guest_fd);
}

mode_t ApplyUmask(SyscallContext& ctx, mode_t mode) { return mode & ~ctx.task.fs->umask & 07777; }

}  // namespace sentry::sys
