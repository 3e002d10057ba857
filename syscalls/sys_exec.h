// execve, execveat: answered at a ptrace stop, not by a notification.
//
// The sentry resolves the path in its VFS (cwd, dirfd, symlinks, permissions:
// ENOENT, EACCES, ENOTDIR, ELOOP are its answers) and names the same file as the
// kernel will find it in the guest's mount view: a lower-layer file at its host
// path (the view binds those directories read-only at the same place), an upper
// file in the store bound at Store::kGuestPath (its exec_dir). The kernel then loads it.
#ifndef SENTRY_SYSCALLS_SYS_EXEC_H_
#define SENTRY_SYSCALLS_SYS_EXEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "sentry/kernel/syscall_context.h"
#include "vfs/node.h"

namespace sentry::sys {

struct ExecPlan {
  std::string view_path;  // where the kernel finds the file in the mount view
  dev_t dev = 0;          // the file's host identity, to check at the exec event
  ino_t ino = 0;
  bool is_script = false;  // starts with "#!": the kernel runs an interpreter
  std::string guest_path;  // the file's sandbox path (/proc/PID/exe)
  std::string given_path;  // the path as the caller named it (a script's argv[1], as Linux)
  bool in_memory = false;  // an upper-layer file, seen by the kernel only in the store
  // For an in-memory script, what binfmt_script would run: the interpreter's
  // plan and the words the new argv starts with (interpreter, optional arg).
  std::vector<std::string> script_words;
};

// Parses a "#!" line as fs/binfmt_script.c does: the interpreter and at most one
// argument (the rest of the line, trimmed). ENOEXEC if there is no interpreter.
SysResult<std::vector<std::string>> ParseShebang(std::string_view head);

// dirfd/flags as execveat's (AT_FDCWD and 0 for execve). view_roots: the host
// directories the mount view shows ("/usr", ...).
SysResult<ExecPlan> PlanExec(SyscallContext& ctx, int dirfd, GuestAddr path, int flags,
                             const std::vector<std::string>& view_roots);

// The plan for a node already resolved (an interpreter named by a "#!" line).
SysResult<ExecPlan> PlanExecNode(SyscallContext& ctx, const vfs::NodeRef& node,
                                 const std::vector<std::string>& view_roots);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_SYS_EXEC_H_
