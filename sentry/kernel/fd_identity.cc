#include "sentry/kernel/fd_identity.h"

#include <algorithm>
#include <cerrno>

namespace sentry {

SysStatus FdIdentity::Register(const struct stat& host, OpenObject obj) {
  Key key = KeyOf(host);
  size_t cost = Cost(obj);
  // What registering obj would leave: a new entry, or one replaced in place
  // (a lower file opened again; a number the kernel gave a new object).
  auto fits = [&] {
    auto it = map_.find(key);
    if (it == map_.end()) return map_.size() < kMaxEntries && bytes_ + cost <= kMaxBytes;
    return bytes_ - Cost(it->second) + cost <= kMaxBytes;
  };
  bool fresh = map_.find(key) == map_.end();
  if (!fits()) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_full_sweep_ >= kFullSweepInterval) {
      last_full_sweep_ = now;
      Sweep();
    }
    if (!fits()) return Errno{ENFILE};
  } else if (fresh && map_.size() >= sweep_at_) {
    // Twice what the guest holds: sweeps stay proportional to the opens
    // between them, however many fds the guest keeps.
    sweep_at_ = Sweep() ? std::clamp(2 * map_.size(), kSweepFloor, kMaxEntries) : kMaxEntries;
  }
  auto it = map_.find(key);
  if (it != map_.end()) {
    bytes_ -= Cost(it->second);
    it->second = std::move(obj);
  } else {
    map_.emplace(key, std::move(obj));
  }
  bytes_ += cost;
  return {};
}

const OpenObject* FdIdentity::Find(const struct stat& host) const {
  auto it = map_.find(KeyOf(host));
  return it == map_.end() ? nullptr : &it->second;
}

bool FdIdentity::Sweep() {
  ++sweeps_;
  std::optional<std::vector<Key>> held = held_ ? held_() : std::nullopt;
  if (!held) return false;
  for (auto it = map_.begin(); it != map_.end();) {
    if (std::binary_search(held->begin(), held->end(), it->first)) {
      ++it;
      continue;
    }
    bytes_ -= Cost(it->second);
    it = map_.erase(it);
  }
  return true;
}

}  // namespace sentry
