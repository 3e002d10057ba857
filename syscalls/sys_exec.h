// execve, execveat: answered at a ptrace stop, not by a notification.
//
// The sentry resolves the path in its VFS (cwd, dirfd, symlinks, permissions:
// ENOENT, EACCES, ENOTDIR, ELOOP are its answers), follows a "#!" chain as
// fs/binfmt_script.c would, and names the binary at its end as the kernel will
// find it in the guest's mount view: a lower-layer file at its host path (the
// view binds those directories read-only at the same place), an upper file in
// the store bound at Store::kGuestPath (its exec_dir). The kernel then loads
// that binary, never a script: what the sentry read is what decides.
#ifndef SENTRY_SYSCALLS_SYS_EXEC_H_
#define SENTRY_SYSCALLS_SYS_EXEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "sentry/kernel/syscall_context.h"

namespace sentry::sys {

struct ExecPlan {
  // The binary to run: the file named, or the interpreter that ends its "#!"
  // chain. view_path is where the kernel finds it in the mount view; dev and
  // ino its host identity, which /proc/PID/exe must show at the exec event.
  std::string view_path;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string guest_path;  // its sandbox path (/proc/PID/exe)
  bool in_memory = false;  // an upper-layer file, seen by the kernel only in the store
  // For a script, the words that take argv[0]'s place, as binfmt_script builds
  // them level by level: {interp, [arg,] script} for one "#!", and for a chain
  // {interp2, [arg2,] interp1, [arg1,] script}. Empty for a binary.
  std::vector<std::string> argv_head;
};

// As fs/exec.c's exec_binprm: a script may name a script as its interpreter,
// five deep; the sixth file must be a binary (else ELOOP).
inline constexpr int kMaxScriptDepth = 5;

// Parses a "#!" line as fs/binfmt_script.c does, from the file's first 256
// bytes: the interpreter and at most one argument (the rest of the line, its
// ends trimmed of blanks; a NUL ends either). ENOEXEC without an interpreter,
// or when the line is longer than 256 bytes and its name may be cut.
SysResult<std::vector<std::string>> ParseShebang(std::string_view head);

// Whether head (a file's first bytes) is an ELF image for a machine other
// than x86-64 or of another class (i386, x32): refused with ENOEXEC.
bool IsForeignElf(std::string_view head);

// dirfd/flags as execveat's (AT_FDCWD and 0 for execve). view_roots: the host
// directories the mount view shows ("/usr", ...).
SysResult<ExecPlan> PlanExec(SyscallContext& ctx, int dirfd, GuestAddr path, int flags,
                             const std::vector<std::string>& view_roots);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_SYS_EXEC_H_
