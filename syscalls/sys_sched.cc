// sched_getaffinity and sched_setaffinity: made by the sentry on the
// sandbox's own tasks (pid 0: the caller; else a pid the sandbox sees), so
// that the start-up pin (sentry/kernel/colocation.h) stays invisible: a
// pinned task shows the mask it would have had, and a task whose affinity the
// guest sets is the guest's to manage from then on.
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// Far more CPUs than any host has (the kernel copies at most its own
// cpumask's size); a longer buffer is only read or written up to this.
constexpr size_t kMaxMaskBytes = 1024;

SysResult<pid_t> TargetTid(SyscallContext& ctx) {
  pid_t pid = static_cast<pid_t>(ctx.args.Int(0));
  if (pid < 0) return Errno{ESRCH};
  if (pid == 0 || pid == ctx.task.ns_tid) return ctx.task.tid;
  const Task* t = ctx.kernel.tasks().FindByNsTid(pid);
  if (!t) return Errno{ESRCH};
  return t->tid;
}

// With --cpus, a mask shows only the CPUs /sys shows (sysfs.h), so that
// nproc, os.sched_getaffinity and os.cpu_count agree; a mask the guest set
// to other CPUs is its own and shows as is.
void ShowOnlySandboxCpus(const KernelConfig& config, unsigned char* mask, size_t len) {
  if (config.cpus <= 0) return;
  cpu_set_t shown = config.ShownCpus();
  unsigned char narrowed[kMaxMaskBytes] = {};
  bool any = false;
  for (size_t bit = 0; bit < len * 8 && bit < CPU_SETSIZE; ++bit) {
    if ((mask[bit / 8] >> (bit % 8) & 1) && CPU_ISSET(bit, &shown)) {
      narrowed[bit / 8] |= static_cast<unsigned char>(1u << (bit % 8));
      any = true;
    }
  }
  if (any) std::memcpy(mask, narrowed, len);
}

}  // namespace

SysResult<uint64_t> SchedGetaffinity(SyscallContext& ctx) {
  size_t len = std::min<size_t>(ctx.args.Uint(1), kMaxMaskBytes);
  unsigned char mask[kMaxMaskBytes] = {};
  SysResult<pid_t> target = TargetTid(ctx);
  if (!target.ok()) {
    // The kernel checks the length before it looks for the task.
    if (syscall(SYS_sched_getaffinity, 0, len, mask) < 0) return Errno{errno};
    return Errno{target.error()};
  }
  pid_t tid = *target;
  // The kernel's own checks (a length too short for its CPUs, not a
  // multiple of a long) and answer: the bytes it filled.
  long n = syscall(SYS_sched_getaffinity, tid, len, mask);
  if (n < 0) return Errno{errno};
  if (ctx.kernel.colocation().IsPinned(tid)) {
    const cpu_set_t& unpinned = ctx.kernel.colocation().unpinned_mask();
    std::memset(mask, 0, static_cast<size_t>(n));
    std::memcpy(mask, &unpinned, std::min(static_cast<size_t>(n), sizeof(unpinned)));
  }
  ShowOnlySandboxCpus(ctx.kernel.config(), mask, static_cast<size_t>(n));
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(2), mask, static_cast<size_t>(n)));
  return static_cast<uint64_t>(n);
}

SysResult<uint64_t> SchedSetaffinity(SyscallContext& ctx) {
  // The kernel reads the mask before it looks for the task.
  size_t len = std::min<size_t>(ctx.args.Uint(1), kMaxMaskBytes);
  unsigned char mask[kMaxMaskBytes] = {};
  SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(2), mask, len));
  SYS_ASSIGN_OR_RETURN(pid_t tid, TargetTid(ctx));
  if (syscall(SYS_sched_setaffinity, tid, len, mask) < 0) return Errno{errno};
  ctx.kernel.colocation().Release(tid);
  if (Task* t = ctx.kernel.tasks().Find(tid)) t->own_affinity = true;
  return 0;
}

}  // namespace sentry::sys
