// Helpers every handler family shares: reading paths, resolving *at() dirfds,
// identifying guest fds and donating new ones.
#ifndef SENTRY_SYSCALLS_COMMON_H_
#define SENTRY_SYSCALLS_COMMON_H_

#include <sys/stat.h>

#include <string>

#include "sentry/kernel/syscall_context.h"
#include "vfs/vfs.h"

namespace sentry::sys {

// A guest path: at most PATH_MAX - 1 bytes, else ENAMETOOLONG; EFAULT on a fault.
SysResult<std::string> ReadPath(SyscallContext& ctx, GuestAddr addr);

// A guest fd as the sentry sees it: a host copy of it, its host stat, and the
// VFS object it was donated for (null for pipes, sockets and other anonymous
// objects the guest made natively, and for the stdio its caller gave it).
// An fd that is neither, an object on a host or store file system that the
// sentry does not recognise, is EBADF: never answered from the host object.
// A token the sentry holds (fd_holds.h) comes without a copy: `held` is the
// sentry's own reference to the same description, valid during the call.
struct FdRef {
  UniqueFd host;
  int held = -1;
  struct stat host_st {};
  const OpenObject* object = nullptr;
  const vfs::NodeRef& node() const;
  // The description, to read or move its position (lseek).
  int fd() const { return held >= 0 ? held : host.get(); }
};
SysResult<FdRef> GetFd(SyscallContext& ctx, int fd);

// The directory a relative path starts from: the cwd for AT_FDCWD, else the
// directory behind dirfd (EBADF, ENOTDIR).
SysResult<vfs::NodeRef> StartDir(SyscallContext& ctx, int dirfd, const std::string& path);

// Walks path relative to dirfd.
SysResult<vfs::Resolved> WalkAt(SyscallContext& ctx, int dirfd, const std::string& path,
                                const vfs::ResolveOpts& opts);

// The node path names, following a final symlink when follow is set. With
// AT_EMPTY_PATH semantics (empty_ok) an empty path names dirfd itself.
SysResult<vfs::NodeRef> NodeAt(SyscallContext& ctx, int dirfd, GuestAddr path, bool follow,
                               bool empty_ok);
// The same for a path already read from the guest.
SysResult<vfs::NodeRef> NodeAtPath(SyscallContext& ctx, int dirfd, const std::string& path,
                                   bool follow, bool empty_ok);

// The node behind an fd the sentry donated; EBADF if fd is not open, and
// not_ours if it is open but not a VFS object (a pipe, a socket...).
SysResult<vfs::NodeRef> NodeOfFd(SyscallContext& ctx, int fd, int not_ours);

// Remembers the host object of identity st as node's, as Donate does before
// it installs: for a call whose fd is installed later (a FIFO's blocking open).
SysStatus RegisterOpen(SyscallContext& ctx, const struct stat& st, const vfs::NodeRef& node,
                       bool dir_token, std::string path, bool holdable = false,
                       bool shared = false);

// Installs host_fd in the guest, remembering it as node's (opened by the
// sandbox path `path`, for /proc/PID/fd); returns the guest fd. ENFILE when
// the sentry's table of donated objects is full of ones the guest holds.
// A token (hold) is kept by the sentry afterwards (fd_holds.h), and so is
// a read-only description of a lower file (hold and shared: other
// descriptions of it exist); any other host_fd is closed. known: host_fd's
// fstat, when its maker took it (a directory token: vfs::DirToken); else
// Donate takes it. token_lock: a directory token's lock, set where it was
// made (vfs::DirToken::lock_id).
SysResult<uint64_t> Donate(SyscallContext& ctx, UniqueFd host_fd, const vfs::NodeRef& node,
                           bool dir_token, bool cloexec, std::string path = "", bool hold = false,
                           const struct stat* known = nullptr, bool shared = false,
                           uint64_t token_lock = 0);

// The mode a new file gets: mode masked by the caller's umask.
mode_t ApplyUmask(SyscallContext& ctx, mode_t mode);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_COMMON_H_
