// The caller's process budget, without root. RLIMIT_NPROC counts every task
// of a uid, and the kernel charges a sandbox's tasks to each user namespace
// up the chain (ucounts): without root the guest's tasks are the caller's
// too, so a guest that forked to the caller's limit would leave the
// caller's other programs (its shell, its editor, the sentry's own threads)
// unable to fork.
//
// So a rootless guest gets at most half of what the caller has left when
// the run starts: its pids cap (the tracer's count, which fails a fork past
// it) is lowered to that share, and its RLIMIT_NPROC is set where the kernel
// reaches the same number:
// - with namespaces the guest's count is its own namespace's, so the rlimit
//   is the cap itself (the namespace's ceiling above it is the caller's
//   limit, taken when the loader made it);
// - without namespaces the guest runs as the caller, whose whole count the
//   kernel compares: the rlimit is what the caller used at the start plus
//   the cap (a bare cap would stop the guest from forking at all when the
//   caller already runs more tasks than that).
#ifndef SENTRY_RUN_NPROC_BUDGET_H_
#define SENTRY_RUN_NPROC_BUDGET_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace sentry {

struct CallerNproc {
  uint64_t limit = UINT64_MAX;  // the soft RLIMIT_NPROC; UINT64_MAX: none
  uint64_t used = 0;            // tasks (threads included) of the real uid
};

// The calling process's soft RLIMIT_NPROC and the tasks of its real uid
// (/proc/*/status: about a millisecond for a few hundred processes).
CallerNproc ReadCallerNproc();

struct NprocShare {
  uint64_t pids = 0;    // the guest's cap: at most the one asked for
  uint64_t rlimit = 0;  // the guest's RLIMIT_NPROC
  std::string lowered;  // why the cap was lowered ("" if it was not)
};

// The share of a caller with budget c for a guest that asks for `pids`.
NprocShare ShareCallerNproc(uint64_t pids, const CallerNproc& c, bool namespaces);

}  // namespace sentry

#endif  // SENTRY_RUN_NPROC_BUDGET_H_
