// The syscall table of a sandbox that runs on the seccomp wall alone, where the
// kernel gives no namespaces (a container whose seccomp profile refuses them,
// a host that disables user namespaces). The guest's processes then run as a
// host uid of their own, unique to the run, in the host's pid, ipc, uts and
// network namespaces. What the namespaced table leaves native because it acts
// only inside the sandbox's own namespaces changes here:
//
// - ids and uname would show the host: the run's uid, the host's name. Traps
//   answer what a namespaced guest sees.
// - SysV IPC and POSIX message queues live in the host's ipc namespace, where
//   they would reach the host's objects and outlive the run: ENOSYS, as a
//   kernel built without them says.
// - AF_INET and AF_INET6 sockets would be on the host's network: EACCES (the
//   sandbox has no network of its own to give). A unix datagram's address
//   (sendmsg is native) would name a host socket (/dev/log): only stream and
//   seqpacket unix sockets, whose sends ignore or refuse an address.
//
// kill and the other calls that name a process stay native: the kernel lets a
// process with no capability signal only processes of its own uid, which is
// the run's alone.
#include <cerrno>
#include <vector>

#include "syscalls/table.h"
#include "syscalls/table_rows.h"

namespace sentry {
namespace {

using enum ArgFilter;

constexpr SyscallRow kChanges[] = {
    DENY(29, shmget, ENOSYS, "dlx"),
    DENY(30, shmat, ENOSYS, "dpx"),
    DENY(31, shmctl, ENOSYS, "ddp"),
    FILTERED(41, socket, kUnixStreamOnly, EACCES, "ddd"),
    FILTERED(53, socketpair, kUnixStreamOnly, EACCES, "dddp"),
    TRAP(63, uname, Uname, "p"),
    DENY(64, semget, ENOSYS, "ddx"),
    DENY(65, semop, ENOSYS, "dpl"),
    DENY(66, semctl, ENOSYS, "dddx"),
    DENY(67, shmdt, ENOSYS, "p"),
    DENY(68, msgget, ENOSYS, "dx"),
    DENY(69, msgsnd, ENOSYS, "dplx"),
    DENY(70, msgrcv, ENOSYS, "dpldx"),
    DENY(71, msgctl, ENOSYS, "ddp"),
    TRAP(102, getuid, Getuid, ""),
    TRAP(104, getgid, Getgid, ""),
    TRAP(105, setuid, Setuid, "d"),
    TRAP(106, setgid, Setgid, "d"),
    TRAP(107, geteuid, Getuid, ""),
    TRAP(108, getegid, Getgid, ""),
    TRAP(113, setreuid, Setreuid, "dd"),
    TRAP(114, setregid, Setregid, "dd"),
    TRAP(115, getgroups, Getgroups, "dp"),
    TRAP(116, setgroups, Setgroups, "dp"),
    TRAP(117, setresuid, Setresuid, "ddd"),
    TRAP(118, getresuid, Getresuid, "ppp"),
    TRAP(119, setresgid, Setresgid, "ddd"),
    TRAP(120, getresgid, Getresgid, "ppp"),
    TRAP(122, setfsuid, Setfsuid, "d"),
    TRAP(123, setfsgid, Setfsgid, "d"),
    DENY(220, semtimedop, ENOSYS, "dplp"),
    DENY(240, mq_open, ENOSYS, "sxop"),
    DENY(241, mq_unlink, ENOSYS, "s"),
    DENY(242, mq_timedsend, ENOSYS, "dplup"),
    DENY(243, mq_timedreceive, ENOSYS, "dplpp"),
    DENY(244, mq_notify, ENOSYS, "dp"),
    DENY(245, mq_getsetattr, ENOSYS, "dpp"),
};

const std::vector<SyscallRow>& Table() {
  static const auto* table = [] {
    auto* rows = new std::vector<SyscallRow>(SyscallTable().begin(), SyscallTable().end());
    for (const SyscallRow& change : kChanges) {
      for (SyscallRow& row : *rows) {
        if (row.nr == change.nr) row = change;
      }
    }
    return rows;
  }();
  return *table;
}

}  // namespace

std::span<const SyscallRow> SyscallTableWithoutNamespaces() { return Table(); }

const SyscallRow* FindSyscallWithoutNamespaces(int nr) {
  static const auto* index = [] {
    auto* idx = new const SyscallRow*[512]();
    for (const SyscallRow& row : Table()) idx[row.nr] = &row;
    return idx;
  }();
  if (nr < 0 || nr >= 512) return nullptr;
  return index[nr];
}

}  // namespace sentry
