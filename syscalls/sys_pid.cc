// Calls that name a process, in a sandbox without a pid namespace of its own
// (the seccomp wall alone), where a pid is the host's: every process, thread
// or group a call names must be one of the sandbox's (else ESRCH, as a pid
// namespace would answer), and then the kernel runs the call as it is.
//
// Only register arguments are checked, never guest memory, so the kernel acts
// on exactly what was checked (SyscallContext::let_kernel_run): the one kind
// of trapped call the sentry lets continue. capget's pid lives in memory: the
// sentry answers that one itself. A pid the sandbox saw die could be reused by
// a host process between the check and the call: the kernel's own check then
// still holds, a process without capabilities reaching only its own uid's
// processes, which are the run's alone.
//
// Not so without root (host_uid_shared): the guest's uid is the caller's, so
// a pid reused by another of the caller's processes would be reached. There
// a call that changes a process (its priority, I/O priority, scheduling, CPU
// mask or rlimits) may name only the calling process itself (0, its pid or
// its own tid: alive while it waits in the call, so never reused): EPERM
// otherwise. Signals are the guest's Landlock signal scope's (ABI 6+): the
// kernel refuses one to a process outside the sandbox's domain, whatever its
// pid. Reads (getpriority, sched_get*, prlimit64 without a new limit,
// getpgid, getsid) keep the race: at worst they tell the caller's own
// process's value.
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// A child of a session fork (Kernel::fork_children) is not the sandbox's,
// though its parent may name it natively (FORK.md, "Walls after a fork").
bool IsForkChild(SyscallContext& ctx, pid_t host_pid) {
  const std::vector<pid_t>& c = ctx.kernel.fork_children;
  return std::find(c.begin(), c.end(), host_pid) != c.end();
}

bool IsSandboxTask(SyscallContext& ctx, pid_t pid) {
  if (pid <= 0) return false;
  const Task* t = ctx.kernel.tasks().FindByNsTid(pid);
  return t != nullptr && !t->fork_child;
}

// A process's group as the sandbox names it: with namespaces (after a
// fork: the one case that reaches here with them) the group id in the
// sandbox's pid namespace, `outer` levels out from the process's own.
pid_t GroupOf(SyscallContext& ctx, pid_t host_pid, int outer) {
  if (!ctx.kernel.config().namespaces) return getpgid(host_pid);
  return ReadNsPgid(host_pid, outer);
}

// Group pgid as the sandbox sees it: whether a process of the sandbox is in
// it, and whether a fork's child is (its parent's group until its own
// supervisor makes it setsid(), or for good if it died first).
struct GroupMembers {
  std::vector<pid_t> sandbox;  // host pids
  bool fork_child = false;
};
GroupMembers MembersOf(SyscallContext& ctx, pid_t pgid) {
  GroupMembers m;
  if (pgid <= 0) return m;
  for (const auto& [tgid, process] : ctx.kernel.tasks().Processes()) {
    if (IsForkChild(ctx, tgid)) continue;
    if (GroupOf(ctx, tgid, 0) == pgid) m.sandbox.push_back(tgid);
  }
  for (pid_t child : ctx.kernel.fork_children) {
    if (GroupOf(ctx, child, 1) == pgid) m.fork_child = true;  // one level out: the sandbox's name
  }
  return m;
}

// A group counts as the sandbox's only while no fork's child is in it.
bool IsSandboxGroup(SyscallContext& ctx, pid_t pgid) {
  GroupMembers m = MembersOf(ctx, pgid);
  return !m.sandbox.empty() && !m.fork_child;
}

// The run's own uid: its processes are the only ones of that uid (not so
// for a caller without root, whose own uid the guest runs as).
bool IsRunUser(SyscallContext& ctx, uint64_t uid) {
  if (ctx.kernel.config().host_uid_shared) return false;
  return uid == 0 || uid == ctx.kernel.config().user_host_uid;
}

// getpriority/setpriority (PRIO_*) and ioprio_get/ioprio_set (IOPRIO_WHO_*):
// which kind of name `who` is.
enum class Who { kProcess, kGroup, kUser, kOther };
Who PriorityWho(uint64_t which) {
  switch (which) {
    case PRIO_PROCESS:
      return Who::kProcess;
    case PRIO_PGRP:
      return Who::kGroup;
    case PRIO_USER:
      return Who::kUser;
  }
  return Who::kOther;
}
Who IoprioWho(uint64_t which) {
  constexpr uint64_t kWhoProcess = 1, kWhoGroup = 2, kWhoUser = 3;
  if (which == kWhoProcess) return Who::kProcess;
  if (which == kWhoGroup) return Who::kGroup;
  if (which == kWhoUser) return Who::kUser;
  return Who::kOther;
}

