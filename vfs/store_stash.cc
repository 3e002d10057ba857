#include "vfs/store_stash.h"

#include <utility>

namespace sentry::vfs {

StoreStash::StoreStash(Makers makers, const std::optional<cpu_set_t>& cpus)
    : makers_(std::move(makers)),
      thread_(
          cpus, [this] { Loop(); }, "sentry-stash") {}

StoreStash::~StoreStash() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  low_.notify_one();
  thread_.Join();
}

DirToken StoreStash::TakeToken() {
  DirToken token;
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

std::optional<StashFile> StoreStash::TakeFile() {
  std::optional<StashFile> name;
  bool refill = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!files_.empty()) {
      name = std::move(files_.back());
      files_.pop_back();
    }
    refill = makers_.file && files_.size() < kLow;
  }
  if (refill) low_.notify_one();
  return name;
}

void StoreStash::Resume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    resumed_ = true;
  }
  low_.notify_one();
}

bool StoreStash::Defer(std::string name, uint64_t bytes) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!resumed_ || stop_ || !makers_.drop || doomed_bytes_ + bytes > kMaxDeferredBytes) {
      return false;
    }
    wake = doomed_.empty();  // else the thread is already on its way
    doomed_.push_back(std::move(name));
    doomed_bytes_ += bytes;
  }
  if (wake) low_.notify_one();
  return true;
}

void StoreStash::CloseLater(UniqueFd fd) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // (Past 4 x kMaxClosing waiting, a thread that is not getting the CPU:
    // closed here, so the sentry's fds held for it stay bounded.)
    if (!resumed_ || stop_ || closing_.size() >= 4 * kMaxClosing) return;  // fd closes here
    closing_.push_back(std::move(fd));
    wake = closing_.size() == kMaxClosing;
  }
  if (wake) low_.notify_one();
}

bool StoreStash::Low() const {
  return tokens_.size() < kLow || (makers_.file && files_.size() < kLow);
}

void StoreStash::Loop() {
  if (makers_.start) makers_.start();
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    low_.wait(lock, [this] {
      return stop_ || !doomed_.empty() || (resumed_ && Low()) || closing_.size() >= kMaxClosing;
    });
    if (stop_) break;
    if (!closing_.empty()) {
      std::vector<UniqueFd> closing;
      closing.swap(closing_);
      lock.unlock();
      closing.clear();  // the closes
      lock.lock();
      if (stop_) break;
      if (doomed_.empty() && !(resumed_ && Low())) continue;
    }
    if (!doomed_.empty()) {
      std::vector<std::string> doomed;
      doomed.swap(doomed_);
      uint64_t bytes = doomed_bytes_;
      lock.unlock();
      for (const std::string& f : doomed) makers_.drop(f);
      lock.lock();
      doomed_bytes_ -= bytes;  // what came meanwhile still counts
      continue;
    }
    size_t want_tokens = kHigh - tokens_.size();
    size_t want_files = makers_.file ? kHigh - files_.size() : 0;
    lock.unlock();
    std::vector<DirToken> tokens;
    std::vector<StashFile> files;
    for (size_t i = 0; i < want_tokens; ++i) {
      auto token = makers_.token();
      if (!token.ok()) break;  // full, or gone: the guest's own opens say why
      tokens.push_back(std::move(*token));
    }
    for (size_t i = 0; i < want_files; ++i) {
      auto file = makers_.file();
      if (!file.ok()) break;
      files.push_back(std::move(*file));
    }
    lock.lock();
    if (tokens.empty() && files.empty()) {
      // Nothing could be made: wait to be asked again rather than spin.
      low_.wait(lock);
      continue;
    }
    for (DirToken& t : tokens) tokens_.push_back(std::move(t));
    for (StashFile& f : files) files_.push_back(std::move(f));
  }
  // Still holding the identity that made them.
  if (makers_.drop) {
    for (StashFile& f : files_) {
      f.wronly.Reset();
      makers_.drop(f.name);
    }
    for (const std::string& f : doomed_) makers_.drop(f);
  }
  files_.clear();
  doomed_.clear();
}

}  // namespace sentry::vfs
