// The re-listen (sentry/session/FORK.md, step 2): a guest thread stacks a
// filter with a listener of its own, and the supervisor, not the guest, ends
// up holding that listener. The stops, in order:
//
//   1. the SECCOMP_RET_TRACE stop of seccomp(SET_MODE_FILTER, NEW_LISTENER
//      ...): the supervisor writes its own program over the buffer the
//      guest's sock_fprog offers and its own flags into the register, and
//      resumes with PTRACE_SYSCALL (the kernel re-runs the filters on the
//      new arguments: the same TRACE row, now let through);
//   2. the syscall-exit stop: rax is the new listener's number in the
//      guest's fd table. The supervisor takes a copy (pidfd_getfd) and runs
//      close(fd) in the task (InjectSyscall, inject_syscall.h: at the same
//      `syscall` instruction, rip - 2, to its exit; a signal that comes
//      meanwhile is held back: the guest's handler must not run while it
//      holds the listener); then the guest's own registers come back, with
//      0 as its seccomp's result, and it resumes with the signals held.
//
// So the guest never runs an instruction of its own while it holds the
// listener (it could answer, or SECCOMP_USER_NOTIF_FLAG_CONTINUE, its own
// trapped calls). What the tracer decides is read from registers; the one
// read of guest memory (the sock_fprog's length and buffer) decides only
// where the supervisor writes, and the supervisor's caller holds every other
// task stopped until the kernel has copied the program.
#include <linux/seccomp.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <cerrno>
#include <climits>
#include <string>

#include "sentry/abi/guest_memory.h"
#include "sentry/platform/inject_syscall.h"
#include "sentry/platform/tracer.h"

namespace sentry {
namespace {

constexpr int kSyscallStop = SIGTRAP | 0x80;  // PTRACE_O_TRACESYSGOOD

// The guest's sock_fprog (16 bytes: its length, padding, its filter's address).
struct GuestFprog {
  uint16_t len;
  uint16_t pad[3];
  uint64_t filter;
};

}  // namespace

bool Tracer::BeginRelisten(pid_t ns_tid, std::vector<sock_filter> program, uint32_t flags,
                           ListenerTaken taken) {
  std::lock_guard<std::mutex> lock(kernel_.mu());
  Task* task = kernel_.tasks().FindByNsTid(ns_tid);
  if (!task || program.empty() || program.size() > BPF_MAXINSNS ||
      !(flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)) {
    return false;
  }
  Relisten& r = relisten_[task->tid];
  r = Relisten{};
  r.program = std::move(program);
  r.flags = flags;
  r.taken = std::move(taken);
  return true;
}

bool Tracer::RelistenAtEntry(pid_t pid, user_regs_struct& regs) {
  int err = 0;
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    auto it = relisten_.find(pid);
    if (it == relisten_.end() || it->second.phase != Relisten::kArmed) return false;
    Relisten& r = it->second;
    ProcessMemoryBackend backend(pid);
    GuestMemory mem(backend);
    auto fprog = mem.CopyIn<GuestFprog>(GuestAddr(regs.rdx));
    size_t bytes = r.program.size() * sizeof(sock_filter);
    if (!fprog.ok()) {
      err = EFAULT;
    } else if (fprog->len < r.program.size()) {
      err = EINVAL;  // the buffer offered cannot hold the supervisor's program
    } else if (!mem.CopyOut(GuestAddr(fprog->filter), r.program.data(), bytes).ok() ||
               !mem.CopyOutValue(
                       GuestAddr(regs.rdx),
                       GuestFprog{static_cast<uint16_t>(r.program.size()), {}, fprog->filter})
                    .ok()) {
      err = EFAULT;
    } else {
      r.guest_flags = regs.rsi;
      r.guest_fprog = regs.rdx;
      regs.rsi = r.flags;
      if (ptrace(PTRACE_SETREGS, pid, nullptr, &regs) < 0 ||
          ptrace(PTRACE_SYSCALL, pid, nullptr, nullptr) < 0) {
        err = ESRCH;
      } else {
        r.phase = Relisten::kAwaitExit;
        return true;
      }
    }
  }
  // Failed before the call ran: the guest's call fails with err.
  regs.orig_rax = static_cast<uint64_t>(-1);
  regs.rax = static_cast<uint64_t>(-err);
  ptrace(PTRACE_SETREGS, pid, nullptr, &regs);
  RelistenDone(pid, err);
  return false;  // resumed by the caller
}

