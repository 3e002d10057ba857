// PlacedThread: a thread that starts on chosen CPUs.
//
// A cold run pins itself to one CPU (see kernel/colocation.h); work that runs
// beside it goes to the others. The CPUs are set before the thread first
// runs: a thread placed afterwards would first run on its maker's CPU, in
// its maker's way. Joined when destroyed.
#ifndef SENTRY_BASE_PLACED_THREAD_H_
#define SENTRY_BASE_PLACED_THREAD_H_

#include <pthread.h>
#include <sched.h>

#include <functional>
#include <optional>
#include <utility>

namespace sentry {

class PlacedThread final {
 public:
  // Runs fn on `cpus` (nullopt: where its maker may run), named `name` (at
  // most 15 characters, for top -H and perf). Should no thread be made, fn
  // does not run.
  PlacedThread(const std::optional<cpu_set_t>& cpus, std::function<void()> fn, const char* name)
      : fn_(std::move(fn)), name_(name) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (cpus) pthread_attr_setaffinity_np(&attr, sizeof(*cpus), &*cpus);
    running_ = pthread_create(&thread_, &attr, &PlacedThread::Main, this) == 0;
    pthread_attr_destroy(&attr);
  }
  PlacedThread(const PlacedThread&) = delete;
  PlacedThread& operator=(const PlacedThread&) = delete;
  ~PlacedThread() { Join(); }

  void Join() {
    if (running_) pthread_join(thread_, nullptr);
    running_ = false;
  }

 private:
  static void* Main(void* self) {
    auto* t = static_cast<PlacedThread*>(self);
    pthread_setname_np(pthread_self(), t->name_);
    t->fn_();
    return nullptr;
  }

  std::function<void()> fn_;
  const char* name_;
  pthread_t thread_{};
  bool running_ = false;
};

}  // namespace sentry

#endif  // SENTRY_BASE_PLACED_THREAD_H_
