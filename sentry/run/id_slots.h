// IdSlot: a block of host ids that one sandbox holds alone while it lives.
//
// Whoever owns a sandbox's user namespace, and whatever host ids its guest
// runs as, is who the kernel charges for what the guest makes: inotify
// instances, message-queue bytes and queued signals count per (user
// namespace, uid) up to the host's user namespace, where they land on the
// namespace's owner; pipe buffers and epoll watches count per host uid. A
// block of ids per sandbox, with the namespace made by the block's first id,
// makes each of those counts the sandbox's own (see DESIGN.md, "the rule of
// the pools").
//
// A slot is held by an flock on lock_dir/K.lock: the kernel drops it when
// the holder (the sentry) dies, however it dies, so a slot is never leaked.
#ifndef SENTRY_RUN_ID_SLOTS_H_
#define SENTRY_RUN_ID_SLOTS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"

namespace sentry {

inline constexpr uid_t kIdsPerSlot = 64;

// A block of host ids [first + k*kIdsPerSlot, +kIdsPerSlot) that one sandbox holds alone:
// an flock on lock_dir/k.lock, released by the kernel when the holder dies.
class IdSlot final {
 public:
  // The first free slot of [0, count); ResourceExhaustedError naming the count when all are held.
  // lock_dir is made 0700 if missing (refuse one that is not a directory owned by the caller).
  static absl::StatusOr<IdSlot> Take(const std::string& lock_dir, uid_t first, uint32_t count);

  IdSlot() = default;
  IdSlot(IdSlot&&) noexcept = default;
  IdSlot& operator=(IdSlot&&) noexcept = default;
  IdSlot(const IdSlot&) = delete;
  IdSlot& operator=(const IdSlot&) = delete;
  ~IdSlot() = default;  // closing the lock file releases the slot

  uid_t base() const { return base_; }
  uint32_t index() const { return index_; }
  bool held() const { return lock_.valid(); }

 private:
  UniqueFd lock_;
  uid_t base_ = 0;
  uint32_t index_ = 0;
};

}  // namespace sentry

#endif  // SENTRY_RUN_ID_SLOTS_H_
