// The hand-off of a session fork's child from the parent's supervisor (S1)
// to its own (S2): sentry/session/FORK.md steps 3-5. The interface is the
// one agreed between the fork's helpers (/work/wt/FORK-CONTRACT.md); the
// relisten side calls it, the adopt side implements it.
#ifndef SENTRY_RUN_FORK_HANDOFF_H_
#define SENTRY_RUN_FORK_HANDOFF_H_

#include <sys/types.h>

#include <vector>

#include "absl/status/status.h"
#include "sentry/kernel/kernel.h"
#include "sentry/platform/tracer.h"

namespace sentry {

struct ForkHandoffContext {
  Kernel& kernel;
  Tracer& tracer;
  // S1's own ends of the guest's stdin, stdout and stderr relay pipes, by
  // role (GuestStdio::relay_ends; -1: none): the child's fds on the same
  // pipes (the kernel's request and frame fds among them) become S2's own.
  std::vector<int> relay_fds;
  // The forking thread (host tid; stopped, in the task table: its cwd, its
  // process's creds and environment are read from there).
  pid_t parent = 0;
};

// Called by S1 on the tracer's thread once the parent's re-listen is done
// (its new listener served, every task of the parent still stopped), once
// per child of the fork in clone order, with the child's hand-off socket
// (the fork_prepare's i-th). OK once S2 has seized the child: it is then
// detached and out of S1's task table (removed under kernel.mu()). An
// error: S1 kills the child if it is still its tracee, and says why.
absl::Status HandOffForkedChild(const ForkHandoffContext& ctx, pid_t child, int handoff_sock);

// The same for every child of one fork ({host pid, hand-off socket} each,
// in clone order), their S2s working in parallel (Tracer::HandOffForkChildren):
// one status a child, in order.
std::vector<absl::Status> HandOffForkedChildren(const ForkHandoffContext& ctx,
                                                const std::vector<std::pair<pid_t, int>>& children);

}  // namespace sentry

#endif  // SENTRY_RUN_FORK_HANDOFF_H_
