#include "sentry/platform/notify_loop.h"

#include <linux/kcmp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "loader/census_filter.h"
#include "sentry/base/fiber_loop.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/log.h"

namespace sentry {
namespace {

constexpr int kWakeSignal = SIGURG;
// How much time answering calls (from a receive's return to the reply), and
// how many calls, may pass before the sandbox's CPU share is charged for them
// (see NotifyLoop::Run, kernel/cpu_share.h).
constexpr uint64_t kChargeEveryNs = 1'000'000;
constexpr uint32_t kChargeEveryCalls = 64;

void NoopHandler(int) {}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

SyscallEvent EventOf(const seccomp_notif& req, EventAction action, bool known, int64_t value,
                     uint64_t start_ns) {
  SyscallEvent e;
  e.tid = static_cast<pid_t>(req.pid);
  e.nr = req.data.nr;
  for (int i = 0; i < 6; ++i) e.args[i] = req.data.args[i];
  e.action = action;
  e.result_known = known;
  e.value = value;
  e.duration_ns = NowNs() - start_ns;
  return e;
}

// Guest memory of the notifying task, valid only while the notification is.
//
// process_vm_readv/writev name the task by its pid, which is the notifying
// task's only while the notification is valid: a task killed in its call
// withdraws the notification, and once reaped its pid may be reused. So a
// read counts only when SECCOMP_IOCTL_NOTIF_ID_VALID says yes after it, and
// a write only when it says yes just before it. Validity is monotonic (an id
// never becomes valid again), so one yes proves every read before it.
//
// Deferred checks (DeferReadChecks, for handlers the dispatcher knows do
// nothing with what they read but resolve it in the sandbox's own tree before
// their first write: stat, access, readlink and kin): a read is not checked at
// once; the write's own check, which every write makes anyway, proves it too,
// and a call with no write needs none, since its reply is refused for a
// withdrawn notification. One ioctl less per such call (0.3-0.4 µs). What a
// withdrawn call's reads may have fetched from another process (a reused pid)
// is then resolved as a path and dropped: nothing is written, nothing is
// replied, nothing is reported (the dispatcher settles first, see Settle), as
// with the check at once, where the bytes are fetched too and dropped.
class NotifMemoryBackend final : public MemoryBackend {
 public:
  NotifMemoryBackend(pid_t pid, Unotify& u, uint64_t id) : inner_(pid), u_(u), id_(id) {}
  ssize_t ReadChunk(uint64_t addr, void* out, size_t len) override {
    ssize_t n = inner_.ReadChunk(addr, out, len);
    if (n <= 0) return n;
    if (defer_) {
      unchecked_ = true;
    } else if (!u_.IdValid(id_)) {
      return -ESRCH;
    }
    return n;
  }
  ssize_t WriteChunk(uint64_t addr, const void* in, size_t len) override {
    if (!u_.IdValid(id_)) return -ESRCH;
    unchecked_ = false;  // every read before this one is proven too
    return inner_.WriteChunk(addr, in, len);
  }
  void DeferReadChecks(bool on) override { defer_ = on; }
  bool Settle() override {
    if (unchecked_) {
      if (!u_.IdValid(id_)) return false;
      unchecked_ = false;
    }
    return true;
  }

 private:
  ProcessMemoryBackend inner_;
  Unotify& u_;
  uint64_t id_;
  bool defer_ = false;
  bool unchecked_ = false;  // a read since the last check
};

class NotifFds final : public GuestFds {
 public:
  NotifFds(Unotify& u, uint64_t id, int pidfd, pid_t tid, pid_t self)
      : u_(u), id_(id), pidfd_(pidfd), tid_(tid), self_(self) {}
  // One syscall. The tid is the notifying task's, blocked in its call while
  // the notification is valid; were it gone and its number reused, the other
  // task's fd would still have to be the sentry's own token to compare equal.
  int SameFile(int guest_fd, int host_fd) override {
    long r = syscall(SYS_kcmp, tid_, self_, KCMP_FILE, guest_fd, host_fd);
    if (r < 0) return -errno;
    return r == 0 ? 0 : 1;
  }
  SysResult<UniqueFd> Get(int guest_fd) override {
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd_, guest_fd, 0));
    if (fd < 0) return Errno{errno == ESRCH ? ESRCH : EBADF};
    return UniqueFd(fd);
  }
  // The fd is installed by one ioctl and the call answered by the ordinary
  // reply. ADDFD_FLAG_SEND would do both in one, but it skips the
  // synchronous wake-up: measured here (bench_unotify, a 2-vCPU EPYC VM),
  // 11.9 µs for ADDFD then SEND against 41.5 µs with FLAG_SEND, and the same
  // 8.5-8.9 µs when the guest and this thread share a CPU. (On an older
  // Xeon VM FLAG_SEND was ahead, 22.9 against 31.8 µs: the worst case is
  // what decides.) Should the guest be interrupted between the two, it keeps
  // an fd it does not know of, as it would had it closed the fd itself.
  SysResult<int> Install(int host_fd, bool cloexec) override {
    int r = u_.AddFd(id_, host_fd, cloexec, /*send=*/false);
    if (r < 0) return Errno{-r};
    return r;
  }

