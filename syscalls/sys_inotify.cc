// inotify_add_watch: the path is resolved in the VFS, and the watch is put on
// the guest's own instance by the sentry, on the host object that stands for
// the node (Vfs::WatchObject), so the watch descriptor and every event come
// from the kernel, through the instance the guest reads.
#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// Every bit inotify_add_watch accepts (include/linux/inotify.h ALL_INOTIFY_BITS).
constexpr uint32_t kAllInotifyBits = IN_ALL_EVENTS | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED |
                                     IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_ADD |
                                     IN_MASK_CREATE | IN_ISDIR | IN_ONESHOT;

bool IsInotifyInstance(int fd) {
  char link[64];
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(proc.c_str(), link, sizeof(link) - 1);
  if (n < 0) return false;
  link[n] = '\0';
  return std::strcmp(link, "anon_inode:inotify") == 0;
}

}  // namespace

// The checks in fs/notify/inotify/inotify_user.c's order: the mask, the fd,
// then the path (LOOKUP_FOLLOW unless IN_DONT_FOLLOW, LOOKUP_DIRECTORY for
// IN_ONLYDIR) and read permission on what it names. IN_MASK_ADD,
// IN_MASK_CREATE (EEXIST) and the watch count (ENOSPC) are the kernel's: the
// same node always gives the same host object, so the same watch.
SysResult<uint64_t> InotifyAddWatch(SyscallContext& ctx) {
  uint32_t mask = ctx.args.Uint(2);
  if ((mask & ~kAllInotifyBits) || !(mask & kAllInotifyBits)) return Errno{EINVAL};
  if (ctx.args.Int(0) < 0) return Errno{EBADF};
  SYS_ASSIGN_OR_RETURN(UniqueFd instance, ctx.fds.Get(ctx.args.Int(0)));
  if ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)) return Errno{EINVAL};
  if (!IsInotifyInstance(instance.get())) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, ctx.args.Ptr(1)));
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node,
                       NodeAtPath(ctx, AT_FDCWD, path, !(mask & IN_DONT_FOLLOW), false));
  if ((mask & IN_ONLYDIR) && !node->IsDir()) return Errno{ENOTDIR};
  SYS_TRY(ctx.vfs().Permission(*node, R_OK, ctx.creds()));
  SYS_ASSIGN_OR_RETURN(UniqueFd object, ctx.vfs().WatchObject(node));
  // Through the object's /proc/self/fd link: the kernel resolves no name the
  // guest gave. The kernel charges the watch to the instance's owner (its
  // ucounts, taken at inotify_init), the guest's uid in the sandbox's user
  // namespace, whatever thread adds it.
  std::string where = "/proc/self/fd/" + std::to_string(object.get());
  int wd = inotify_add_watch(instance.get(), where.c_str(), mask & ~(IN_DONT_FOLLOW | IN_ONLYDIR));
  if (wd < 0) {
    if (errno == ENOSPC) ctx.hint = "the sandbox has as many inotify watches as it may";
    return Errno{errno};
  }
  return static_cast<uint64_t>(wd);
}

}  // namespace sentry::sys
