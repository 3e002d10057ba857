#include "sentry/trace/syscall_format.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "sentry/trace/format_internal.h"
#include "syscalls/table.h"

namespace sentry::trace {
namespace {

using internal::ArgList;

// A call the printer has no format of its own for: its table row's letters
// (see SyscallRow::args).
void ByLetters(ArgList& a, const char* kinds) {
  GuestMemory* m = a.mem();
  for (int i = 0; kinds[i] && i < 6; ++i) {
    switch (kinds[i]) {
      case 'f':
        a.Dirfd(i);
        break;
      case 'd':
      case 'P':
      case 'K':
      case 'U':
        a.Int(i);
        break;
      case 'u':
      case 'l':
        a.Unsigned(i);
        break;
      case 'o':
        a.Mode(i);
        break;
      case 'F':
        a.Add(OpenFlags(a.u(i)));
        break;
      case 's':
        a.Path(i);
        break;
      case 'q':
      case 'n':
        a.Str(i);
        break;
      case 'A':
        a.Add(SockAddr(m, a.u(i), i + 1 < 6 ? a.u(i + 1) : 0));
        break;
      case 'M':
        a.Add(Msghdr(m, a.u(i), -1));
        break;
      case 'x':
        a.Add(absl::StrFormat("%#x", a.u(i)));
        break;
      default:
        a.Ptr(i);
    }
  }
}

}  // namespace

std::string SyscallName(int nr) {
  const SyscallRow* row = FindSyscall(nr);
  return row ? row->name : absl::StrFormat("syscall_%#x", nr);
}

std::string FormatArgs(const TracedCall& call, GuestMemory* mem) {
  ArgList a(call, mem);
  if (internal::FormatFileCall(a, call.nr) || internal::FormatProcessCall(a, call.nr) ||
      internal::FormatNetMemCall(a, call.nr)) {
    return a.str();
  }
  const SyscallRow* row = FindSyscall(call.nr);
  ByLetters(a, row ? row->args : "xxxxxx");
  return a.str();
}

std::string FormatCall(const TracedCall& call, GuestMemory* mem) {
  return absl::StrCat(SyscallName(call.nr), "(", FormatArgs(call, mem), ")");
}

std::string FormatReturn(const TracedCall& call) {
  int64_t r = call.ret;
  int nr = call.nr;
  if (!call.done) return "?";
  if (nr == SYS_exit || nr == SYS_exit_group) return "?";
  if (r < 0 && r >= -4095) {
    int err = static_cast<int>(-r);
    switch (err) {
      // The kernel's restart codes, which a tracer sees and the guest never does.
      case 512:
        return "? ERESTARTSYS (To be restarted if SA_RESTART is set)";
      case 513:
        return "? ERESTARTNOINTR (To be restarted)";
      case 514:
        return "? ERESTARTNOHAND (To be restarted if no handler)";
      case 516:
        return "? ERESTART_RESTARTBLOCK (Interrupted by signal)";
      default:
        break;
    }
    return absl::StrCat("-1 ", ErrnoName(err), " (", std::strerror(err), ")");
  }
  switch (nr) {
    case SYS_mmap:
    case SYS_mremap:
    case SYS_brk:
    case SYS_shmat:
      return absl::StrFormat("%#x", static_cast<uint64_t>(r));
    case SYS_umask:
      return PermMode(static_cast<uint64_t>(r));
    case SYS_fcntl:
      if (static_cast<int>(call.args[1]) == F_GETFD) {
        return r & FD_CLOEXEC ? absl::StrFormat("%#x (flags FD_CLOEXEC)", r) : absl::StrCat(r);
      }
      if (static_cast<int>(call.args[1]) == F_GETFL) {
        return absl::StrFormat("%#x (flags %s)", r, OpenFlags(static_cast<uint64_t>(r)));
      }
      break;
    default:
      break;
  }
  return absl::StrCat(r);
}

}  // namespace sentry::trace
