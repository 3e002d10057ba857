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
    case ArgFilter::kCloneFlags:
      return "no namespace flags (CLONE_NEW*)";
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
    case ArgFilter::kSeccompNoListener:
      return "no SECCOMP_FILTER_FLAG_NEW_LISTENER";
    case ArgFilter::kNativeWithoutAddr:
      return "native when dest_addr is NULL";
    case ArgFilter::kUnixStreamOnly:
      return "AF_UNIX stream and seqpacket only";
    case ArgFilter::kFcntlNotOwner:
      return "not F_SETOWN or F_SETOWN_EX";
  }
  return "?";
}

std::string ArgFilterFailure(const SyscallRow& row) {
  switch (row.filter) {
    case ArgFilter::kNone:
      return "";
    case ArgFilter::kNativeWithoutAddr:
      return "trapped (the address is read by the sentry)";
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
