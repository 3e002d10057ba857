#include "sentry/base/fiber_loop.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define SENTRY_FIBER_ASAN 1
#endif

namespace sentry {
namespace {

namespace ctx = boost::context;
using Clock = std::chrono::steady_clock;

// One fiber: its body, its suspended context, and what it waits for.
struct Fiber {
  std::function<void()> body;
  ctx::fiber self;  // the suspended fiber (held by the loop while it waits)
  ctx::fiber sink;  // the loop's context (held by the fiber while it runs)
  bool done = false;
  bool ready = false;  // woken (an fd event or its deadline), not yet resumed
  std::multimap<Clock::time_point, Fiber*>::iterator timer;
  bool has_timer = false;
  void* stack_bottom = nullptr;  // its stack, for ASan's notes of each switch
  size_t stack_size = 0;
#ifdef SENTRY_FIBER_ASAN
  const void* loop_stack = nullptr;  // the loop thread's stack
  size_t loop_stack_size = 0;
#endif
};

// A guarded stack that tells its fiber where it lies.
struct NotedStack {
  ctx::protected_fixedsize_stack inner;
  Fiber* f;
  ctx::stack_context allocate() {
    ctx::stack_context sc = inner.allocate();
    f->stack_bottom = static_cast<char*>(sc.sp) - sc.size;
    f->stack_size = sc.size;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept { inner.deallocate(sc); }
};

// The fiber running now on this thread (only the loop's thread has one).
thread_local Fiber* tl_current = nullptr;

}  // namespace

struct FiberLoop::Impl {
  int epoll_fd = -1;
  int wake_fd = -1;  // an eventfd: new bodies are queued
  std::mutex mu;
  std::deque<std::function<void()>> queued;  // under mu
  std::atomic<int> live{0};
  // Loop thread only:
  std::multimap<Clock::time_point, Fiber*> timers;
  std::vector<Fiber*> ready;

  void Run();
  void Start(std::function<void()> body);
  void Resume(Fiber* f);
  void Wake(Fiber* f) {
    if (f->ready) return;
    f->ready = true;
    ready.push_back(f);
  }
};

namespace {

// Switches from the fiber back to the loop (its caller).
void SuspendCurrent() {
  Fiber* f = tl_current;
#ifdef SENTRY_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->loop_stack, f->loop_stack_size);
#endif
  f->sink = std::move(f->sink).resume();
#ifdef SENTRY_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, &f->loop_stack, &f->loop_stack_size);
#endif
  tl_current = f;
}

FiberLoop::Impl* g_impl = nullptr;  // the loop of this process (see Shared)
pid_t g_owner = 0;
std::mutex g_shared_mu;

}  // namespace

void FiberLoop::Impl::Start(std::function<void()> body) {
  auto* f = new Fiber;
  f->body = std::move(body);
  f->self =
      ctx::fiber(std::allocator_arg, NotedStack{ctx::protected_fixedsize_stack(kStackBytes), f},
                 [f](ctx::fiber&& sink) {
                   f->sink = std::move(sink);
#ifdef SENTRY_FIBER_ASAN
                   __sanitizer_finish_switch_fiber(nullptr, &f->loop_stack, &f->loop_stack_size);
#endif
                   tl_current = f;
                   f->body();
                   f->body = nullptr;  // what it owned goes while the fiber still runs
                   f->done = true;
#ifdef SENTRY_FIBER_ASAN
                   __sanitizer_start_switch_fiber(nullptr, f->loop_stack, f->loop_stack_size);
#endif
                   return std::move(f->sink);
                 });
  Resume(f);
}

void FiberLoop::Impl::Resume(Fiber* f) {
  f->ready = false;
#ifdef SENTRY_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->stack_bottom, f->stack_size);
#endif
  f->self = std::move(f->self).resume();
#ifdef SENTRY_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  tl_current = nullptr;
  if (f->done) {
    delete f;
    live.fetch_sub(1);
  }
}

void FiberLoop::Impl::Run() {
  pthread_setname_np(pthread_self(), "sentry-fibers");
  epoll_event events[64];
  while (true) {
    int timeout = -1;
    if (!timers.empty()) {
      auto wait = timers.begin()->first - Clock::now();
      timeout = static_cast<int>(
          std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
    }
    int n = epoll_wait(epoll_fd, events, 64, ready.empty() ? timeout : 0);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        uint64_t count;
        (void)!read(wake_fd, &count, sizeof(count));
        std::deque<std::function<void()>> bodies;
        {
          std::lock_guard<std::mutex> lock(mu);
          bodies.swap(queued);
        }
        for (auto& body : bodies) Start(std::move(body));
        continue;
      }
      Wake(static_cast<Fiber*>(events[i].data.ptr));
    }
    auto now = Clock::now();
    while (!timers.empty() && timers.begin()->first <= now) {
      Fiber* f = timers.begin()->second;
      timers.erase(timers.begin());
      f->has_timer = false;
      Wake(f);
    }
    std::vector<Fiber*> batch;
    batch.swap(ready);
    for (Fiber* f : batch) Resume(f);
  }
}

FiberLoop& FiberLoop::Shared() {
  std::lock_guard<std::mutex> lock(g_shared_mu);
  static FiberLoop* loop = nullptr;
  if (!loop || g_owner != getpid()) {
    // A child after fork has the parent's memory but not its thread: it
    // starts a loop of its own (the old one's memory is left as it is).
    auto* impl = new Impl;
    impl->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    impl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, impl->wake_fd, &ev);
    std::thread([impl] { impl->Run(); }).detach();
    g_impl = impl;
    g_owner = getpid();
    loop = new FiberLoop(impl);
  }
  return *loop;
}