 private:
  Unotify& u_;
  uint64_t id_;
  int pidfd_;
  pid_t tid_;
  pid_t self_;
};

// The late answerer shares a duplicate of the listener: it may outlive the loop.
class OwnedLateAnswer final : public LateAnswer {
 public:
  OwnedLateAnswer(std::shared_ptr<Unotify> u, uint64_t id) : u_(std::move(u)), id_(id) {}
  // Reports the answer as the event of req, timed from start_ns.
  void Observe(std::shared_ptr<SyscallObserver> observer, const seccomp_notif& req,
               uint64_t start_ns) {
    observer_ = std::move(observer);
    req_ = req;
    start_ns_ = start_ns;
    arrival_ = observer_->Arrival(static_cast<pid_t>(req.pid));
  }
  SysStatus InstallAt(int host_fd, int guest_fd, bool cloexec) override {
    int r = u_->AddFdAt(id_, host_fd, guest_fd, cloexec);
    if (r < 0) return Errno{-r};
    return {};
  }
  SysResult<int> Install(int host_fd, bool cloexec) override {
    int r = u_->AddFd(id_, host_fd, cloexec, /*send=*/false);
    if (r < 0) return Errno{-r};
    return r;
  }
  void Answer(SysResult<uint64_t> result) override {
    if (answered_) return;
    answered_ = true;
    // Reported first, while the caller still waits (NotifyLoop::Report).
    if (observer_) {
      int64_t value = result.ok() ? static_cast<int64_t>(*result) : -result.error();
      SyscallEvent event = EventOf(req_, EventAction::kTrap, true, value, start_ns_);
      event.arrival = arrival_;
      observer_->OnSyscall(event);
    }
    if (result.ok()) {
      u_->Respond(id_, static_cast<int64_t>(*result), 0);
    } else {
      u_->Respond(id_, 0, -result.error());  // a negative errno, as the kernel wants
    }
  }
  bool Wanted() override { return !answered_ && u_->IdValid(id_); }
  ~OwnedLateAnswer() override { Answer(Errno{EINTR}); }

 private:
  std::shared_ptr<Unotify> u_;
  uint64_t id_;
  bool answered_ = false;
  std::shared_ptr<SyscallObserver> observer_;
  seccomp_notif req_{};
  uint64_t start_ns_ = 0;
  int64_t arrival_ = 0;
};

// Runs work on a fiber (see base/fiber_loop.h); past FiberLoop::kMaxFibers
// waiting at once, across the process, the call gets EAGAIN.
void RunLate(LateWork work, std::shared_ptr<Unotify> listener, const seccomp_notif& req,
             std::shared_ptr<SyscallObserver> observer, uint64_t start_ns) {
  auto answer = std::make_shared<OwnedLateAnswer>(std::move(listener), req.id);
  if (observer) answer->Observe(std::move(observer), req, start_ns);
  bool started = FiberLoop::Shared().Spawn([work = std::move(work), answer]() mutable {
    work(*answer);
    answer.reset();  // answers EINTR if the work did not
  });
  if (!started) answer->Answer(Errno{EAGAIN});
}

}  // namespace

void NotifyLoop::Start() {
  struct sigaction sa {};
  sa.sa_handler = NoopHandler;  // no SA_RESTART: the blocking receive returns EINTR
  sigaction(kWakeSignal, &sa, nullptr);
  thread_ = std::thread([this] { Run(); });
  while (tid_.load() == 0) sched_yield();  // a few microseconds
}

void NotifyLoop::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  // The thread may be between its check and the blocking receive: keep
  // nudging until it has left.
  while (!done_) {
    // Only while it waits (in its receive or its share's sleep): a signal
    // in a handler's host call would fail that call with EINTR, and the
    // guest's call with it (a fork's re-listen stops the loop mid-run).
    if (waiting_.load()) pthread_kill(thread_.native_handle(), kWakeSignal);
    struct timespec ts {
      0, 50000
    };
    nanosleep(&ts, nullptr);
  }
  thread_.join();
}

