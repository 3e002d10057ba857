#include "sentry/session/fork_spares.h"

#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sentry/base/log.h"

namespace sentry::session {

using Clock = std::chrono::steady_clock;
constexpr auto kRefillDelay = std::chrono::milliseconds(200);

bool SameSpec(const SandboxSpec& a, const SandboxSpec& b) {
  return a.argv == b.argv && a.memory_bytes == b.memory_bytes && a.pids == b.pids &&
         a.disk_bytes == b.disk_bytes && a.nofile == b.nofile && a.cpus == b.cpus &&
         a.timeout_sec == b.timeout_sec && a.network_none == b.network_none && a.allow == b.allow &&
         a.env == b.env;
}

absl::StatusOr<ForkSpares::Spare> ForkSpares::Launch(SandboxLauncher& launcher,
                                                     const SandboxSpec& spec) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    return absl::InternalError("socketpair for a fork's hand-off");
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  SandboxSpec adopting = spec;
  adopting.adopt_fd = theirs.get();
  auto launched = Session::Launch(launcher, adopting);
  if (!launched.ok()) return launched.status();
  return Spare{std::move(*launched), std::move(ours), Clock::now()};
}

ForkSpares::ForkSpares(SandboxLauncher& launcher, SandboxSpec spec, int target)
    : launcher_(launcher), spec_(std::move(spec)), target_(std::max(target, 0)) {}

ForkSpares::~ForkSpares() { Shutdown(); }

std::vector<ForkSpares::Spare> ForkSpares::Take(const SandboxSpec& spec, int n) {
  std::vector<Spare> out;
  if (!SameSpec(spec, spec_)) return out;
  std::lock_guard<std::mutex> lock(mu_);
  while (static_cast<int>(out.size()) < n && !ready_.empty()) {
    Spare s = std::move(ready_.front());
    ready_.pop_front();
    if (!s.session->ended()) out.push_back(std::move(s));
  }
  return out;
}

void ForkSpares::Refill() {
  std::lock_guard<std::mutex> lock(mu_);
  if (target_ == 0 || stopping_) return;
  filling_ = true;
  if (!started_) {
    started_ = true;
    refill_ = std::thread([this] { RefillLoop(); });
  }
  cv_.notify_all();
}

size_t ForkSpares::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size();
}

void ForkSpares::DropStale(std::vector<std::shared_ptr<Session>>* ended) {
  auto now = Clock::now();
  for (auto it = ready_.begin(); it != ready_.end();) {
    if (it->session->ended() ||
        std::chrono::duration<double>(now - it->made).count() > kMaxAgeSec) {
      it->session->End(EndReason::kShutdown);
      ended->push_back(std::move(it->session));
      it = ready_.erase(it);
    } else {
      ++it;
    }
  }
}

void ForkSpares::RefillLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  int failures = 0;
  while (!stopping_) {
    std::vector<std::shared_ptr<Session>> ended;
    DropStale(&ended);
    if (!ended.empty()) {
      filling_ = true;
      lock.unlock();
      for (const auto& s : ended) s->WaitGone(30);
      ended.clear();  // (each Session joins its reader here)
      lock.lock();
      continue;
    }
    if (static_cast<int>(ready_.size()) >= target_) filling_ = false;
    if (!filling_) {
      // Only when asked (never in the middle of a fork, whose children's
      // set-up a spare's would slow); looked at again every second: a
      // spare's age, its supervisor's death.
      cv_.wait_for(lock, std::chrono::seconds(1));
      continue;
    }
    // A moment after the fork's answer, not at once: the first cells of its
    // children come then, and a spare's set-up would compete with them.
    if (cv_.wait_for(lock, kRefillDelay, [&] { return stopping_; })) break;
    lock.unlock();
    auto spare = Launch(launcher_, spec_);
    lock.lock();
    if (spare.ok()) {
      failures = 0;
      ready_.push_back(std::move(*spare));
      continue;  // (ended at Shutdown if it came meanwhile)
    }
    if (failures++ == 0) {
      log::Warn(
          absl::StrCat("a fork's spare supervisor could not start: ", spare.status().message()));
    }
    cv_.wait_for(lock, std::chrono::seconds(std::min(failures, 10)), [&] { return stopping_; });
  }
}

void ForkSpares::Shutdown() {
  std::deque<Spare> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (refill_.joinable()) refill_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(ready_);
  }
  // Its hand-off socket closed and SIGTERM: a supervisor waiting for a
  // child exits at once, with no child and no cgroup left.
  for (Spare& s : all) {
    s.handoff.Reset();
    s.session->End(EndReason::kShutdown);
  }
  for (Spare& s : all) s.session->WaitGone(30);
}

}  // namespace sentry::session