bool FiberLoop::Spawn(std::function<void()> body) {
  if (impl_->live.fetch_add(1) >= kMaxFibers) {
    impl_->live.fetch_sub(1);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->queued.push_back(std::move(body));
  }
  uint64_t one = 1;
  (void)!write(impl_->wake_fd, &one, sizeof(one));
  return true;
}

int FiberLoop::live() const { return impl_->live.load(); }

bool OnFiber() { return tl_current != nullptr; }

int WaitPoll(pollfd* fds, nfds_t n, int timeout_ms) {
  Fiber* f = tl_current;
  if (!f) return poll(fds, n, timeout_ms);
  FiberLoop::Impl* loop = g_impl;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int r = poll(fds, n, 0);
    if (r != 0 || timeout_ms == 0) return r;
    if (timeout_ms > 0 && Clock::now() >= deadline) return 0;
    // Registered under the fd's own number; a number another fiber waits on
    // already (EEXIST) is registered through a duplicate of it.
    std::vector<int> added, dups;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].fd < 0) continue;
      epoll_event ev{};
      ev.events = static_cast<uint32_t>(fds[i].events);
      ev.data.ptr = f;
      int fd = fds[i].fd;
      if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        if (errno != EEXIST) continue;
        fd = fcntl(fds[i].fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 || epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
          if (fd >= 0) close(fd);
          continue;
        }
        dups.push_back(fd);
      }
      added.push_back(fd);
    }
    // An fd epoll cannot watch is looked at again every few ms.
    auto wake_by = timeout_ms < 0 ? Clock::time_point::max() : deadline;
    if (added.size() < n) wake_by = std::min(wake_by, Clock::now() + std::chrono::milliseconds(5));
    if (wake_by != Clock::time_point::max()) {
      f->timer = loop->timers.emplace(wake_by, f);
      f->has_timer = true;
    }
    SuspendCurrent();
    if (f->has_timer) {
      loop->timers.erase(f->timer);
      f->has_timer = false;
    }
    for (int fd : added) epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    for (int fd : dups) close(fd);
  }
}

void WaitMs(int ms) {
  if (ms <= 0) return;
  if (!tl_current) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < deadline) WaitPoll(nullptr, 0, ms);
}

}  // namespace sentry