void NotifyLoop::Run() {
  pthread_setname_np(pthread_self(), "sentry-notify");  // for top -H, perf, ps
  self_pid_ = getpid();
  tid_ = static_cast<pid_t>(syscall(SYS_gettid));
  if (!DropFsIdentity(fs_id_, fs_id_)) {
    log::Error("cannot take an unprivileged file identity; stopping");
    done_ = true;
    return;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kWakeSignal);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  struct seccomp_notif req;
  uint64_t cpu_ns = share_ ? ThreadCpuNs() : 0;
  // The thread's CPU clock is a real syscall (0.4-0.6 µs here, more than an
  // ID_VALID), the monotonic clock a vDSO read (~25 ns). So the CPU clock is
  // read only once the loop has spent kChargeEveryNs answering calls (timed
  // from each receive's return to its reply, the time the CPU clock can have
  // advanced by besides the receives' own) or answered kChargeEveryCalls
  // since the last reading: the sum charged is the same, the charge comes at
  // most that much work later. Gating on wall time instead read the clock at
  // nearly every call of a real workload, whose calls come tens of µs apart.
  bool batched = kernel_.config().fast_trap;
  uint64_t busy_ns = 0;
  uint32_t calls = 0;
  while (!stop_) {
    // Past the sandbox's share of the sentry's CPU: its next call waits
    // here, still queued in the kernel, until the budget is paid back
    // (kernel/cpu_share.h). Stop's signal ends the sleep.
    if (uint64_t wait_ns = share_ ? share_->WaitNs() : 0) {
      timespec ts{static_cast<time_t>(wait_ns / 1000000000u),
                  static_cast<long>(wait_ns % 1000000000u)};
      uint64_t before = NowNs();
      waiting_.store(true);
      if (!stop_) nanosleep(&ts, nullptr);
      waiting_.store(false);
      share_->AddThrottled(NowNs() - before);
      continue;
    }
    waiting_.store(true);
    int r = stop_ ? -EINTR : unotify_.Receive(&req);
    waiting_.store(false);
    if (r == -EINTR) continue;
    if (r == -ENOENT) {
      // A notification withdrawn (its task was killed or interrupted), or no
      // task left that can notify: the kernel then answers every receive at
      // once with ENOENT and reports POLLHUP. Measured: left spinning, this
      // thread took a CPU from the sandbox's teardown for ~5 ms a run.
      pollfd pfd{unotify_.fd(), POLLIN, 0};
      if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP)) break;
      continue;
    }
    if (r < 0) {
      if (!stop_) log::Error(absl::StrCat("seccomp receive failed: ", -r));
      break;
    }
    uint64_t received_at = share_ && batched ? NowNs() : 0;
    HandleOne(req);
    // Charged per call: the receive and the answer (a blocked receive
    // costs no CPU).
    if (share_) {
      if (batched) {
        busy_ns += NowNs() - received_at;
        ++calls;
      }
      if (!batched || busy_ns >= kChargeEveryNs || calls >= kChargeEveryCalls) {
        uint64_t now = ThreadCpuNs();
        share_->Charge(now - cpu_ns);
        cpu_ns = now;
        busy_ns = 0;
        calls = 0;
      }
    }
  }
  done_ = true;
}

// Called before the answer, while the caller still waits in its call: once
// answered, a thread may end (and the tracer drop its census entry) or mark
// the next phase before a late report would count the call, which then went
// to no phase or the wrong one (docs/syscalls.md's counts changed with load).
void NotifyLoop::Report(const seccomp_notif& req, EventAction action, bool known, int64_t value,
                        uint64_t start_ns) {
  if (observer_) observer_->OnSyscall(EventOf(req, action, known, value, start_ns));
}

bool NotifyLoop::AnswerAsOrdinary(const seccomp_notif& req, uint64_t start_ns) {
  if (req.data.nr == kCensusMarkNr) {
    // Read, then answered by the sentry: never let run.
    NotifMemoryBackend backend(static_cast<pid_t>(req.pid), unotify_, req.id);
    GuestMemory mem(backend);
    auto label = mem.CopyInString(GuestAddr(req.data.args[0]), kMaxCensusLabel);
    if (label.ok() && observer_) observer_->OnMark(static_cast<pid_t>(req.pid), *label);
    unotify_.Respond(req.id, 0, -ENOSYS);
    return true;
  }
  uint32_t verdict = EvalSeccompFilter(ordinary_, req.data);
  switch (verdict & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_USER_NOTIF:
      return false;
    case SECCOMP_RET_ALLOW:
      // Only the registers were read (the filter's own input).
      TraceVerdict(req, 0);
      Report(req, EventAction::kNative, false, 0, start_ns);
      unotify_.RespondContinue(req.id);
      return true;
    case SECCOMP_RET_ERRNO: {
      int err = static_cast<int>(verdict & SECCOMP_RET_DATA);
      TraceVerdict(req, err);
      Report(req, EventAction::kRefused, true, -err, start_ns);
      unotify_.Respond(req.id, 0, -err);
      return true;
    }
    default:
      // TRACE and KILL stay in the census filter and never come here.
      Report(req, EventAction::kRefused, true, -ENOSYS, start_ns);
      unotify_.Respond(req.id, 0, -ENOSYS);
      return true;
  }
}

