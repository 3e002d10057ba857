// CoLocation: the guest and the sentry's notification thread on one CPU
// while the guest traps often.
//
// A trapped syscall is a hand-off: the guest sleeps, the notification thread
// answers, the guest wakes. With the synchronous wake-up both run on the
// guest's CPU, but some answers wake the guest from elsewhere (an fd
// donation's ADDFD wakes it with an ordinary wake-up), and the scheduler then
// puts it on the other, idle CPU; on a VM, waking an idle vCPU costs tens of
// microseconds. Measured here, `python3 -c pass` (150 traps in 40 ms) runs
// 5-6 ms faster with the guest and the notification thread on one CPU.
//
// So a run starts with both pinned to the CPU the sentry is on, and unpins
// (back to the mask the guest would have had) as soon as pinning could cost
// more than it saves: when the guest makes a second task (it may want more
// CPUs), and for a while when it traps rarely (it computes: it may run on
// any CPU), until it traps often again.
//
// A guest of several tasks is then followed (Spread, Follow): the one task
// that traps most, while it traps often, shares a CPU with the notification
// thread, and every other task runs on any CPU. Such a guest is most often a
// pipeline or a build (find | sort, sh running grep, gcc running cc1 and
// as) whose one busy task would otherwise wake the notification thread on
// the other CPU at every call (an fd donation's ADDFD): measured here, the
// corpus's shell pipeline (find | sort, grep -r) ran 388 ms unfollowed and
// 282 ms followed, medians of 94 interleaved rounds while the machine was
// otherwise idle (bench/README.md, "Following the busiest task"). At most
// one task is followed at a time, so a guest that computes on every CPU
// loses at most one task's choice of CPU, and only while that task traps
// often.
//
// The guest never sees the pin: sched_getaffinity shows the unpinned mask,
// and a task whose affinity the guest sets itself is left alone from then
// on (Release; Task::own_affinity).
#ifndef SENTRY_KERNEL_COLOCATION_H_
#define SENTRY_KERNEL_COLOCATION_H_

#include <sched.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>

namespace sentry {

class TaskTable;
struct Task;

class CoLocation final {
 public:
  // A cold run pins its whole self (this thread, so every thread and process
  // it makes from here) to the CPU it is on, before it makes the sandbox:
  // on this VM work on the other vCPU slows this one (measured: the VFS
  // tree 1.5 ms unpinned, 0.6 ms pinned). Returns the mask to come back to,
  // or nullopt (one CPU only: nothing pinned).
  static std::optional<cpu_set_t> PinCallerEarly();
  // The CPUs of `early` but the caller's: where work that runs beside the
  // pinned one goes (the loader building its mount view, the directory-token
  // maker). Given the whole mask instead, the scheduler wakes such a task on
  // its waker's CPU, where it waits for the pinned thread. nullopt if none.
  static std::optional<cpu_set_t> Elsewhere(const std::optional<cpu_set_t>& early);

  // Pins guest_tid and the notification thread to the calling thread's CPU,
  // if the sentry may use more than one. early: what PinCallerEarly returned
  // (then every sentry thread and the loader, init_pid, are pinned too, and
  // End unpins them). Returns the CPU, or -1 (no pin).
  int Start(pid_t guest_tid, pid_t notifier_tid, const std::optional<cpu_set_t>& early = {},
            pid_t init_pid = -1);
  // Unpins every task still pinned, and the notification thread, for good.
  // Idempotent.
  void End();
  // Unpins the same way while the guest computes; Resume pins its one task
  // and the notification thread again (to the calling thread's CPU), unless
  // it has made another task or set its own affinity meanwhile. Measured,
  // openat+close of a lower file in a loop: 17 µs pinned, 53 µs unpinned.
  void Pause();
  bool Resume();  // whether it pinned
  bool active() const { return cpu_ >= 0; }
  bool paused() const { return resumable_ && !active(); }

  // A task the guest made: it inherited the pin (or the guest's own mask).
  void Inherit(pid_t parent_tid, pid_t child_tid);
  // The guest has several tasks: every pinned one is unpinned (as End) and,
  // if a pin was possible at all, the guest is followed from now on.
  void Spread();
  bool following() const { return following_; }
  // Following: pins tid and the notification thread to cpu (the followed
  // task before, if another, is unpinned). False if it could not (nothing
  // is pinned then).
  bool Follow(pid_t tid, int cpu);
  // Following: the followed task and the notification thread unpinned;
  // gone: the task has left (it is not touched again).
  void Unfollow(bool gone = false);
  pid_t followed() const { return followed_; }
  // Following, at each check: of the tasks' calls answered since the last
  // check (Task::traps), the task with the most, if at least `often`, is
  // followed on `cpu` (the notification thread's); the one followed keeps
  // its pin while it traps often, unless another traps more than twice as
  // much. None trapping often: nothing is pinned.
  void FollowBusiest(TaskTable& tasks, uint64_t often, int cpu);
  // Following with none followed, at each of t's calls: t is followed at
  // once (on `cpu`, the notification thread's) when it has made
  // kFollowAtOnce calls since the last check, not at the next check: a
  // pipeline's busy task may live for less than one.
  void FollowIfBusy(Task& t, int cpu);
  static constexpr uint64_t kFollowAtOnce = 64;
  // The guest set tid's affinity itself: never touched again.
  // (The notification thread's pin for it goes at the next check.)
  void Release(pid_t tid) {
    pinned_.erase(tid);
    if (tid == guest_) resumable_ = false;
    if (tid == followed_) followed_ = -1;
  }
  bool IsPinned(pid_t tid) const { return pinned_.count(tid) > 0; }
  // The mask a pinned task would have had.
  const cpu_set_t& unpinned_mask() const { return original_; }

 private:
  void Unpin();

  int cpu_ = -1;
  pid_t notifier_ = -1;
  pid_t guest_ = -1, guest_notifier_ = -1;  // what Start pinned, for Resume
  bool resumable_ = false;                  // one task, its affinity not its own
  bool following_ = false;                  // several tasks: Follow may pin one
  pid_t followed_ = -1;                     // the one Follow pinned
  bool whole_sentry_ = false;               // PinCallerEarly pinned every thread of ours
  pid_t init_ = -1;
  cpu_set_t original_{};
  std::set<pid_t> pinned_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_COLOCATION_H_
