// Processes, signals, time and identity calls, as strace prints them.
#include <sched.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include <string>

#include "absl/strings/str_format.h"
#include "sentry/trace/format_internal.h"

namespace sentry::trace::internal {
namespace {

constexpr uint64_t kCloneParentSettid = 0x100000, kCloneSettls = 0x80000,
                   kCloneChildSettid = 0x1000000, kCloneChildCleartid = 0x200000;

// clone(flags, stack, parent_tid, child_tid, tls) on x86-64, in strace's order.
void Clone(ArgList& a) {
  uint64_t flags = a.u(0);
  a.Add(absl::StrCat("child_stack=", Addr(a.u(1)))).Add(absl::StrCat("flags=", CloneFlags(flags)));
  if (flags & kCloneParentSettid) {
    a.Add(absl::StrCat("parent_tid=", a.ok() ? absl::StrCat("[", a.ret(), "]") : Addr(a.u(2))));
  }
  if (flags & kCloneSettls) a.Add(absl::StrCat("tls=", Addr(a.u(4))));
  if (flags & (kCloneChildSettid | kCloneChildCleartid)) {
    a.Add(absl::StrCat("child_tidptr=", Addr(a.u(3))));
  }
}

std::string Uname(GuestMemory* m, uint64_t addr) {
  struct utsname u;
  if (!m || !m->CopyIn(GuestAddr(addr), &u, sizeof(u)).ok()) return Addr(addr);
  auto field = [](const char* s, size_t n) { return Quote(std::string_view(s, strnlen(s, n))); };
  return absl::StrCat("{sysname=", field(u.sysname, sizeof(u.sysname)),
                      ", nodename=", field(u.nodename, sizeof(u.nodename)), ", ...}");
}

void Futex(ArgList& a) {
  int op = a.d(1);
  int cmd = op & 0x7f;
  a.Ptr(0).Add(FutexOp(op)).Int(2);
  auto timeout = [&] { return a.u(3) ? Timespec(a.mem(), a.u(3)) : std::string("NULL"); };
  switch (cmd) {
    case 0:  // FUTEX_WAIT
      a.Add(timeout());
      break;
    case 1:  // FUTEX_WAKE
      break;
    case 9:   // FUTEX_WAIT_BITSET
    case 10:  // FUTEX_WAKE_BITSET
      a.Add(timeout()).Add(static_cast<uint32_t>(a.u(5)) == 0xffffffff
                               ? std::string("FUTEX_BITSET_MATCH_ANY")
                               : absl::StrFormat("%#x", static_cast<uint32_t>(a.u(5))));
      break;
    default:
      a.Ptr(3).Ptr(4).Unsigned(5);
  }
}

}  // namespace

bool FormatProcessCall(ArgList& a, int nr) {
  GuestMemory* m = a.mem();
  switch (nr) {
    case SYS_execve:
      a.Path(0).Add(StringArray(m, a.u(1))).Add(EnvArray(m, a.u(2)));
      return true;
    case SYS_execveat:
      a.Dirfd(0).Path(1).Add(StringArray(m, a.u(2))).Add(EnvArray(m, a.u(3))).Add(AtFlags(a.u(4)));
      return true;
    case SYS_clone:
      Clone(a);
      return true;
    case SYS_fork:
    case SYS_vfork:
    case SYS_getpid:
    case SYS_gettid:
    case SYS_getppid:
    case SYS_getuid:
    case SYS_geteuid:
    case SYS_getgid:
    case SYS_getegid:
    case SYS_getpgrp:
    case SYS_setsid:
    case SYS_sched_yield:
    case SYS_pause:
    case SYS_sync:
      return true;
    case SYS_exit:
    case SYS_exit_group:
    case SYS_setuid:
    case SYS_setgid:
    case SYS_getpgid:
    case SYS_getsid:
      a.Int(0);
      return true;
    case SYS_wait4:
      a.Int(0).Out(1, [&] { return WaitStatus(m, a.u(1)); }).Add(WaitOptions(a.u(2))).Ptr(3);
      return true;
    case SYS_kill:
      a.Int(0).Add(SignalName(a.d(1)));
      return true;
    case SYS_tkill:
      a.Int(0).Add(SignalName(a.d(1)));
      return true;
    case SYS_tgkill:
      a.Int(0).Int(1).Add(SignalName(a.d(2)));
      return true;
    case SYS_rt_sigaction:
      a.Add(SignalName(a.d(0))).Add(a.u(1) ? Sigaction(m, a.u(1)) : "NULL");
      a.Out(2, [&] { return Sigaction(m, a.u(2)); }).Unsigned(3);
      return true;
    case SYS_rt_sigprocmask:
      a.Add(SigprocmaskHow(a.d(0))).Add(a.u(1) ? SigSetAt(m, a.u(1), a.u(3)) : "NULL");
      a.Out(2, [&] { return SigSetAt(m, a.u(2), a.u(3)); }).Unsigned(3);
      return true;
    case SYS_set_tid_address:
      a.Ptr(0);
      return true;
    case SYS_set_robust_list:
      a.Ptr(0).Unsigned(1);
      return true;
    case SYS_rseq:
      a.Ptr(0).Add(absl::StrFormat("%#x", a.u(1))).Int(2).Add(absl::StrFormat("%#x", a.u(3)));
      return true;
    case SYS_arch_prctl:
      a.Add(ArchPrctlCode(a.d(0))).Ptr(1);
      return true;
    case SYS_prctl:
      a.Add(PrctlOption(a.d(0)));
      if (a.d(0) == 15) {  // PR_SET_NAME
        a.Str(1);
      } else {
        a.Unsigned(1).Unsigned(2).Unsigned(3).Unsigned(4);
      }
      return true;
    case SYS_prlimit64:
      a.Int(0).Add(Rlimit(a.d(1))).Add(a.u(2) ? Rlimit64(m, a.u(2)) : "NULL");
      a.Out(3, [&] { return Rlimit64(m, a.u(3)); });
      return true;
    case SYS_getrlimit:
      a.Add(Rlimit(a.d(0))).Out(1, [&] { return Rlimit64(m, a.u(1)); });
      return true;
    case SYS_setrlimit:
      a.Add(Rlimit(a.d(0))).Add(Rlimit64(m, a.u(1)));
      return true;
    case SYS_futex:
      Futex(a);
      return true;
    case SYS_clock_gettime:
    case SYS_clock_getres:
      a.Add(ClockId(a.d(0))).Out(1, [&] { return Timespec(m, a.u(1)); });
      return true;
    case SYS_clock_nanosleep:
      a.Add(ClockId(a.d(0))).Add(a.u(1) == 1 ? "TIMER_ABSTIME" : absl::StrCat(a.u(1)));
      a.Add(Timespec(m, a.u(2))).Ptr(3);
      return true;
    case SYS_nanosleep:
      a.Add(Timespec(m, a.u(0))).Ptr(1);
      return true;
    case SYS_uname:
      a.Out(0, [&] { return Uname(m, a.u(0)); });
      return true;
    case SYS_sysinfo:
      a.Out(0, [&] { return Sysinfo(m, a.u(0)); });
      return true;
    case SYS_sched_getaffinity:
      a.Int(0).Unsigned(1).Out(2,
                               [&] { return CpuSet(m, a.u(2), static_cast<uint64_t>(a.ret())); });
      return true;
    case SYS_sched_setaffinity:
      a.Int(0).Unsigned(1).Add(CpuSet(m, a.u(2), a.u(1)));
      return true;
    default:
      return false;
  }
}

}  // namespace sentry::trace::internal