void NotifyLoop::set_trace(std::shared_ptr<trace::TraceWriter> trace) {
  std::lock_guard<std::mutex> lock(kernel_.mu());
  tracing_ = trace != nullptr;
  trace_ = std::move(trace);
}

// Printed before the answer, so each thread's lines keep their order against
// the tracer's (its exit, its exec, a child's first call). A native call is
// let run with CONTINUE, so the sentry must not read its memory (the kernel
// reads it again after the sentry: what a trace showed need not be what ran):
// it is decoded from its registers alone, pointers as addresses, and its
// result is never seen ("= ?"). A refused call is the sentry's own answer, so
// its memory is decoded as a trapped call's is.
void NotifyLoop::TraceVerdict(const seccomp_notif& req, int err) {
  if (!tracing_.load(std::memory_order_relaxed)) return;  // a census alone: no lock
  std::lock_guard<std::mutex> lock(kernel_.mu());
  if (!trace_) return;
  int nr = req.data.nr;
  // The tracer prints these at the fork event, with the child's pid.
  bool fork = nr == SYS_clone || nr == SYS_clone3 || nr == SYS_fork || nr == SYS_vfork;
  if (err == 0 && fork) return;
  Task* task = kernel_.tasks().Find(static_cast<pid_t>(req.pid));
  // Before the guest's execve, the calls are the loader's (Dispatcher::Trace).
  if (!task || task->process->exe.empty()) return;
  trace::TracedCall call{nr};
  for (int i = 0; i < 6; ++i) call.args[i] = req.data.args[i];
  if (err == 0) {
    trace_->Syscall(task->ns_tid, call, nullptr);
    return;
  }
  call.done = true;
  call.ret = -err;
  NotifMemoryBackend backend(static_cast<pid_t>(req.pid), unotify_, req.id);
  GuestMemory mem(backend);
  trace_->Syscall(task->ns_tid, call, &mem);
}

void NotifyLoop::HandleOne(const struct seccomp_notif& req) {
  uint64_t start_ns = observer_ ? NowNs() : 0;
  if (!ordinary_.empty() && AnswerAsOrdinary(req, start_ns)) {
    handled_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  DispatchResult res;
  LateWork later;
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    Task* task = kernel_.tasks().Find(static_cast<pid_t>(req.pid));
    if (!task) {
      res.value = -ENOSYS;
    } else {
      ++task->traps;
      if (CoLocation& pin = kernel_.colocation(); pin.following()) {
        // The CPU a followed task shares (colocation.h); rseq's, no syscall.
        int cpu = sched_getcpu();
        cpu_.store(cpu, std::memory_order_relaxed);
        if (pin.followed() < 0) pin.FollowIfBusy(*task, cpu);
      }
      kernel_.current = task;
      NotifMemoryBackend backend(static_cast<pid_t>(req.pid), unotify_, req.id);
      GuestMemory mem(backend);
      NotifFds fds(unotify_, req.id, task->pidfd.get(), static_cast<pid_t>(req.pid), self_pid_);
      SyscallContext ctx{kernel_, *task, mem, fds, {}};
      for (int i = 0; i < 6; ++i) ctx.args.raw[i] = req.data.args[i];
      res = dispatcher_.Dispatch(ctx, req.data.nr);
      later = std::move(ctx.later);
      // A census counts the result: proven the caller's first (deferred
      // read checks, see NotifMemoryBackend).
      if (observer_ && !later && !res.let_kernel_run && !mem.Settle()) res.value = -EFAULT;
    }
  }
  handled_.fetch_add(1, std::memory_order_relaxed);
  if (later) {
    if (!late_unotify_) late_unotify_ = std::make_shared<Unotify>(UniqueFd(dup(unotify_.fd())));
    RunLate(std::move(later), late_unotify_, req, observer_, start_ns);
    return;
  }
  Report(req, res.refused ? EventAction::kRefused : EventAction::kTrap, !res.let_kernel_run,
         res.value, start_ns);
  if (res.let_kernel_run) {
    unotify_.RespondContinue(req.id);
  } else if (res.value < 0 && res.value > -4096) {
    unotify_.Respond(req.id, 0, static_cast<int>(res.value));
  } else {
    unotify_.Respond(req.id, res.value, 0);
  }
}

}  // namespace sentry
