#include "syscalls/sys_exec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "syscalls/common.h"
#include "vfs/store.h"

namespace sentry::sys {
namespace {

bool UnderRoot(const std::string& path, const std::vector<std::string>& roots) {
  for (const std::string& r : roots) {
    if (path.size() > r.size() && path.compare(0, r.size(), r) == 0 && path[r.size()] == '/') {
      return true;
    }
  }
  return false;
}

bool StartsWithShebang(int fd) {
  char magic[2];
  return pread(fd, magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!';
}

}  // namespace

SysResult<ExecPlan> PlanExec(SyscallContext& ctx, int dirfd, GuestAddr path, int flags,
                             const std::vector<std::string>& view_roots) {
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node,
                       NodeAt(ctx, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW),
                              flags & AT_EMPTY_PATH));
  if (node->kind() == vfs::NodeKind::kSymlink) return Errno{ELOOP};
  if (node->kind() != vfs::NodeKind::kFile) return Errno{EACCES};
  SYS_TRY(ctx.vfs().Permission(*node, X_OK, ctx.creds()));
  ExecPlan plan;
  int fd;
  if (node->IsLowerFile()) {
    plan.view_path = node->lower_parent->path + "/" + node->lower_name;
    if (!UnderRoot(plan.view_path, view_roots)) return Errno{EACCES};
    plan.guest_path = plan.view_path;  // the lower layer is shown where the host has it
    fd = openat(node->lower_parent->fd.get(), node->lower_name.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  } else {
    plan.view_path = std::string(vfs::Store::kGuestPath) + "/" + node->store_name;
    auto name = ctx.mem.CopyInString(path, vfs::kPathMax - 1);  // for display only
    if (name.ok() && !name->empty() && (*name)[0] == '/') plan.guest_path = *name;
    fd = openat(ctx.vfs().store().dir_fd(), node->store_name.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return Errno{EACCES};
  UniqueFd file(fd);
  struct stat st;
  if (fstat(fd, &st) < 0) return Errno{EACCES};
  plan.dev = st.st_dev;
  plan.ino = st.st_ino;
  plan.is_script = StartsWithShebang(fd);
  return plan;
}

}  // namespace sentry::sys
