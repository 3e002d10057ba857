// The hand-off's entry for the parent's run (run_fork.cc): the tracer's own
// (Tracer::HandOffForkChild, sentry/platform/tracer_handoff.cc) given the
// run's relay ends. S2 is sentry/run/adopt.h.
#include "sentry/run/fork_handoff.h"

#include "absl/strings/str_cat.h"

namespace sentry {

absl::Status HandOffForkedChild(const ForkHandoffContext& ctx, pid_t child, int handoff_sock) {
  pid_t ns_tid = 0;
  {
    std::lock_guard<std::mutex> lock(ctx.kernel.mu());
    if (const Task* t = ctx.kernel.tasks().Find(child); t && t->fork_child) ns_tid = t->ns_tid;
  }
  if (ns_tid == 0)
    return absl::NotFoundError(absl::StrCat("host pid ", child, " is no held child"));
  Tracer::ForkHandOff h;
  // relay_fds: the run's own ends of the guest's stdin, stdout and stderr
  // pipes, by role (GuestStdio::relay_ends; -1: not a relay).
  for (size_t i = 0; i < ctx.relay_fds.size() && i < h.relay_ends.size(); ++i) {
    h.relay_ends[i] = ctx.relay_fds[i];
  }
  return ctx.tracer.HandOffForkChild(ns_tid, handoff_sock, h);
}

}  // namespace sentry
