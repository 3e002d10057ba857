// CpuShare: the sentry's CPU spent answering one sandbox's trapped calls, and
// the budget that bounds it.
//
// The sentry runs outside the guest's cgroup, so --cpus caps the guest's own
// CPU and not the work its calls make the sentry do: a guest at --cpus 0.05
// whose threads only wait in trapped calls would otherwise get a whole CPU of
// the sentry's (issue 23). Each notification thread measures its own thread
// CPU time per call and charges it here; a token bucket refills at
// kMultiple x the sandbox's share (--cpus; kDefaultShare without) and holds
// at most kBurst. While the bucket is in debt, the sandbox's notification
// threads wait (asleep, not spinning) before they take its next call: the
// guest's trapped calls are answered later, nothing else is held up (every
// sandbox has its own threads; the event loop and the fibers are not these).
//
// The bound, over any interval T of a run: the sentry's CPU on the sandbox's
// trapped calls <= kBurst + kMultiple x share x T + the cost of one call (the
// call that put the bucket in debt; the debt is then paid back in full) +
// 1 ms of answering and 64 receives (a loop reads its CPU clock, a syscall,
// once it has spent 1 ms answering calls or answered 64, rather than per
// call: NotifyLoop::Run's kChargeEveryNs and kChargeEveryCalls).
//
// Thread-safe (the loops of a sandbox's exec'd processes share one).
#ifndef SENTRY_KERNEL_CPU_SHARE_H_
#define SENTRY_KERNEL_CPU_SHARE_H_

#include <cstdint>
#include <mutex>

namespace sentry {

class CpuShare final {
 public:
  static constexpr double kMultiple = 2.0;
  // A sandbox without --cpus: one CPU (the most one notification thread can
  // use, so it binds only the sum of several loops).
  static constexpr double kDefaultShare = 1.0;
  // What a run may spend before the rate binds: a cold python3 start costs
  // the sentry about 6 ms of trapped calls, the conformance suite 0.26 s.
  static constexpr uint64_t kBurstNs = 100'000'000;

  CpuShare() = default;
  CpuShare(const CpuShare&) = delete;
  CpuShare& operator=(const CpuShare&) = delete;

  // The sandbox's share in CPUs (--cpus); 0 or less: kDefaultShare. A warm
  // sandbox learns it with its command.
  void set_share(double cpus);
  // A warm sandbox's run: its share, a full budget and counts from zero.
  void Restart(double cpus);
  // Charges cpu_ns spent now on the sandbox's calls.
  void Charge(uint64_t cpu_ns);
  // How long to wait before the next call (0: none): until the debt is paid.
  uint64_t WaitNs();
  // Counts time spent waiting (by the thread that waited).
  void AddThrottled(uint64_t ns);

  uint64_t spent_ns() const;
  uint64_t throttled_ns() const;

 private:
  void Refill(uint64_t now_ns);  // under mu_

  mutable std::mutex mu_;
  double rate_ = kMultiple * kDefaultShare;  // ns of CPU per ns of wall
  int64_t tokens_ns_ = kBurstNs;
  uint64_t last_ns_ = 0;  // monotonic time of the last refill (0: none yet)
  uint64_t spent_ns_ = 0;
  uint64_t throttled_ns_ = 0;
};

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in ns.
uint64_t ThreadCpuNs();

}  // namespace sentry

#endif  // SENTRY_KERNEL_CPU_SHARE_H_
