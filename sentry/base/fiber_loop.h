// FiberLoop: the sentry's waiting work, as fibers on one thread's epoll loop.
//
// Some trapped calls must wait on something other than the sentry: a connect
// to a unix listener whose backlog is full, a send to a full socket, a
// connection out of the sandbox, a DNS answer, an HTTP exchange through the
// credentials proxy. The notify loop must never wait (it answers every other
// call of the sandbox), so that work runs elsewhere. A thread each cost ~8 MiB
// of address space and a kernel task, so the sentry capped them at 64 and then
// answered EAGAIN: a limit the guest could not see coming. A fiber costs the
// pages its stack touches (a few KiB), so thousands of guest threads can each
// wait in a trapped call at once for one sentry thread.
//
// Code on a fiber waits with WaitPoll (poll(2)'s contract), which suspends the
// fiber until the loop's epoll sees the fds ready or the timeout passes. The
// same code run on an ordinary thread gets poll(2) itself, so a waiting
// routine need not know where it runs. Anything else that blocks (a mutex held
// long, a blocking syscall) would stall every fiber: fibers only poll.
#ifndef SENTRY_BASE_FIBER_LOOP_H_
#define SENTRY_BASE_FIBER_LOOP_H_

#include <poll.h>

#include <functional>

namespace sentry {

class FiberLoop {
 public:
  // Fibers alive at once, across every sandbox of this process. Each holds at
  // most kStackBytes of address space (touched pages only in memory).
  static constexpr int kMaxFibers = 4096;
  static constexpr size_t kStackBytes = 256 << 10;

  // The process's loop, its thread started on first use (and again in a child
  // after fork, where the parent's thread does not exist).
  static FiberLoop& Shared();

  // Runs body on a fiber of the loop, soon, with no lock held. False (and
  // body not run) when kMaxFibers are alive. body must own what it uses.
  bool Spawn(std::function<void()> body);

  // Fibers alive now (for tests and the bench).
  int live() const;

  struct Impl;

 private:
  explicit FiberLoop(Impl* impl) : impl_(impl) {}
  Impl* impl_;
};

// poll(2), for code that may run on a fiber: on one it suspends only that
// fiber; elsewhere it is poll(2) itself. Returns what poll would: the ready
// count with revents set, 0 on timeout, -1 with errno.
int WaitPoll(pollfd* fds, nfds_t n, int timeout_ms);

// Sleeps ms milliseconds (suspending only the fiber, on one).
void WaitMs(int ms);

// Whether the caller runs on a fiber of the loop.
bool OnFiber();

}  // namespace sentry

#endif  // SENTRY_BASE_FIBER_LOOP_H_
