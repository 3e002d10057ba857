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
#include <memory>
#include <optional>
#include <utility>

namespace sentry {

class PlacedThread final {
 public:
  PlacedThread() = default;
  // Runs fn on `cpus` (nullopt: where its maker may run), named `name` (at
  // most 15 characters, for top -H and perf).
  PlacedThread(const std::optional<cpu_set_t>& cpus, std::function<void()> fn, const char* name)
      : start_(std::make_unique<Start>(Start{std::move(fn), name})) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (cpus) pthread_attr_setaffinity_np(&attr, sizeof(*cpus), &*cpus);
    running_ = pthread_create(&thread_, &attr, &PlacedThread::Main, start_.get()) == 0;
    pthread_attr_destroy(&attr);
  }
  PlacedThread(PlacedThread&& o) noexcept { *this = std::move(o); }
  PlacedThread& operator=(PlacedThread&& o) noexcept {
    if (this != &o) {
      Join();
      start_ = std::move(o.start_);
      thread_ = o.thread_;
      running_ = std::exchange(o.running_, false);
    }
    return *this;
  }
  PlacedThread(const PlacedThread&) = delete;
  PlacedThread& operator=(const PlacedThread&) = delete;
  ~PlacedThread() { Join(); }

  void Join() {
    if (running_) pthread_join(thread_, nullptr);
    running_ = false;
  }

 private:
  struct Start {
    std::function<void()> fn;
    const char* name;
  };
  static void* Main(void* arg) {
    auto* s = static_cast<Start*>(arg);
    pthread_setname_np(pthread_self(), s->name);
    s->fn();
    return nullptr;
  }

  std::unique_ptr<Start> start_;  // stays put while the thread reads it
  pthread_t thread_{};
  bool running_ = false;
};

}  // namespace sentry

#endif  // SENTRY_BASE_PLACED_THREAD_H_