// Whether (which, who) names only the sandbox's; EPERM for a user where the
// call would change it (the namespaced table's filter refuses that too).
SysStatus CheckWho(SyscallContext& ctx, Who kind, pid_t who, bool changes) {
  switch (kind) {
    case Who::kProcess:
      return who == 0 || IsSandboxTask(ctx, who) ? SysStatus{} : Errno{ESRCH};
    case Who::kGroup:
      if (who == 0) who = GroupOf(ctx, ctx.task.process->tgid, 0);
      return IsSandboxGroup(ctx, who) ? SysStatus{} : Errno{ESRCH};
    case Who::kUser:
      if (changes) return Errno{EPERM};
      return IsRunUser(ctx, static_cast<uint32_t>(who)) ? SysStatus{} : Errno{ESRCH};
    case Who::kOther:
      return {};  // the kernel's EINVAL
  }
  return {};
}

// A pid argument where 0 means the caller: the sandbox's, or the kernel's own
// error for a negative one.
SysStatus CheckPidOrSelf(SyscallContext& ctx, pid_t pid) {
  if (pid <= 0 || IsSandboxTask(ctx, pid)) return {};
  return Errno{ESRCH};
}

// The calling process itself (see the top): 0, its pid, its own tid.
bool IsSelf(SyscallContext& ctx, pid_t pid) {
  return pid == 0 || pid == ctx.task.ns_tid || pid == ctx.task.process->ns_pid;
}

// Without root, a change names the calling process alone (see the top).
SysStatus CheckSharedUidChange(SyscallContext& ctx, int nr) {
  const SyscallArgs& a = ctx.args;
  switch (nr) {
    case SYS_setpriority:
    case SYS_ioprio_set: {
      Who kind = nr == SYS_setpriority ? PriorityWho(a.Ulong(0)) : IoprioWho(a.Ulong(0));
      if (kind == Who::kOther) return {};  // the kernel's EINVAL
      if (kind == Who::kProcess && IsSelf(ctx, a.Int(1))) return {};
      return a.Int(1) == 0 ? SysStatus{} : Errno{EPERM};  // 0: the caller's own group or uid
    }
    case SYS_sched_setaffinity:
    case SYS_sched_setscheduler:
    case SYS_sched_setparam:
    case SYS_sched_setattr:
      return IsSelf(ctx, a.Int(0)) ? SysStatus{} : Errno{EPERM};
    case SYS_prlimit64:
      // A new limit is a register's pointer being non-null: no guest memory read.
      return a.Ulong(2) == 0 || IsSelf(ctx, a.Int(0)) ? SysStatus{} : Errno{EPERM};
  }
  return {};
}

SysStatus CheckCall(SyscallContext& ctx, int nr) {
  const SyscallArgs& a = ctx.args;
  pid_t p0 = a.Int(0), p1 = a.Int(1);
  switch (nr) {
    case SYS_kill:
      // -1: every process the caller may signal, which the kernel limits to
      // the run's own uid.
      if (p0 == 0 || p0 == -1) return {};
      if (p0 < -1) return IsSandboxGroup(ctx, -p0) ? SysStatus{} : Errno{ESRCH};
      return IsSandboxTask(ctx, p0) ? SysStatus{} : Errno{ESRCH};
    case SYS_tkill:
    case SYS_rt_sigqueueinfo:
      return CheckPidOrSelf(ctx, p0);
    case SYS_tgkill:
    case SYS_rt_tgsigqueueinfo:
      SYS_TRY(CheckPidOrSelf(ctx, p0));
      return CheckPidOrSelf(ctx, p1);
    case SYS_getpriority:
      return CheckWho(ctx, PriorityWho(a.Ulong(0)), p1, false);
    case SYS_setpriority:
      return CheckWho(ctx, PriorityWho(a.Ulong(0)), p1, true);
    case SYS_ioprio_get:
      return CheckWho(ctx, IoprioWho(a.Ulong(0)), p1, false);
    case SYS_ioprio_set:
      return CheckWho(ctx, IoprioWho(a.Ulong(0)), p1, true);
    default:
      // getpgid, getsid, the sched_* calls, prlimit64, pidfd_open,
      // get_robust_list: a pid (or tid) first, 0 for the caller.
      return CheckPidOrSelf(ctx, p0);
  }
}

}  // namespace

