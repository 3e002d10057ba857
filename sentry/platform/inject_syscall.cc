#include "sentry/platform/inject_syscall.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <cerrno>

namespace sentry {
namespace {

constexpr int kInjectSyscallStop = SIGTRAP | 0x80;  // PTRACE_O_TRACESYSGOOD
constexpr uint64_t kInjectInsnLen = 2;              // 0f 05

}  // namespace

Injected InjectSyscall(pid_t pid, const user_regs_struct& at, long nr,
                       const std::array<uint64_t, 6>& args, std::vector<int>& held) {
  Injected out;
  user_regs_struct regs = at;
  regs.orig_rax = static_cast<uint64_t>(-1);
  regs.rax = static_cast<uint64_t>(nr);
  regs.rdi = args[0];
  regs.rsi = args[1];
  regs.rdx = args[2];
  regs.r10 = args[3];
  regs.r8 = args[4];
  regs.r9 = args[5];
  regs.rip = at.rip - kInjectInsnLen;
  if (ptrace(PTRACE_SETREGS, pid, nullptr, &regs) < 0 ||
      ptrace(PTRACE_SYSCALL, pid, nullptr, nullptr) < 0) {
    out.gone = true;
    out.ret = -ESRCH;
    return out;
  }
  bool entered = false;
  while (true) {
    int status = 0;
    pid_t w = waitpid(pid, &status, __WALL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
      out.gone = true;
      out.status = status;
      out.ret = -ESRCH;
      return out;
    }
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (sig == kInjectSyscallStop && event == 0) {
      if (entered) {
        user_regs_struct done;
        if (ptrace(PTRACE_GETREGS, pid, nullptr, &done) < 0) {
          out.gone = true;
          out.ret = -ESRCH;
          return out;
        }
        out.ret = static_cast<int64_t>(done.rax);
        return out;
      }
      entered = true;
    } else if (event == 0) {
      held.push_back(sig);  // a signal-delivery stop: held back
    }
    // (An event stop: the call's own TRACE stop, or a group-stop: go on.)
    if (ptrace(PTRACE_SYSCALL, pid, nullptr, nullptr) < 0) {
      out.gone = true;
      out.ret = -ESRCH;
      return out;
    }
  }
}

}  // namespace sentry
