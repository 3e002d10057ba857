// One system call run inside a stopped tracee, as if it had made it: the
// supervisor's way of acting in a guest before (or instead of) the guest's
// own next instruction (sentry/session/FORK.md: the re-listen's close of the
// listener's guest copy, an adopted child's setsid and seccomp).
#ifndef SENTRY_PLATFORM_INJECT_SYSCALL_H_
#define SENTRY_PLATFORM_INJECT_SYSCALL_H_

#include <sys/types.h>
#include <sys/user.h>

#include <array>
#include <cstdint>
#include <vector>

namespace sentry {

struct Injected {
  int64_t ret = 0;    // what the call returned (-errno on failure)
  bool gone = false;  // the task ended (or cannot be traced) meanwhile
  int status = 0;     // with gone: its last wait status, to be handled as any other
};

// pid is in a ptrace-stop of this thread's, and `at` are its user registers,
// with rip just past a `syscall` instruction (0f 05): after a syscall-exit
// stop, or at a fresh child's return from clone. The registers are rewritten
// to run nr(args) at that instruction (rip - 2, orig_rax -1 so that no
// restart of an earlier call interferes), the task is run to the call's
// entry and exit stops (PTRACE_SYSCALL; the caller's seize options must
// include PTRACE_O_TRACESYSGOOD), and left stopped at the exit, registers as
// the call left them: the caller restores `at` (or what it wants) before it
// resumes the task. A signal that arrives meanwhile shows up as a
// signal-delivery stop before the call: it is not delivered (no guest
// handler runs in the middle) but appended to `held`, for the caller to give
// when it resumes the task. A SECCOMP_RET_TRACE stop of the call itself (a
// gated call the supervisor injects: its filter re-runs and lets it) is
// passed through. Waits with waitpid(pid, __WALL): no other task's stop is
// consumed.
Injected InjectSyscall(pid_t pid, const user_regs_struct& at, long nr,
                       const std::array<uint64_t, 6>& args, std::vector<int>& held);

}  // namespace sentry

#endif  // SENTRY_PLATFORM_INJECT_SYSCALL_H_
