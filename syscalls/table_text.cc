// The argument filters of the table in words, for `sentry syscalls` and
// docs/syscalls.md; loader/filter.cc holds what they check.
#include <cstring>
#include <string>

#include "syscalls/table.h"

namespace sentry {

const char* ArgFilterText(ArgFilter filter) {
  switch (filter) {
    case ArgFilter::kNone:
      return "";
    case ArgFilter::kCloneForkGate:
      return "no namespace flags (CLONE_NEW*); a session fork's flags (the six namespaces and "
             "SIGCHLD) only when the supervisor granted that task a fork";
    case ArgFilter::kIoctlSafe:
      return "terminal queries and settings, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, FIOASYNC, pty "
             "requests (not TIOCSTI, TIOCSCTTY, TIOCLINUX)";
    case ArgFilter::kIoctlSafeNetIf:
      return "as without a network namespace, and the read-only interface queries (SIOCGIFINDEX, "
             "SIOCGIFNAME, SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFMTU...) of its own "
             "network namespace";
    case ArgFilter::kSocketFamily:
      return "AF_UNIX, AF_INET and AF_INET6 only";
    case ArgFilter::kPrctlSafe:
      return "options that read or narrow the caller (PR_SET_NAME, PR_SET_PDEATHSIG, "
             "PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP...)";
    case ArgFilter::kPersonality:
      return "a query (0xffffffff) or PER_LINUX";
    case ArgFilter::kPrioNotUser:
      return "not by user (PRIO_USER, IOPRIO_WHO_USER)";
    case ArgFilter::kSeccompListenerGate:
      return "no SECCOMP_FILTER_FLAG_NEW_LISTENER (refused by the supervisor at a ptrace stop)";
    case ArgFilter::kNativeWithoutAddr:
      return "native when dest_addr is NULL";
    case ArgFilter::kNativeButPeerCred:
      return "native but for SO_PEERCRED and SO_PEERPIDFD";
    case ArgFilter::kUnixStreamOnly:
      return "AF_UNIX stream and seqpacket only";
    case ArgFilter::kFcntlNotOwner:
      return "not F_SETOWN or F_SETOWN_EX";
    case ArgFilter::kFcntlTrapLocks:
      return "native but for F_OFD_SETLK, F_OFD_SETLKW and F_SETLEASE";
    case ArgFilter::kFcntlNotOwnerTrapLocks:
      return "not F_SETOWN or F_SETOWN_EX; native but for F_OFD_SETLK, F_OFD_SETLKW and "
             "F_SETLEASE";
  }
  return "?";
}

const char* PoolText(Pool pool) {
  switch (pool) {
    case Pool::kNone:
      return "";
    case Pool::kFdOnly:
      return "an fd: RLIMIT_NOFILE per process, the pids cap; memory cgroup";
    case Pool::kInotify:
      return "inotify instances: 32 per uid in the sandbox's user namespace, charged to its "
             "host id";
    case Pool::kInotifyWatches:
      return "inotify watches: 8192 per uid in the sandbox's user namespace (charged to the "
             "instance's owner, not to the sentry that adds them), charged to its host id";
    case Pool::kMqueue:
      return "queue bytes: RLIMIT_MSGQUEUE 256 KiB, charged to the sandbox's host id";
    case Pool::kSigQueue:
      return "queued signals: RLIMIT_SIGPENDING 2048, charged to the sandbox's host id";
    case Pool::kAio:
      return "AIO events: the sandbox's share of fs.aio-max-nr (a 64th), kept by the sentry";
    case Pool::kPipeBuffers:
      return "pipe pages: pipe-user-pages of the sandbox's own host uid";
    case Pool::kEpollWatches:
      return "epoll watches: max_user_watches of the sandbox's own host uid";
    case Pool::kSysvIpc:
      return "SysV objects: the limits of the sandbox's own ipc namespace";
    case Pool::kFileLocks:
      return "locks on files the guest holds: memory cgroup";
    case Pool::kProcesses:
      return "tasks: RLIMIT_NPROC (--pids) in the sandbox's user namespace, the pids cgroup";
  }
  return "?";
}

std::string ArgFilterFailure(const SyscallRow& row) {
  switch (row.filter) {
    case ArgFilter::kNone:
      return "";
    case ArgFilter::kNativeWithoutAddr:
      return "trapped (the address is read by the sentry)";
    case ArgFilter::kNativeButPeerCred:
      return "trapped (the peer's credentials are the sandbox's record)";
    case ArgFilter::kFcntlTrapLocks:
      return "trapped (the sentry lets go of its reference to the description), then run by "
             "the kernel";
    case ArgFilter::kFcntlNotOwnerTrapLocks:
      return "EPERM (F_SETOWN, F_SETOWN_EX); trapped (F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE: "
             "the sentry lets go of its reference to the description), then run by the kernel";
    case ArgFilter::kUnixStreamOnly:
      return std::string(strerrorname_np(row.err)) +
             " (AF_INET, AF_INET6, unix datagrams); "
             "EAFNOSUPPORT (other families)";
    default: {
      std::string out = strerrorname_np(row.err);
      if (IsReportedRefusal(row.err)) out += ", listed in the run's denials";
      return out;
    }
  }
}

}  // namespace sentry
