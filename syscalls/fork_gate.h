// The fork gate (sentry/session/FORK.md, step 1): the two calls a guest may
// make only when its supervisor lets it, and what decides that they are
// those calls. The seccomp filter (loader/filter.cc) sends exactly these to
// a SECCOMP_RET_TRACE stop; the tracer (sentry/platform/tracer_gates.cc)
// checks the same predicates on the stopped task's registers, which nothing
// but the tracer can change once the filter has read them. No guest memory
// is read: the flags are arguments in registers.
#ifndef SENTRY_SYSCALLS_FORK_GATE_H_
#define SENTRY_SYSCALLS_FORK_GATE_H_

#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>

#include <cstdint>

namespace sentry {

// The one clone() a session fork makes: a child in a new namespace of each
// kind that confines what a sandbox names natively (FORK.md, "Walls after a
// fork"), reaped with SIGCHLD. A clone with these flags stops at the fork
// gate: it runs only for a task the supervisor granted one fork
// (Tracer::GrantFork), else it fails with EPERM, as every other namespace
// flag does in the filter itself.
inline constexpr uint32_t kForkCloneFlags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
                                            CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS | SIGCHLD;

// Whether a clone goes to the fork gate: the low 32 bits of its flags are
// exactly kForkCloneFlags (the kernel reads only those: kernel/fork.c,
// lower_32_bits(clone_flags)). clone3 is not gated: its flags are in guest
// memory, which another thread can change after any check (it is ENOSYS).
constexpr bool IsForkClone(long nr, uint64_t flags) {
  return nr == SYS_clone && static_cast<uint32_t>(flags) == kForkCloneFlags;
}

// Whether a seccomp() call asks for a listener of its own (flags, its second
// argument, an unsigned int): it stops at the tracer, which refuses it with
// EPERM unless the task is re-listening (FORK.md, step 2). A listener in the
// guest's hands would see, and could let run with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE, the calls only the sentry may answer.
constexpr bool IsListenerRequest(long nr, uint64_t flags) {
  return nr == SYS_seccomp && (static_cast<uint32_t>(flags) & SECCOMP_FILTER_FLAG_NEW_LISTENER);
}

}  // namespace sentry

#endif  // SENTRY_SYSCALLS_FORK_GATE_H_
