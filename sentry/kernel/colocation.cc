#include "sentry/kernel/colocation.h"

#include <dirent.h>

#include <cstdlib>

#include "sentry/kernel/task.h"

namespace sentry {

namespace {

cpu_set_t OneCpu(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return one;
}

}  // namespace

std::optional<cpu_set_t> CoLocation::PinCallerEarly() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) < 0 || CPU_COUNT(&mask) < 2) return std::nullopt;
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask)) return std::nullopt;
  cpu_set_t one = OneCpu(cpu);
  if (sched_setaffinity(0, sizeof(one), &one) < 0) return std::nullopt;
  return mask;
}

std::optional<cpu_set_t> CoLocation::Elsewhere(const std::optional<cpu_set_t>& early) {
  int cpu = sched_getcpu();
  if (!early || cpu < 0 || cpu >= CPU_SETSIZE) return std::nullopt;
  cpu_set_t others = *early;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0) return std::nullopt;
  return others;
}

int CoLocation::Start(pid_t guest_tid, pid_t notifier_tid, const std::optional<cpu_set_t>& early,
                      pid_t init_pid) {
  cpu_set_t mask;
  if (early) {
    mask = *early;
  } else if (sched_getaffinity(guest_tid, sizeof(mask), &mask) < 0) {
    return -1;
  }
  int cpu = sched_getcpu();
  cpu_set_t one = OneCpu(cpu < 0 || cpu >= CPU_SETSIZE ? 0 : cpu);
  if (CPU_COUNT(&mask) < 2 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask) ||
      sched_setaffinity(guest_tid, sizeof(one), &one) < 0) {
    if (early) {  // no pin after all: what PinCallerEarly pinned is unpinned
      original_ = mask;
      whole_sentry_ = true;
      init_ = init_pid;
      cpu_ = 0;
      End();
    }
    return -1;
  }
  original_ = mask;
  cpu_ = cpu;
  pinned_.insert(guest_tid);
  if (sched_setaffinity(notifier_tid, sizeof(one), &one) == 0) notifier_ = notifier_tid;
  whole_sentry_ = early.has_value();
  init_ = init_pid;
  guest_ = guest_tid;
  guest_notifier_ = notifier_tid;
  resumable_ = true;
  return cpu;
}

void CoLocation::Inherit(pid_t parent_tid, pid_t child_tid) {
  if (IsPinned(parent_tid)) pinned_.insert(child_tid);
}

void CoLocation::End() {
  resumable_ = false;
  Unpin();
}

void CoLocation::Spread() {
  if (following_) {
    // A child of the followed task inherited its pin: only the child is
    // unpinned (a task gone meanwhile fails with ESRCH).
    for (auto it = pinned_.begin(); it != pinned_.end();) {
      if (*it == followed_) {
        ++it;
        continue;
      }
      sched_setaffinity(*it, sizeof(original_), &original_);
      it = pinned_.erase(it);
    }
    return;
  }
  // Only a guest whose start could be pinned (more than one CPU) is
  // followed; `original_` is its mask from then on.
  following_ = cpu_ >= 0 || resumable_;
  End();
}

bool CoLocation::Follow(pid_t tid, int cpu) {
  if (!following_ || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &original_)) return false;
  if (followed_ >= 0 && followed_ != tid) Unfollow();
  cpu_set_t one = OneCpu(cpu);
  if (sched_setaffinity(tid, sizeof(one), &one) < 0) {
    Unfollow();
    return false;
  }
  pinned_.insert(tid);
  followed_ = tid;
  cpu_ = cpu;
  if (notifier_ < 0 && guest_notifier_ >= 0 &&
      sched_setaffinity(guest_notifier_, sizeof(one), &one) == 0) {
    notifier_ = guest_notifier_;
  } else if (notifier_ >= 0) {
    sched_setaffinity(notifier_, sizeof(one), &one);
  }
  return true;
}

void CoLocation::Unfollow(bool gone) {
  if (!following_) return;
  if (gone && followed_ >= 0) pinned_.erase(followed_);
  Unpin();
}

void CoLocation::FollowBusiest(TaskTable& tasks, uint64_t often, int cpu) {
  if (!following_) return;
  pid_t busiest = -1;
  uint64_t most = 0, followed_calls = 0;
  bool followed_here = false;
  tasks.ForEach([&](Task& t) {
    uint64_t calls = t.traps - t.traps_checked;
    t.traps_checked = t.traps;
    if (t.tid == followed_) {
      followed_here = true;
      followed_calls = calls;
    }
    // Not a session's fork child: never the sandbox's (task.h).
    if (!t.own_affinity && !t.fork_child && calls > most) {
      busiest = t.tid;
      most = calls;
    }
  });
  if (followed_ >= 0 && !followed_here) Unfollow(/*gone=*/true);
  if (followed_ >= 0 && followed_calls >= often && most <= 2 * followed_calls) return;
  if (busiest >= 0 && most >= often && Follow(busiest, cpu)) return;
  Unfollow();
}

void CoLocation::FollowIfBusy(Task& t, int cpu) {
  if (!following_ || followed_ >= 0 || t.traps - t.traps_checked < kFollowAtOnce ||
      t.own_affinity || t.fork_child) {
    return;
  }
  Follow(t.tid, cpu);
}

void CoLocation::Pause() {
  // Only a guest still one task, pinned as Start pinned it, is pinned again.
  resumable_ = resumable_ && pinned_.size() == 1 && pinned_.count(guest_);
  Unpin();
}

bool CoLocation::Resume() {
  if (!paused()) return false;
  return Start(guest_, guest_notifier_) >= 0;
}

void CoLocation::Unpin() {
  if (cpu_ < 0) return;
  // A task gone meanwhile fails with ESRCH: nothing to undo.
  for (pid_t tid : pinned_) sched_setaffinity(tid, sizeof(original_), &original_);
  pinned_.clear();
  followed_ = -1;
  if (notifier_ >= 0) sched_setaffinity(notifier_, sizeof(original_), &original_);
  notifier_ = -1;
  if (whole_sentry_) {
    // Every thread of ours (a thread made after this reads its maker's
    // mask, already the original one), and the sandbox's pid 1.
    if (DIR* d = opendir("/proc/self/task")) {
      while (dirent* e = readdir(d)) {
        pid_t tid = static_cast<pid_t>(atoi(e->d_name));
        if (tid > 0) sched_setaffinity(tid, sizeof(original_), &original_);
      }
      closedir(d);
    }
    if (init_ > 0) sched_setaffinity(init_, sizeof(original_), &original_);
    whole_sentry_ = false;
  }
  cpu_ = -1;
}

}  // namespace sentry
