#include "sentry/kernel/fd_holds.h"

#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace sentry {

void FdHolds::Keep(UniqueFd fd, const struct stat& st, pid_t tgid, int guest_fd, bool shared) {
  if (!enabled_ || !fd) return;
  if (self_ == 0) self_ = getpid();
  ObjectKey key{st.st_dev, st.st_ino};
  if (shared && (shared_off_ || refused_.count(key))) return;  // fd closes here
  if (auto it = by_object_.find(key); it != by_object_.end()) {
    if (shared) {
      // Another description of a lower file: the newest is the one the
      // guest is about to use; the older one's hints miss at once.
      Slot& slot = slots_[it->second];
      slot.fd = std::move(fd);
      slot.st = st;
      slot.shared = true;
      ++slot.gen;
    }
    SetHint(tgid, guest_fd, it->second);
    Guessable(tgid, it->second);
    return;  // a token's copy closes here: one reference per object is enough
  }
  if (shared) kept_shared_ = true;
  // Every reference asked, once enough Keeps have passed: closed if the
  // guest closed it.
  if (++keeps_ >= sweep_after_) {
    for (uint32_t at = 0; at < kMaxHeld; ++at) {
      if (slots_[at].fd && !StillHeld(slots_[at])) Release(at);
    }
    keeps_ = 0;
    sweep_after_ = std::max(kSweepEvery, by_object_.size());
  }
  // A free slot from the oldest on; none free: the oldest goes.
  uint32_t index = next_;
  for (size_t i = 0; i < kMaxHeld; ++i) {
    uint32_t at = (next_ + i) % kMaxHeld;
    if (!slots_[at].fd) {
      index = at;
      break;
    }
  }
  if (slots_[index].fd) Release(index);
  next_ = (index + 1) % kMaxHeld;
  Slot& slot = slots_[index];
  slot.fd = std::move(fd);
  slot.st = st;
  slot.shared = shared;
  by_object_.emplace(key, index);
  SetHint(tgid, guest_fd, index);
  Guessable(tgid, index);
}

void FdHolds::Release(uint32_t index) {
  Slot& slot = slots_[index];
  by_object_.erase(ObjectKey{slot.st.st_dev, slot.st.st_ino});
  ++slot.gen;
  if (close_later_ && !slot.shared) {
    close_later_(std::move(slot.fd));
  } else {
    slot.fd.Reset();
  }
}

void FdHolds::Refuse(const struct stat& st) {
  ObjectKey key{st.st_dev, st.st_ino};
  if (auto it = by_object_.find(key); it != by_object_.end()) Release(it->second);
  if (shared_off_) return;
  if (refused_.size() >= kMaxRefused) {
    shared_off_ = true;
    refused_.clear();
    return;
  }
  refused_.insert(key);
}

bool FdHolds::StillHeld(const Slot& slot) const {
  // Any answer but "the same description" (closed, another object, the
  // process gone, kcmp refused) lets it go: a reference dropped only costs
  // the next call on it a copy.
  return syscall(SYS_kcmp, slot.tgid, self_, KCMP_FILE, slot.guest_fd, slot.fd.get()) == 0;
}

void FdHolds::SetHint(pid_t tgid, int guest_fd, uint32_t slot) {
  // Hints of processes gone and fds closed pile up: past the bound they all
  // go, and the next call of each fd hints it again.
  if (hints_.size() >= kMaxHints) hints_.clear();
  uint64_t key = HintKey(tgid, guest_fd);
  // The number is this description now (a donation just installed it, or a
  // kcmp or copy just said so): a reference last seen under it is not
  // there any more, which the sweep's kcmp would only learn later.
  if (auto it = hints_.find(key); it != hints_.end() && it->second.slot != slot) {
    const Slot& old = slots_[it->second.slot];
    if (old.fd && old.gen == it->second.gen && old.tgid == tgid && old.guest_fd == guest_fd) {
      Release(it->second.slot);
    }
  }
  hints_[key] = HintSlot{slot, slots_[slot].gen};
  slots_[slot].tgid = tgid;
  slots_[slot].guest_fd = guest_fd;
}

void FdHolds::Guessable(pid_t tgid, uint32_t slot) {
  last_tgid_ = tgid;
  last_slot_ = slot;
  last_gen_ = slots_[slot].gen;
  guessable_ = true;
}

std::optional<FdHolds::Held> FdHolds::Guess(pid_t tgid) {
  if (!enabled_ || !guessable_ || tgid != last_tgid_) return std::nullopt;
  guessable_ = false;
  const Slot& slot = slots_[last_slot_];
  if (slot.gen != last_gen_ || !slot.fd) return std::nullopt;
  return Held{slot.fd.get(), slot.st};
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

void FdHolds::Missed(pid_t tgid, int guest_fd) {
  auto it = hints_.find(HintKey(tgid, guest_fd));
  if (it == hints_.end()) return;
  HintSlot hint = it->second;
  hints_.erase(it);
  const Slot& slot = slots_[hint.slot];
  if (slot.fd && slot.gen == hint.gen && slot.tgid == tgid && slot.guest_fd == guest_fd) {
    Release(hint.slot);
  }
}

bool FdHolds::Hint(pid_t tgid, int guest_fd, const struct stat& st) {
  auto it = by_object_.find(ObjectKey{st.st_dev, st.st_ino});
  if (it == by_object_.end()) return false;
  SetHint(tgid, guest_fd, it->second);
  return true;
}

}  // namespace sentry
