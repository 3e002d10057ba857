// SyscallEvent: one syscall of the guest as the sentry saw it, reported once
// it was answered, to whoever observes the run (the census, --trace). The
// platform makes them (notify loop, tracer); observers never see a
// seccomp_notif or ptrace registers.
#ifndef SENTRY_KERNEL_SYSCALL_EVENT_H_
#define SENTRY_KERNEL_SYSCALL_EVENT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace sentry {

// How a call was answered.
enum class EventAction : uint8_t {
  kNative,   // the host kernel ran it (seen in census mode only)
  kTrap,     // a handler of the sentry answered it
  kTrace,    // answered at a ptrace stop (execve, execveat)
  kRefused,  // the table's own errno (an errno row, a failed argument filter, no row)
};

struct SyscallEvent {
  pid_t pid = 0;  // host ids of the calling task
  pid_t tid = 0;
  int nr = -1;
  uint64_t args[6] = {};
  EventAction action = EventAction::kNative;
  // False where the kernel ran the call after the sentry let it go (a native
  // call, an exec the sentry allowed): the sentry never sees the result.
  bool result_known = false;
  int64_t value = 0;  // the return value, or -errno; only if result_known
  // From the notification's receipt (or the ptrace stop) to the answer.
  uint64_t duration_ns = 0;
  // For a call answered later on a fiber: what SyscallObserver::Arrival gave
  // when it came. Such a call may be answered long after its caller moved on
  // (a wait a signal interrupted is given up only when the fiber next looks),
  // so it is counted where it was made, not where the task is by then.
  std::optional<int64_t> arrival;
};

// Receives every event; may be called from several threads at once.
class SyscallObserver {
 public:
  virtual ~SyscallObserver() = default;
  virtual void OnSyscall(const SyscallEvent& event) = 0;
  // Called as a call of task tid that will be answered later comes in (its
  // caller still waiting); returned in that call's SyscallEvent::arrival
  // (-1: nothing to remember).
  virtual int64_t Arrival(pid_t tid) { return -1; }
  // A census phase mark from the guest's task tid (loader/census_filter.h).
  virtual void OnMark(pid_t tid, const std::string& label) {}
  // A task started by another (fork, vfork, clone), before its first call.
  virtual void OnNewTask(pid_t parent, pid_t child) {}
  // A task that has ended (its tid may be reused by a later one).
  virtual void OnTaskGone(pid_t tid) {}
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_SYSCALL_EVENT_H_