// kill(-1, sig) where the guest's uid is the caller's own: the kernel would
// signal every process of the caller (the sentry too), so the sentry sends it
// to the sandbox's processes but the caller, as kill(-1) would to a uid of
// its own (kernel/signal.c, kill_something_info).
//
// With namespaces (after a session fork) likewise: kill(-1) in the parent
// would reach its fork's children, whose pids its namespace sees. Every
// process of the sandbox runs as the one host uid the guest has (no guest
// changes its host ids), so the sentry's own sending reaches exactly whom
// the guest's could, less the children.
SysResult<uint64_t> KillEverySandboxProcess(SyscallContext& ctx) {
  int sig = ctx.args.Int(1);
  if (sig < 0 || sig > SIGRTMAX) return Errno{EINVAL};
  int sent = 0;
  for (const auto& [tgid, process] : ctx.kernel.tasks().Processes()) {
    if (tgid == ctx.task.process->tgid || IsForkChild(ctx, tgid)) continue;
    if (kill(tgid, sig) == 0) ++sent;
  }
  if (sent == 0) return Errno{ESRCH};
  return 0;
}

namespace {

// kill(0, sig) or kill(-pgid, sig) for a group a fork's child is in: the
// sentry signals the group's sandbox processes itself, one by one (the
// caller too, if it is one of them), never the child.
SysResult<uint64_t> KillGroupButForkChildren(SyscallContext& ctx, const GroupMembers& m) {
  int sig = ctx.args.Int(1);
  if (sig < 0 || sig > SIGRTMAX) return Errno{EINVAL};
  int sent = 0;
  for (pid_t tgid : m.sandbox) {
    if (kill(tgid, sig) == 0) ++sent;
  }
  if (sent == 0) return Errno{ESRCH};
  return 0;
}

}  // namespace

SysResult<uint64_t> ConfinePids(SyscallContext& ctx) {
  const KernelConfig& config = ctx.kernel.config();
  if (ctx.nr == SYS_kill && ctx.args.Int(0) == -1 &&
      (config.host_uid_shared || config.namespaces)) {
    return KillEverySandboxProcess(ctx);
  }
  if (ctx.nr == SYS_kill && ctx.args.Int(0) <= 0 && !ctx.kernel.fork_children.empty()) {
    pid_t pgid = ctx.args.Int(0) == 0 ? GroupOf(ctx, ctx.task.process->tgid, 0) : -ctx.args.Int(0);
    GroupMembers m = MembersOf(ctx, pgid);
    if (m.fork_child) return KillGroupButForkChildren(ctx, m);
  }
  SYS_TRY(CheckCall(ctx, ctx.nr));
  // (After it: a pid the sandbox no longer has is ESRCH, as ever.)
  if (ctx.kernel.config().host_uid_shared) SYS_TRY(CheckSharedUidChange(ctx, ctx.nr));
  ctx.let_kernel_run = true;
  return 0;
}

// capget(hdrp, datap): the header's pid names the task; the sentry reads the
// header once and asks the kernel itself.
SysResult<uint64_t> Capget(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(__user_cap_header_struct hdr,
                       ctx.mem.CopyIn<__user_cap_header_struct>(ctx.args.Ptr(0)));
  SYS_TRY(CheckPidOrSelf(ctx, hdr.pid));
  const Task* t = hdr.pid > 0 ? ctx.kernel.tasks().FindByNsTid(hdr.pid) : &ctx.task;
  __user_cap_header_struct host{hdr.version, t ? t->tid : ctx.task.tid};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  bool want = !ctx.args.Ptr(1).null();
  int r = static_cast<int>(syscall(SYS_capget, &host, want ? data : nullptr));
  int err = errno;
  // An unknown version: the kernel writes the one it prefers back, and
  // fails only if data was asked for (kernel/capability.c, capget).
  if (host.version != hdr.version) SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(0), host.version));
  if (r < 0) return Errno{err};
  if (want) {
    size_t n = hdr.version == _LINUX_CAPABILITY_VERSION_1 ? 1 : _LINUX_CAPABILITY_U32S_3;
    SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(1), data, n * sizeof(data[0])));
  }
  return 0;
}

}  // namespace sentry::sys
