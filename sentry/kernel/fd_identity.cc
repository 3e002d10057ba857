#include "sentry/kernel/fd_identity.h"

#include <algorithm>
#include <cerrno>

namespace sentry {

SysStatus FdIdentity::Register(const struct stat& host, OpenObject obj) {
  Key key = KeyOf(host);
  size_t cost = Cost(obj), data = obj.data_bytes;
  // What registering obj would leave: a new entry, or one replaced in place
  // (a lower file opened again; a number the kernel gave a new object).
  auto room = [&]() -> int {
    auto it = map_.find(key);
    size_t old_cost = it == map_.end() ? 0 : Cost(it->second);
    size_t old_data = it == map_.end() ? 0 : it->second.data_bytes;
    if (it == map_.end() && map_.size() >= kMaxEntries) return ENFILE;
    if (bytes_ - old_cost + cost > kMaxBytes) return ENFILE;
    if (data_bytes_ - old_data + data > kMaxDataBytes) return ENOMEM;
    return 0;
  };
  bool fresh = map_.find(key) == map_.end();
  if (room() != 0) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_full_sweep_ >= kFullSweepInterval) {
      last_full_sweep_ = now;
      Sweep();
    }
    if (int err = room(); err != 0) return Errno{err};
  } else if (fresh && map_.size() >= sweep_at_) {
    // Twice what the guest holds: sweeps stay proportional to the opens
    // between them, however many fds the guest keeps.
    sweep_at_ = Sweep() ? std::clamp(2 * map_.size(), kSweepFloor, kMaxEntries) : kMaxEntries;
  }
  auto it = map_.find(key);
  if (it != map_.end()) {
    bytes_ -= Cost(it->second);
    data_bytes_ -= it->second.data_bytes;
    it->second = std::move(obj);
  } else {
    map_.emplace(key, std::move(obj));
  }
  bytes_ += cost;
  data_bytes_ += data;
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
    data_bytes_ -= it->second.data_bytes;
    it = map_.erase(it);
  }
  return true;
}

}  // namespace sentry
