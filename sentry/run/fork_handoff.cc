// Until the adopt mode exists (FORK.md step 3), no child is handed off: the
// parent's supervisor kills each one at the end of its re-listen and says so.
#include "sentry/run/fork_handoff.h"

namespace sentry {

absl::Status HandOffForkedChild(const ForkHandoffContext&, pid_t, int) {
  return absl::UnimplementedError(
      "this sentry has no hand-off of a fork's child to a supervisor of its own yet (FORK.md "
      "step 3)");
}

}  // namespace sentry
