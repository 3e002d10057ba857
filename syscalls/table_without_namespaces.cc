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

// A process, thread or group the call names must be the sandbox's (sys_pid.cc).
// Also the rows of a sandbox after its first session fork (below), whose pid
// namespace then holds the forked children too.
constexpr SyscallRow kPidChanges[] = {
    TRAP_ALLOC(62, kill, ConfinePids, "Pd", kSigQueue),
    TRAP(121, getpgid, ConfinePids, "P"),
    TRAP(124, getsid, ConfinePids, "P"),
    TRAP(125, capget, Capget, "Cp"),
    TRAP_ALLOC(129, rt_sigqueueinfo, ConfinePids, "Pdp", kSigQueue),
    TRAP(140, getpriority, ConfinePids, "dP"),
    TRAP(141, setpriority, ConfinePids, "dPd"),
    TRAP(142, sched_setparam, ConfinePids, "Pp"),
    TRAP(143, sched_getparam, ConfinePids, "Pp"),
    TRAP(144, sched_setscheduler, ConfinePids, "Pdp"),
    TRAP(145, sched_getscheduler, ConfinePids, "P"),
    TRAP(148, sched_rr_get_interval, ConfinePids, "Pp"),
    TRAP_ALLOC(200, tkill, ConfinePids, "Pd", kSigQueue),
    TRAP_ALLOC(234, tgkill, ConfinePids, "PPd", kSigQueue),
    TRAP(251, ioprio_set, ConfinePids, "dPd"),
    TRAP(252, ioprio_get, ConfinePids, "dP"),
    TRAP(274, get_robust_list, ConfinePids, "Ppp"),
    TRAP_ALLOC(297, rt_tgsigqueueinfo, ConfinePids, "PPdp", kSigQueue),
    TRAP(302, prlimit64, ConfinePids, "Pdpp"),
    TRAP(314, sched_setattr, ConfinePids, "Ppx"),
    TRAP(315, sched_getattr, ConfinePids, "Ppux"),
    TRAP_ALLOC(434, pidfd_open, ConfinePids, "Px", kFdOnly),
    // F_SETOWN and F_SETOWN_EX would name a process outside the sandbox for
    // SIGIO: EPERM. Locks on a description trap, as with namespaces.
    TRAP_UNLESS_ALLOC_ERR(
        72, fcntl, FcntlLock, kFcntlNotOwnerTrapLocks, EPERM, "fdx", kNone, kFileLocks,
        "fd flags, locks and leases on fds the guest holds (not F_SETOWN: no pid namespace)"),
};

constexpr SyscallRow kChanges[] = {
    // The host's interfaces would show: terminal queries and fd flags only.
    FILTERED(16, ioctl, kIoctlSafe, ENOTTY, "fxp", kNone,
             "filtered to terminal queries and fd flags on fds the guest holds"),
    NATIVE(54, setsockopt, "fddpl", kNone,
           "options of a unix socket the guest holds (no other family is made here)"),
    DENY(29, shmget, ENOSYS, "Klx"),
    DENY(30, shmat, ENOSYS, "Kpx"),
    DENY(31, shmctl, ENOSYS, "Kdp"),
    FILTERED(
        41, socket, kUnixStreamOnly, EACCES, "ddd", kNone,
        "filtered to unix stream and seqpacket sockets, whose sends refuse or ignore an address"),
    FILTERED(53, socketpair, kUnixStreamOnly, EACCES, "dddp", kNone,
             "filtered to unix stream and seqpacket pairs: anonymous, no name"),
    TRAP(63, uname, Uname, "p"),
    DENY(64, semget, ENOSYS, "Kdx"),
    DENY(65, semop, ENOSYS, "Kpl"),
    DENY(66, semctl, ENOSYS, "Kddx"),
    DENY(67, shmdt, ENOSYS, "p"),
    DENY(68, msgget, ENOSYS, "Kx"),
    DENY(69, msgsnd, ENOSYS, "Kplx"),
    DENY(70, msgrcv, ENOSYS, "Kpldx"),
    DENY(71, msgctl, ENOSYS, "Kdp"),
    TRAP(102, getuid, Getuid, ""),
    TRAP(104, getgid, Getgid, ""),
    TRAP(105, setuid, Setuid, "U"),
    TRAP(106, setgid, Setgid, "U"),
    TRAP(107, geteuid, Getuid, ""),
    TRAP(108, getegid, Getgid, ""),
    TRAP(113, setreuid, Setreuid, "UU"),
    TRAP(114, setregid, Setregid, "UU"),
    TRAP(115, getgroups, Getgroups, "dp"),
    TRAP(116, setgroups, Setgroups, "dp"),
    TRAP(117, setresuid, Setresuid, "UUU"),
    TRAP(118, getresuid, Getresuid, "ppp"),
    TRAP(119, setresgid, Setresgid, "UUU"),
    TRAP(120, getresgid, Getresgid, "ppp"),
    TRAP(122, setfsuid, Setfsuid, "U"),
    TRAP(123, setfsgid, Setfsgid, "U"),
    DENY(220, semtimedop, ENOSYS, "Kplp"),
    DENY(240, mq_open, ENOSYS, "qxop"),
    DENY(241, mq_unlink, ENOSYS, "q"),
    DENY(242, mq_timedsend, ENOSYS, "fplup"),
    DENY(243, mq_timedreceive, ENOSYS, "fplpp"),
    DENY(244, mq_notify, ENOSYS, "fp"),
    DENY(245, mq_getsetattr, ENOSYS, "fpp"),
};

