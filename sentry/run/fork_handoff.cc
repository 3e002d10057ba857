// The hand-off of a fork's child (FORK.md steps 3-5): relisten's interface
// (fork_handoff.h) over adopt's Tracer::HandOffForkChild.
#include "sentry/run/fork_handoff.h"

#include <mutex>

#include "absl/strings/str_cat.h"

namespace sentry {

absl::Status HandOffForkedChild(const ForkHandoffContext& ctx, pid_t child, int handoff_sock) {
  pid_t ns_tid = 0;
  {
    std::lock_guard<std::mutex> lock(ctx.kernel.mu());
    const Task* t = ctx.kernel.tasks().Find(child);
    if (!t) return absl::NotFoundError(absl::StrCat("the fork's child ", child, " is gone"));
    ns_tid = t->ns_tid;
  }
  Tracer::ForkHandOff h;
  for (size_t i = 0; i < h.relay_ends.size() && i < ctx.relay_fds.size(); ++i) {
    h.relay_ends[i] = ctx.relay_fds[i];
  }
  return ctx.tracer.HandOffForkChild(ns_tid, handoff_sock, h);
}

}  // namespace sentry
