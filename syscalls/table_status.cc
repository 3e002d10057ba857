// How completely each trapped or traced row is answered: full (as Linux
// does, within the sandbox's world) or partial, with what is missing, written
// by reading the handlers. `sentry syscalls` and docs/syscalls.md show it;
// syscall_table_test checks every trap and trace row of both tables has one.
// A refusal by design (a host path, a network outside, a device node) is not
// what makes a row partial: that is the table's policy, said in the row.
#include "syscalls/handlers.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

using namespace ::sentry::sys;

constexpr bool kFull = true, kPartial = false;

// nr -1: every row with that handler.
constexpr RowStatus kStatus[] = {
    {2, Open, kPartial,
     "O_PATH gives a store file opened with access mode 3 (ADDFD cannot install O_PATH): fstat, "
     "*at and reads/writes (EBADF) behave, but /proc/self/fdinfo shows other flags"},
    {257, Openat, kPartial, "as open: O_PATH stands in for a store file"},
    {437, Openat2, kPartial, "as open: O_PATH stands in for a store file; every RESOLVE_ flag"},
    {85, Creat, kFull, ""},
    {254, InotifyAddWatch, kPartial,
     "a directory watch sees the guest's own changes (and, on a -v :rw mount, the host's); "
     "an open file's data events reach it only for opens made after the watch, and nothing "
     "for a lower file's copy-up, chmod/chown/utimes (no IN_ATTRIB) or O_TRUNC of an upper "
     "file; a system (lower) file's watch reports nothing (its host file's opens by "
     "others would be a channel between tenants)"},
    {4, Stat, kFull, ""},
    {6, Lstat, kFull, ""},
    {5, Fstat, kFull, ""},
    {262, Newfstatat, kFull, ""},
    {332, Statx, kPartial, "STATX_BASIC_STATS only: no btime, mount id or attributes"},
    {137, Statfs, kPartial,
     "every path reports the backing store (tmpfs, --disk): no per-mount figures"},
    {138, Fstatfs, kPartial, "as statfs: the backing store's figures"},
    {21, Access, kFull, ""},
    {269, Faccessat, kFull, ""},
    {439, Faccessat2, kFull, "AT_EACCESS, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH"},
    {89, Readlink, kFull, ""},
    {267, Readlinkat, kFull, ""},
    {217, Getdents64, kFull, "names in order; removals during a listing skip nothing"},
    {83, Mkdir, kFull, ""},
    {258, Mkdirat, kFull, ""},
    {84, Rmdir, kFull, ""},
    {79, Getcwd, kFull, ""},
    {80, Chdir, kFull, ""},
    {81, Fchdir, kFull, ""},
    {95, Umask, kFull, ""},
    {87, Unlink, kFull, ""},
    {263, Unlinkat, kFull, ""},
    {82, Rename, kFull, ""},
    {264, Renameat, kFull, ""},
    {316, Renameat2, kPartial, "RENAME_NOREPLACE and RENAME_EXCHANGE; RENAME_WHITEOUT is EINVAL"},
    {86, Link, kFull, ""},
    {265, Linkat, kFull, ""},
    {88, Symlink, kFull, ""},
    {266, Symlinkat, kFull, ""},
    {133, Mknod, kPartial, "FIFOs and regular files only: device nodes are EPERM"},
    {259, Mknodat, kPartial, "FIFOs and regular files only: device nodes are EPERM"},
    {90, Chmod, kFull, ""},
    {91, Fchmod, kFull, ""},
    {268, Fchmodat, kFull, ""},
    {452, Fchmodat2, kFull, "AT_SYMLINK_NOFOLLOW on a symlink is EOPNOTSUPP, as on tmpfs"},
    {92, Chown, kFull, "ownership kept by the sentry: the ids the sandbox knows"},
    {93, Fchown, kFull, "ownership kept by the sentry"},
    {94, Lchown, kFull, "ownership kept by the sentry"},
    {260, Fchownat, kFull, "ownership kept by the sentry"},
    {76, Truncate, kFull, ""},
    {132, Utime, kFull, ""},
    {235, Utimes, kFull, ""},
    {261, Futimesat, kFull, ""},
    {280, Utimensat, kFull, ""},
    {188, Setxattr, kPartial, "user.* only, in memory; security.* and system.* are EOPNOTSUPP"},
    {189, Lsetxattr, kPartial, "user.* only, in memory"},
    {190, Fsetxattr, kPartial, "user.* only, in memory"},
    {191, Getxattr, kPartial, "user.* only: security.* (SELinux labels) and ACLs are EOPNOTSUPP"},
    {192, Lgetxattr, kPartial, "user.* only"},
    {193, Fgetxattr, kPartial, "user.* only"},
    {194, Listxattr, kPartial, "lists user.* only"},
    {195, Llistxattr, kPartial, "lists user.* only"},
    {196, Flistxattr, kPartial, "lists user.* only"},
    {197, Removexattr, kPartial, "user.* only"},
    {198, Lremovexattr, kPartial, "user.* only"},
    {199, Fremovexattr, kPartial, "user.* only"},
    {99, Sysinfo, kPartial,
     "the sandbox's figures: totalram is --memory, freeram half of it, uptime since the sentry "
     "started; no load averages, swap or shared memory"},
    {203, SchedSetaffinity, kFull, "the sandbox's tasks only"},
    {204, SchedGetaffinity, kFull, "the start-up pin stays invisible"},
    {42, Connect, kFull,
     "unix paths in the VFS, loopback, and --allow-net hosts (through the sentry); nothing else "
     "leaves"},
    {49, Bind, kFull, "unix paths become VFS socket nodes; inet on the sandbox's loopback"},
    {44, Sendto, kFull, "with an address: read once, sent from the sentry's copy of the socket"},
    {55, Getsockopt, kPartial,
     "SO_PEERCRED and SO_PEERPIDFD only (the rest is native): a unix peer the sentry connected "
     "names the guest task that asked; SO_PEERPIDFD of a peer that has exited is EINVAL (as "
     "Linux before 6.16)"},
    {72, FcntlLock, kFull,
     "F_OFD_SETLK, F_OFD_SETLKW and F_SETLEASE (the rest is native): the sentry lets go of "
     "its own reference to the file (sys_locks.cc), then the kernel runs the call"},
    {73, Flock, kFull,
     "the sentry lets go of its own reference to the file (sys_locks.cc), then the kernel runs "
     "the call"},
    {46, Sendmsg, kPartial,
     "a receiver with SO_PASSCRED that is sent no explicit credentials sees the sentry's ids"},
    {307, Sendmmsg, kPartial, "as sendmsg; at most a bounded batch a call (the rest is left)"},
    // The table of a sandbox without namespaces.
    {206, IoSetup, kFull,
     "within the sandbox's AIO share (a 64th of fs.aio-max-nr, else EAGAIN); then the kernel "
     "runs it"},
    {162, Sync, kFull, "flushes nothing: the guest's files are in memory"},
    {306, Syncfs, kFull, "EBADF for a bad fd; flushes nothing: the guest's files are in memory"},
    {-1, ConfinePids, kFull, "the pid must be the sandbox's (else ESRCH); then the kernel runs it"},
    {125, Capget, kFull, "the header read once; the kernel asked for the sandbox's task"},
    {102, Getuid, kFull, "the sandbox's id"},
    {104, Getgid, kFull, "the sandbox's id"},
    {107, Getuid, kFull, "the sandbox's id"},
    {108, Getgid, kFull, "the sandbox's id"},
    {115, Getgroups, kFull, "no supplementary groups"},
    {116, Setgroups, kFull, "EPERM (no CAP_SETGID), as inside a namespace"},
    {105, Setuid, kFull, "only to the id it has"},
    {106, Setgid, kFull, "only to the id it has"},
    {113, Setreuid, kFull, "only to the id it has"},
    {114, Setregid, kFull, "only to the id it has"},
    {117, Setresuid, kFull, "only to the id it has"},
    {118, Getresuid, kFull, "the sandbox's ids"},
    {119, Setresgid, kFull, "only to the id it has"},
    {120, Getresgid, kFull, "the sandbox's ids"},
    {122, Setfsuid, kFull, "returns the former id"},
    {123, Setfsgid, kFull, "returns the former id"},
    {63, Uname, kFull, "the host's release and machine, the sandbox's name"},
};

// Traced rows (no handler): the exec, planned in the VFS, done by the kernel.
constexpr RowStatus kTraceStatus[] = {
    {59, nullptr, kFull,
     "resolved in the VFS (#! chains, permissions), run by the kernel from the mount view"},
    {322, nullptr, kFull, "as execve; AT_EMPTY_PATH and a dirfd"},
};

}  // namespace

const RowStatus* FindRowStatus(const SyscallRow& row) {
  if (row.action == Action::kTrace) {
    for (const RowStatus& s : kTraceStatus) {
      if (s.nr == row.nr) return &s;
    }
    return nullptr;
  }
  if (row.action != Action::kTrap) return nullptr;
  for (const RowStatus& s : kStatus) {
    if (s.handler == row.handler && (s.nr == row.nr || s.nr == -1)) return &s;
  }
  return nullptr;
}

}  // namespace sentry