bool Tracer::RelistenOwnsStop(pid_t pid, int status) {
  int sig = WSTOPSIG(status);
  int event = status >> 16;
  int err = 0;
  int close_fd = -1;
  user_regs_struct at_exit{};
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    auto it = relisten_.find(pid);
    if (it == relisten_.end() || it->second.phase == Relisten::kArmed) return false;
    Relisten& r = it->second;
    if (sig != kSyscallStop || event != 0) {
      // A signal that would run the guest's handler before the close: held
      // back (a group-stop's too: its signal is held, the stop comes after).
      if (event == 0) r.held.push_back(sig);  // (a syscall stop's SIGTRAP has its 0x80)
      ptrace(PTRACE_SYSCALL, pid, nullptr, nullptr);
      return true;
    }
    user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) < 0) return true;  // it is dying
    if (r.phase != Relisten::kAwaitExit) return false;
    auto ret = static_cast<int64_t>(regs.rax);
    // The guest's own registers, but for what the call returns.
    r.after = regs;
    r.after.rsi = r.guest_flags;
    r.after.rdx = r.guest_fprog;
    if (ret < 0) {
      err = static_cast<int>(-ret);
      ptrace(PTRACE_SETREGS, pid, nullptr, &r.after);
    } else {
      Task* task = kernel_.tasks().Find(pid);
      close_fd = static_cast<int>(ret);
      if (task)
        r.listener =
            UniqueFd(static_cast<int>(syscall(SYS_pidfd_getfd, task->pidfd.get(), close_fd, 0)));
      r.after.rax = 0;
      at_exit = regs;
    }
  }
  if (close_fd >= 0) {
    // The guest's copy closed by an injected close (inject_syscall.h), run
    // to its exit before the guest runs an instruction of its own.
    std::vector<int> held;
    Injected c = InjectSyscall(pid, at_exit, SYS_close,
                               {static_cast<uint64_t>(close_fd), 0, 0, 0, 0, 0}, held);
    if (c.gone) {
      OnWaitStatus(pid, c.status);  // its end, as any other (ESRCH to `taken`)
      return true;
    }
    std::lock_guard<std::mutex> lock(kernel_.mu());
    auto it = relisten_.find(pid);
    if (it == relisten_.end()) return true;
    Relisten& r = it->second;
    r.held.insert(r.held.end(), held.begin(), held.end());
    // The guest's copy is closed: were it not (it cannot fail on an fd the
    // kernel just made, in a task held stopped), the guest would hold a
    // listener, so it does not run again.
    if (c.ret != 0 || !r.listener) {
      kill(pid, SIGKILL);
      violation_ = "the sentry could not take a re-listen's listener from the guest";
      err = EPERM;
    } else {
      ptrace(PTRACE_SETREGS, pid, nullptr, &r.after);
    }
  }
  // Done: the guest resumes with its signals.
  std::vector<int> held;
  pid_t tgid = pid;
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    if (auto it = relisten_.find(pid); it != relisten_.end()) held = it->second.held;
    if (Task* task = kernel_.tasks().Find(pid)) tgid = task->process->tgid;
  }
  RelistenDone(pid, err);
  // The first held signal is delivered as the task resumes, the others
  // queued again.
  int first = held.empty() ? 0 : held.front();
  for (size_t i = 1; i < held.size(); ++i) syscall(SYS_tgkill, tgid, pid, held[i]);
  ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(first)));
  return true;
}

void Tracer::RelistenDone(pid_t pid, int err) {
  Relisten r;
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    auto it = relisten_.find(pid);
    if (it == relisten_.end()) return;
    r = std::move(it->second);
    relisten_.erase(it);
  }
  if (!r.taken) return;
  if (err == 0 && r.listener) {
    r.taken(0, std::move(r.listener));
  } else {
    r.taken(err ? err : EBADF, UniqueFd());
  }
}

}  // namespace sentry
