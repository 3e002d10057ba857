// A warm sandbox (`sentry pool`, the servers' warm pools): a run made up to
// its guest's attach ahead of any request (Run::Warm), then given one
// request (Run::Serve). The rest of a run's life is run.cc's.
#include "absl/status/status.h"
#include "sentry/run/phase_clock.h"
#include "sentry/run/run.h"
#include "sentry/run/run_internal.h"
#include "sentry/run/stdio.h"

namespace sentry {
namespace run_internal {

std::optional<RunError> Run::Warm() {
  if (auto e = Prepare()) return e;
  if (auto e = BuildSandbox()) return e;
  return AttachGuest();
}

int Run::Serve(const RunOptions& request, int peer_fd) {
  if (python_) return ServePython(request, peer_fd);
  o_ = request;  // of the sandbox's shape (pool::TakeShape)
  peer_fd_ = client_fd_ = peer_fd;
  start_ms_ = MonotonicMs();
  clock_ = PhaseClock(start_ms_);
  cgroups_.SetLimits({o_.memory_bytes, o_.pids, o_.cpus, o_.cpu_period_us, o_.cpu_shares});
  cpu_share_.Restart(o_.cpus);  // the run's share, counted from here
  if (absl::Status s = stdio_.Configure(GuestStdio::OptionsFor(o_)); !s.ok()) {
    return Conclude(RunError{kExitSentryError, std::string(s.message())});
  }
  if (auto e = Admit()) return Conclude(e);
  if (auto e = LaunchGuest()) return Conclude(e);
  Supervise();
  return Conclude(std::nullopt);
}

}  // namespace run_internal

using run_internal::Run;

struct WarmSandbox::Impl {
  explicit Impl(const RunOptions& shape) : run(shape, /*warm=*/true) {}
  Run run;
};

std::unique_ptr<WarmSandbox> WarmSandbox::Make(const RunOptions& shape, std::string* error) {
  auto w = std::unique_ptr<WarmSandbox>(new WarmSandbox());
  w->impl_ = std::make_unique<Impl>(shape);
  if (auto e = w->impl_->run.Warm()) {
    *error = e->message;
    w->impl_->run.Abandon();
    return nullptr;
  }
  return w;
}

WarmSandbox::~WarmSandbox() = default;

void WarmSandbox::Abandon() { impl_->run.Abandon(); }

std::unique_ptr<WarmSandbox> WarmSandbox::MakePython(const RunOptions& shape,
                                                     const std::vector<std::string>& preload,
                                                     std::string* error) {
  auto w = std::unique_ptr<WarmSandbox>(new WarmSandbox());
  w->impl_ = std::make_unique<Impl>(shape);
  if (auto e = w->impl_->run.WarmPython(preload)) {
    *error = e->message;
    w->impl_->run.Abandon();
    return nullptr;
  }
  return w;
}

bool WarmSandbox::python() const { return impl_->run.python(); }

bool WarmSandbox::IdleUntilReadable(int fd) { return impl_->run.IdleUntilReadable(fd, -1); }

void WarmSandbox::Prioritize() { impl_->run.Prioritize(); }

int WarmSandbox::Serve(const RunOptions& request, int peer_fd) {
  return impl_->run.Serve(request, peer_fd);
}

}  // namespace sentry
