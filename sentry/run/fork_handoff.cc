// The hand-off's entry for the parent's run (fork_parent.cc): the tracer's own
// (Tracer::HandOffForkChild, sentry/platform/tracer_handoff.cc) given the
// run's relay ends. S2 is sentry/run/adopt.h.
#include "sentry/run/fork_handoff.h"

#include "absl/strings/str_cat.h"

namespace sentry {

absl::Status HandOffForkedChild(const ForkHandoffContext& ctx, pid_t child, int handoff_sock) {
  return HandOffForkedChildren(ctx, {{child, handoff_sock}})[0];
}

std::vector<absl::Status> HandOffForkedChildren(
    const ForkHandoffContext& ctx, const std::vector<std::pair<pid_t, int>>& children) {
  std::vector<absl::Status> out(children.size());
  std::vector<std::pair<pid_t, int>> held;  // {ns_tid, socket}
  std::vector<size_t> index;
  for (size_t i = 0; i < children.size(); ++i) {
    pid_t ns_tid = 0;
    {
      std::lock_guard<std::mutex> lock(ctx.kernel.mu());
      const Task* t = ctx.kernel.tasks().Find(children[i].first);
      if (t && t->fork_child) ns_tid = t->ns_tid;
    }
    if (ns_tid == 0) {
      out[i] =
          absl::NotFoundError(absl::StrCat("host pid ", children[i].first, " is no held child"));
      continue;
    }
    held.emplace_back(ns_tid, children[i].second);
    index.push_back(i);
  }
  Tracer::ForkHandOff h;
  // relay_fds: the run's own ends of the guest's stdin, stdout and stderr
  // pipes, by role (GuestStdio::relay_ends; -1: not a relay).
  for (size_t i = 0; i < ctx.relay_fds.size() && i < h.relay_ends.size(); ++i) {
    h.relay_ends[i] = ctx.relay_fds[i];
  }
  std::vector<absl::Status> done = ctx.tracer.HandOffForkChildren(held, h);
  for (size_t j = 0; j < done.size(); ++j) out[index[j]] = std::move(done[j]);
  return out;
}

}  // namespace sentry
