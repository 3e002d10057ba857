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

// The first bytes of the file, as much as binfmt_script reads.
std::string Head(int fd) {
  char buf[256];
  ssize_t n = pread(fd, buf, sizeof(buf), 0);
  return n > 0 ? std::string(buf, n) : std::string();
}

}  // namespace

SysResult<std::vector<std::string>> ParseShebang(std::string_view head) {
  if (head.size() < 2 || head[0] != '#' || head[1] != '!') return Errno{ENOEXEC};
  head.remove_prefix(2);
  size_t nl = head.find('\n');
  if (nl != std::string_view::npos) head = head.substr(0, nl);
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!head.empty() && blank(head.front())) head.remove_prefix(1);
  while (!head.empty() && (blank(head.back()) || head.back() == '\r')) head.remove_suffix(1);
  if (head.empty()) return Errno{ENOEXEC};
  size_t end = 0;
  while (end < head.size() && !blank(head[end])) ++end;
  std::vector<std::string> words = {std::string(head.substr(0, end))};
  std::string_view rest = head.substr(end);
  while (!rest.empty() && blank(rest.front())) rest.remove_prefix(1);
  if (!rest.empty()) words.emplace_back(rest);
  return words;
}

SysResult<ExecPlan> PlanExec(SyscallContext& ctx, int dirfd, GuestAddr path, int flags,
                             const std::vector<std::string>& view_roots) {
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return Errno{EINVAL};
  // Read once: the name resolved is the name a script's interpreter is given.
  SYS_ASSIGN_OR_RETURN(std::string name, ReadPath(ctx, path));
  SYS_ASSIGN_OR_RETURN(
      vfs::NodeRef node,
      NodeAtPath(ctx, dirfd, name, !(flags & AT_SYMLINK_NOFOLLOW), flags & AT_EMPTY_PATH));
  SYS_ASSIGN_OR_RETURN(ExecPlan plan, PlanExecNode(ctx, node, view_roots));
  if (plan.in_memory && !name.empty()) {
    plan.given_path = plan.guest_path = name;
    if (name[0] != '/') {
      auto cwd = ctx.vfs().PathOf(ctx.task.fs->cwd);
      if (cwd.ok()) plan.guest_path = (*cwd == "/" ? "" : *cwd) + "/" + name;
    }
  }
  return plan;
}

SysResult<ExecPlan> PlanExecNode(SyscallContext& ctx, const vfs::NodeRef& node,
                                 const std::vector<std::string>& view_roots) {
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
    plan.view_path = ctx.vfs().store().exec_dir() + "/" + node->store_name;
    plan.in_memory = true;
    fd = openat(ctx.vfs().store().dir_fd(), node->store_name.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return Errno{EACCES};
  UniqueFd file(fd);
  struct stat st;
  if (fstat(fd, &st) < 0) return Errno{EACCES};
  plan.dev = st.st_dev;
  plan.ino = st.st_ino;
  std::string head = Head(fd);
  plan.is_script = head.size() >= 2 && head[0] == '#' && head[1] == '!';
  if (plan.is_script && plan.in_memory) {
    // The kernel would pass the interpreter the store's name for the script;
    // the tracer runs the interpreter itself with the sandbox's name instead.
    SYS_ASSIGN_OR_RETURN(plan.script_words, ParseShebang(head));
  }
  return plan;
}

}  // namespace sentry::sys