// With the guest's Landlock signal scope, the owner F_SETOWN names gets no
// SIGIO or SIGURG unless it is in the sandbox's domain (the kernel checks
// the scope at each signal, security/landlock/task.c), whatever pid it is.
constexpr SyscallRow kSignalScopeChanges[] = {
    // Locks on a description still trap (syscalls/sys_locks.cc).
    TRAP_UNLESS_ALLOC(72, fcntl, FcntlLock, kFcntlTrapLocks, "fdx", kLandlockSignal, kFileLocks,
                      "fd flags, locks and leases on fds the guest holds; F_SETOWN's SIGIO "
                      "reaches no process outside the sandbox (Landlock signal scope)"),
};

std::vector<SyscallRow>* Changed(std::span<const SyscallRow> base,
                                 std::span<const SyscallRow> changes) {
  auto* rows = new std::vector<SyscallRow>(base.begin(), base.end());
  for (const SyscallRow& change : changes) {
    for (SyscallRow& row : *rows) {
      if (row.nr == change.nr) row = change;
    }
  }
  return rows;
}

const std::vector<SyscallRow>& Table() {
  static const auto* table = [] {
    std::vector<SyscallRow>* pids = Changed(SyscallTable(), kPidChanges);
    std::vector<SyscallRow>* out = Changed(*pids, kChanges);
    delete pids;
    return out;
  }();
  return *table;
}

const std::vector<SyscallRow>& AfterForkTable() {
  static const auto* table = Changed(SyscallTable(), kPidChanges);
  return *table;
}

const std::vector<SyscallRow>& ScopedTable() {
  static const auto* table = Changed(Table(), kSignalScopeChanges);
  return *table;
}

const SyscallRow* const* Index(const std::vector<SyscallRow>& table) {
  auto* idx = new const SyscallRow*[512]();
  for (const SyscallRow& row : table) idx[row.nr] = &row;
  return idx;
}

}  // namespace

std::span<const SyscallRow> SyscallTableWithSignalScope() { return ScopedTable(); }

const SyscallRow* FindSyscallWithSignalScope(int nr) {
  static const SyscallRow* const* index = Index(ScopedTable());
  if (nr < 0 || nr >= 512) return nullptr;
  return index[nr];
}

bool SendsSignalsOnly(int nr) {
  switch (nr) {
    case 62:   // kill
    case 72:   // fcntl (F_SETOWN: SIGIO, SIGURG)
    case 129:  // rt_sigqueueinfo
    case 200:  // tkill
    case 234:  // tgkill
    case 297:  // rt_tgsigqueueinfo
    case 424:  // pidfd_send_signal
      return true;
  }
  return false;
}

std::span<const SyscallRow> SyscallTableAfterFork() { return AfterForkTable(); }

const SyscallRow* FindSyscallAfterFork(int nr) {
  static const SyscallRow* const* index = Index(AfterForkTable());
  if (nr < 0 || nr >= 512) return nullptr;
  return index[nr];
}

std::span<const SyscallRow> SyscallTableWithoutNamespaces() { return Table(); }

const SyscallRow* FindSyscallWithoutNamespaces(int nr) {
  static const SyscallRow* const* index = Index(Table());
  if (nr < 0 || nr >= 512) return nullptr;
  return index[nr];
}

}  // namespace sentry
