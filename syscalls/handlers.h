// Declarations of every trap handler, grouped by the file that defines them.
#ifndef SENTRY_SYSCALLS_HANDLERS_H_
#define SENTRY_SYSCALLS_HANDLERS_H_

#include "sentry/kernel/syscall_context.h"

namespace sentry::sys {

#define SENTRY_HANDLER(name) SysResult<uint64_t> name(SyscallContext& ctx)

// sys_open.cc
SENTRY_HANDLER(Open);
SENTRY_HANDLER(Openat);
SENTRY_HANDLER(Openat2);
SENTRY_HANDLER(Creat);
// sys_stat.cc
SENTRY_HANDLER(Stat);
SENTRY_HANDLER(Lstat);
SENTRY_HANDLER(Fstat);
SENTRY_HANDLER(Newfstatat);
SENTRY_HANDLER(Statx);
SENTRY_HANDLER(Statfs);
SENTRY_HANDLER(Fstatfs);
// sys_access.cc
SENTRY_HANDLER(Access);
SENTRY_HANDLER(Faccessat);
SENTRY_HANDLER(Faccessat2);
SENTRY_HANDLER(Readlink);
SENTRY_HANDLER(Readlinkat);
// sys_dir.cc
SENTRY_HANDLER(Getdents64);
SENTRY_HANDLER(Mkdir);
SENTRY_HANDLER(Mkdirat);
SENTRY_HANDLER(Rmdir);
// sys_cwd.cc
SENTRY_HANDLER(Getcwd);
SENTRY_HANDLER(Chdir);
SENTRY_HANDLER(Fchdir);
SENTRY_HANDLER(Umask);
// sys_link.cc
SENTRY_HANDLER(Unlink);
SENTRY_HANDLER(Unlinkat);
SENTRY_HANDLER(Rename);
SENTRY_HANDLER(Renameat);
SENTRY_HANDLER(Renameat2);
SENTRY_HANDLER(Link);
SENTRY_HANDLER(Linkat);
SENTRY_HANDLER(Symlink);
SENTRY_HANDLER(Symlinkat);
SENTRY_HANDLER(Mknod);
SENTRY_HANDLER(Mknodat);
// sys_attr.cc
SENTRY_HANDLER(Chmod);
SENTRY_HANDLER(Fchmod);
SENTRY_HANDLER(Fchmodat);
SENTRY_HANDLER(Fchmodat2);
SENTRY_HANDLER(Chown);
SENTRY_HANDLER(Fchown);
SENTRY_HANDLER(Lchown);
SENTRY_HANDLER(Fchownat);
SENTRY_HANDLER(Truncate);
// sys_time.cc
SENTRY_HANDLER(Utime);
SENTRY_HANDLER(Utimes);
SENTRY_HANDLER(Futimesat);
SENTRY_HANDLER(Utimensat);
// sys_xattr.cc
SENTRY_HANDLER(Setxattr);
SENTRY_HANDLER(Lsetxattr);
SENTRY_HANDLER(Fsetxattr);
SENTRY_HANDLER(Getxattr);
SENTRY_HANDLER(Lgetxattr);
SENTRY_HANDLER(Fgetxattr);
SENTRY_HANDLER(Listxattr);
SENTRY_HANDLER(Llistxattr);
SENTRY_HANDLER(Flistxattr);
SENTRY_HANDLER(Removexattr);
SENTRY_HANDLER(Lremovexattr);
SENTRY_HANDLER(Fremovexattr);
// sys_locks.cc
SENTRY_HANDLER(Flock);
SENTRY_HANDLER(FcntlLock);
// sys_pools.cc
SENTRY_HANDLER(IoSetup);
SENTRY_HANDLER(Sync);
SENTRY_HANDLER(Syncfs);
// sys_inotify.cc
SENTRY_HANDLER(InotifyAddWatch);
// sys_misc.cc
SENTRY_HANDLER(Sysinfo);
SENTRY_HANDLER(SchedGetaffinity);
SENTRY_HANDLER(SchedSetaffinity);
// sys_socket.cc
SENTRY_HANDLER(Connect);
SENTRY_HANDLER(Bind);
SENTRY_HANDLER(Sendto);
// sys_peercred.cc
SENTRY_HANDLER(Getsockopt);
// sys_pid.cc
SENTRY_HANDLER(ConfinePids);
SENTRY_HANDLER(Capget);
// sys_sendmsg.cc
SENTRY_HANDLER(Sendmsg);
SENTRY_HANDLER(Sendmmsg);
// sys_identity.cc (the seccomp-only table)
SENTRY_HANDLER(Getuid);
SENTRY_HANDLER(Getgid);
SENTRY_HANDLER(Getresuid);
SENTRY_HANDLER(Getresgid);
SENTRY_HANDLER(Getgroups);
SENTRY_HANDLER(Setuid);
SENTRY_HANDLER(Setgid);
SENTRY_HANDLER(Setreuid);
SENTRY_HANDLER(Setregid);
SENTRY_HANDLER(Setresuid);
SENTRY_HANDLER(Setresgid);
SENTRY_HANDLER(Setfsuid);
SENTRY_HANDLER(Setfsgid);
SENTRY_HANDLER(Setgroups);
SENTRY_HANDLER(Uname);

#undef SENTRY_HANDLER

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_HANDLERS_H_
