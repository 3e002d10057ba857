#include "sentry/kernel/fd_holds.h"

#include <utility>

namespace sentry {

void FdHolds::Keep(UniqueFd fd, const struct stat& st, pid_t tgid, int guest_fd) {
  if (!enabled_ || !fd) return;
  ObjectKey key{st.st_dev, st.st_ino};
  if (auto it = by_object_.find(key); it != by_object_.end()) {
    SetHint(tgid, guest_fd, it->second);
    return;  // fd closes here: one reference per object is enough
  }
  uint32_t index = next_;
  next_ = (next_ + 1) % kMaxHeld;
  Slot& slot = slots_[index];
  if (slot.fd) {
    by_object_.erase(ObjectKey{slot.st.st_dev, slot.st.st_ino});
    ++slot.gen;
  }
  slot.fd = std::move(fd);
  slot.st = st;
  by_object_.emplace(key, index);
  SetHint(tgid, guest_fd, index);
}

void FdHolds::SetHint(pid_t tgid, int guest_fd, uint32_t slot) {
  // Hints of processes gone and fds closed pile up: past the bound they all
  // go, and the next call of each fd hints it again.
  if (hints_.size() >= kMaxHints) hints_.clear();
  hints_[HintKey(tgid, guest_fd)] = HintSlot{slot, slots_[slot].gen};
}

std::optional<FdHolds::Held> FdHolds::Hinted(pid_t tgid, int guest_fd) const {
  if (!enabled_) return std::nullopt;
  auto it = hints_.find(HintKey(tgid, guest_fd));
  if (it == hints_.end()) return std::nullopt;
  const Slot& slot = slots_[it->second.slot];
  if (slot.gen != it->second.gen || !slot.fd) return std::nullopt;
  return Held{slot.fd.get(), slot.st};
}

std::optional<FdHolds::Held> FdHolds::OfObject(const struct stat& st) const {
  auto it = by_object_.find(ObjectKey{st.st_dev, st.st_ino});
  if (it == by_object_.end()) return std::nullopt;
  const Slot& slot = slots_[it->second];
  return Held{slot.fd.get(), slot.st};
}

bool FdHolds::Hint(pid_t tgid, int guest_fd, const struct stat& st) {
  auto it = by_object_.find(ObjectKey{st.st_dev, st.st_ino});
  if (it == by_object_.end()) return false;
  SetHint(tgid, guest_fd, it->second);
  return true;
}

}  // namespace sentry
