// The tracer's SECCOMP_RET_TRACE stops other than an exec's: the fork gate
// (syscalls/fork_gate.h, sentry/session/FORK.md step 1). Everything decided
// here is read from the stopped task's registers, which only the tracer can
// change until it resumes the task; no guest memory is read.
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <cerrno>

#include "sentry/abi/guest_memory.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/platform/tracer.h"
#include "sentry/trace/syscall_format.h"
#include "syscalls/fork_gate.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

// A refusal at a gate installs and reads no fd.
class NoFdsAtGate final : public GuestFds {
 public:
  SysResult<UniqueFd> Get(int) override { return Errno{EBADF}; }
  SysResult<int> Install(int, bool) override { return Errno{EPERM}; }
};

constexpr const char* kForkHint =
    "clone with new namespaces is not permitted in this sandbox (a session fork is made by "
    "the server, not by the guest)";
constexpr const char* kListenerHint =
    "a seccomp filter with a listener of its own is not permitted in this sandbox (the "
    "sentry answers the sandbox's trapped calls); filters without one are";

}  // namespace

bool Tracer::OnTraceStop(pid_t pid) {
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) < 0) return false;
  long nr = static_cast<long>(regs.orig_rax);
  if (nr == SYS_execve || nr == SYS_execveat) {
    OnExecStop(pid, regs);
  } else if (IsForkClone(nr, regs.rdi)) {
    OnForkGate(pid, regs);
  } else if (IsListenerRequest(nr, regs.rsi)) {
    // Only a task the supervisor is re-listening takes one (and never into
    // its own hands). The supervisor's hook may arm it now (after a fork's
    // prepare), with every other task stopped meanwhile.
    if (on_listener_request_) {
      bool armed;
      {
        std::lock_guard<std::mutex> lock(kernel_.mu());
        armed = relisten_.count(pid) != 0;
      }
      if (!armed) on_listener_request_(pid);
    }
    if (RelistenAtEntry(pid, regs)) return true;
    RefuseAtStop(pid, regs, EPERM, kListenerHint);
  }
  // Anything else is a guest filter's own TRACE on a call the sentry's
  // filter lets run (a lower action would have won): it runs.
  return false;
}

void Tracer::OnForkGate(pid_t pid, user_regs_struct& regs) {
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    Task* task = kernel_.tasks().Find(pid);
    // One clone a grant, used when the child is made (Tracer::OnNewTask): a
    // clone a signal interrupts before it makes one (-ERESTARTNOINTR)
    // restarts and stops here again.
    if (task && task->forks_granted > 0) return;  // the kernel runs it when the task resumes
  }
  RefuseAtStop(pid, regs, EPERM, kForkHint);
}

bool Tracer::GrantFork(pid_t ns_tid, int count) {
  if (count < 1 || count > kMaxForkGrant) return false;
  std::lock_guard<std::mutex> lock(kernel_.mu());
  Task* task = kernel_.tasks().FindByNsTid(ns_tid);
  if (!task || task->fork_child) return false;
  task->forks_granted = count;
  return true;
}

void Tracer::WithdrawFork(pid_t ns_tid) {
  std::lock_guard<std::mutex> lock(kernel_.mu());
  if (Task* task = kernel_.tasks().FindByNsTid(ns_tid)) task->forks_granted = 0;
}

void Tracer::RefuseAtStop(pid_t pid, user_regs_struct& regs, int err, const char* hint) {
  int nr = static_cast<int>(regs.orig_rax);
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    Task* task = kernel_.tasks().Find(pid);
    const SyscallRow* row = FindSyscall(nr);
    if (task && row) {
      ProcessMemoryBackend backend(pid);
      GuestMemory mem(backend);
      NoFdsAtGate fds;
      SyscallContext ctx{kernel_, *task, mem, fds, {}};
      uint64_t raw[6] = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
      for (int i = 0; i < 6; ++i) ctx.args.raw[i] = raw[i];
      ctx.nr = nr;
      ctx.hint = hint;
      std::string call = Dispatcher::Describe(ctx, nr);
      Dispatcher::RecordDenial(ctx, nr, *row, err, call);
      if (trace_) {
        trace::TracedCall refused{nr};
        refused.done = true;
        refused.ret = -err;
        trace_->Call(task->ns_tid, call, trace::FormatReturn(refused));
      }
    }
  }
  regs.orig_rax = static_cast<uint64_t>(-1);  // skip the call...
  regs.rax = static_cast<uint64_t>(-err);     // ...and fail it
  ptrace(PTRACE_SETREGS, pid, nullptr, &regs);
}

}  // namespace sentry
