#include "vfs/dir_token_stash.h"

#include <utility>

namespace sentry::vfs {

DirTokenStash::DirTokenStash(std::function<SysResult<UniqueFd>()> make,
                             const std::optional<cpu_set_t>& cpus)
    : make_(std::move(make)),
      thread_(
          cpus, [this] { Loop(); }, "sentry-dirtoken") {}

DirTokenStash::~DirTokenStash() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  low_.notify_one();
  thread_.Join();
}

UniqueFd DirTokenStash::Take() {
  UniqueFd token;
  bool refill = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!tokens_.empty()) {
      token = std::move(tokens_.back());
      tokens_.pop_back();
    }
    refill = tokens_.size() < kLow;
  }
  if (refill) low_.notify_one();
  return token;
}

void DirTokenStash::Resume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    resumed_ = true;
  }
  low_.notify_one();
}

void DirTokenStash::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    low_.wait(lock, [this] { return stop_ || (resumed_ && tokens_.size() < kLow); });
    if (stop_) return;
    size_t want = kHigh - tokens_.size();
    lock.unlock();
    std::vector<UniqueFd> made;
    for (size_t i = 0; i < want; ++i) {
      auto token = make_();
      if (!token.ok()) break;  // full, or gone: the guest's own opens say why
      made.push_back(std::move(*token));
    }
    lock.lock();
    if (made.empty()) {
      // Nothing could be made: wait to be asked again rather than spin.
      low_.wait(lock);
      continue;
    }
    for (UniqueFd& t : made) tokens_.push_back(std::move(t));
  }
}

}  // namespace sentry::vfs
