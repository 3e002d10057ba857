// NotifyLoop: the thread that answers every trapped syscall.
//
// It blocks in SECCOMP_IOCTL_NOTIF_RECV itself (not in epoll) so the kernel's
// synchronous wake-up hands it the guest's CPU. Each notification is answered
// under the kernel mutex; guest memory goes through a backend that checks the
// notification is still valid before every write and after every read (a
// stat-like call's reads: by the write's check; see notify_loop.cc), so
// nothing read from or written to a recycled pid is ever used.
#ifndef SENTRY_PLATFORM_NOTIFY_LOOP_H_
#define SENTRY_PLATFORM_NOTIFY_LOOP_H_

#include <linux/filter.h>
#include <pthread.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "sentry/kernel/cpu_share.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/syscall_event.h"
#include "sentry/platform/unotify.h"
#include "sentry/trace/trace_writer.h"

namespace sentry {

class NotifyLoop final {
 public:
  // The loop thread answers with fsuid/fsgid fs_id (see base/fs_identity.h).
  NotifyLoop(Kernel& kernel, Unotify& unotify, Dispatcher& dispatcher, uid_t fs_id)
      : kernel_(kernel), unotify_(unotify), dispatcher_(dispatcher), fs_id_(fs_id) {}
  NotifyLoop(const NotifyLoop&) = delete;
  NotifyLoop& operator=(const NotifyLoop&) = delete;
  ~NotifyLoop() { Stop(); }

  // Every answered call is reported to observer (before Start).
  void set_observer(std::shared_ptr<SyscallObserver> observer) { observer_ = std::move(observer); }
  // Census mode (loader/census_filter.h): the guest's filter is the census
  // filter, and `ordinary` (the filter it was made from) decides how each
  // notification is answered. Before Start.
  void set_census(std::vector<sock_filter> ordinary) { ordinary_ = std::move(ordinary); }
  // Census mode with --trace: the calls answered from the ordinary filter's
  // verdict alone (native, refused by the table), which no handler traces,
  // are printed too (see TraceVerdict). At any time: the loader's own calls
  // may be under way.
  void set_trace(std::shared_ptr<trace::TraceWriter> trace);
  // Charges each call's CPU to the sandbox's share, and waits while it is
  // spent (kernel/cpu_share.h). Before Start; share outlives the loop.
  void set_cpu_share(CpuShare* share) { share_ = share; }

  void Start();
  // Interrupts the blocking receive and joins the thread.
  void Stop();
  uint64_t handled() const { return handled_.load(); }
  // The thread has ended (stopped, or no task is left under the filter).
  bool done() const { return done_.load(); }
  // The loop thread's tid (known once Start returns).
  pid_t tid() const { return tid_.load(); }
  // The CPU it answered its last call on while the guest was followed
  // (CoLocation::following; -1 before).
  int cpu() const { return cpu_.load(std::memory_order_relaxed); }
  // The copy of the listener the calls answered late share (after Stop):
  // the listener's file is closed once this and the Unotify are gone.
  std::weak_ptr<Unotify> late_listener() const { return late_unotify_; }

 private:
  void Run();
  void HandleOne(const struct seccomp_notif& req);
  // Census mode: answers what the ordinary filter would not have sent here;
  // false for a call to dispatch.
  bool AnswerAsOrdinary(const struct seccomp_notif& req, uint64_t start_ns);
  // The trace line of a call answered by the filter's verdict: a native one
  // (err 0) or one refused with err.
  void TraceVerdict(const struct seccomp_notif& req, int err);
  void Report(const struct seccomp_notif& req, EventAction action, bool known, int64_t value,
              uint64_t start_ns);

  Kernel& kernel_;
  Unotify& unotify_;
  Dispatcher& dispatcher_;
  uid_t fs_id_;
  std::shared_ptr<SyscallObserver> observer_;
  CpuShare* share_ = nullptr;
  std::vector<sock_filter> ordinary_;
  std::shared_ptr<trace::TraceWriter> trace_;  // under kernel_.mu()
  std::atomic<bool> tracing_{false};           // trace_ is set: worth the lock
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> handled_{0};
  std::atomic<bool> done_{false};
  std::atomic<bool> waiting_{false};  // in the receive or the share's sleep: Stop may signal
  std::atomic<pid_t> tid_{0};
  std::atomic<int> cpu_{-1};
  pid_t self_pid_ = 0;  // the sentry's pid, for kcmp (NotifFds::SameFile)
  // A duplicate of the listener shared by the calls answered late: they may
  // outlive this loop.
  std::shared_ptr<Unotify> late_unotify_;
};

}  // namespace sentry

#endif  // SENTRY_PLATFORM_NOTIFY_LOOP_H_
