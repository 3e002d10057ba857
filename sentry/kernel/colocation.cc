#include "sentry/kernel/colocation.h"

namespace sentry {

int CoLocation::Start(pid_t guest_tid, pid_t notifier_tid) {
  cpu_set_t mask;
  if (sched_getaffinity(guest_tid, sizeof(mask), &mask) < 0 || CPU_COUNT(&mask) < 2) return -1;
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask)) return -1;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(guest_tid, sizeof(one), &one) < 0) return -1;
  original_ = mask;
  cpu_ = cpu;
  pinned_.insert(guest_tid);
  if (sched_setaffinity(notifier_tid, sizeof(one), &one) == 0) notifier_ = notifier_tid;
  return cpu;
}

void CoLocation::Inherit(pid_t parent_tid, pid_t child_tid) {
  if (IsPinned(parent_tid)) pinned_.insert(child_tid);
}

void CoLocation::End() {
  if (cpu_ < 0) return;
  // A task gone meanwhile fails with ESRCH: nothing to undo.
  for (pid_t tid : pinned_) sched_setaffinity(tid, sizeof(original_), &original_);
  pinned_.clear();
  if (notifier_ >= 0) sched_setaffinity(notifier_, sizeof(original_), &original_);
  notifier_ = -1;
  cpu_ = -1;
}

}  // namespace sentry
