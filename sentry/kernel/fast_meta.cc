#include "sentry/kernel/fast_meta.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace sentry {

absl::StatusOr<std::unique_ptr<FastMeta>> FastMeta::Create() {
  int fd = memfd_create("sentry-fastmeta", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create");
  UniqueFd owned(fd);
  if (ftruncate(fd, kRegionBytes) < 0) return absl::ErrnoToStatus(errno, "ftruncate");
  void* map = mmap(nullptr, kRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap");
  // The sentry's mapping stays writable; no later one can be (memfd_create(2)).
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
    int err = errno;
    munmap(map, kRegionBytes);
    return absl::ErrnoToStatus(err, "F_ADD_SEALS");
  }
  auto* h = static_cast<sentry_fm_header*>(map);
  h->magic = SENTRY_FM_MAGIC;
  h->version = SENTRY_FM_VERSION;
  h->slot_size = SENTRY_FM_SLOT_SIZE;
  h->nslots = kSlots;
  h->slots_offset = SENTRY_FM_SLOTS_OFFSET;
  __atomic_store_n(&h->generation, 1, __ATOMIC_RELEASE);
  return std::unique_ptr<FastMeta>(new FastMeta(std::move(owned), map));
}

FastMeta::~FastMeta() { munmap(map_, kRegionBytes); }

SysResult<UniqueFd> FastMeta::OpenReadOnly() const {
  // A description of its own, O_RDONLY: never the sentry's O_RDWR one.
  std::string self = absl::StrCat("/proc/self/fd/", fd_.get());
  int fd = open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno{EIO};
  return UniqueFd(fd);
}

void FastMeta::Invalidate() {
  __atomic_add_fetch(&header()->generation, 1, __ATOMIC_RELEASE);
  ++invalidations_;
}

void FastMeta::PublishStat(std::string_view path, bool follow, const struct stat& st,
                           uint32_t access_ok, const std::string_view* target) {
  uint32_t flags = follow ? SENTRY_FM_FOLLOW : 0;
  std::string_view t;
  if (target && !follow && path.size() + target->size() <= sizeof(sentry_fm_slot::data)) {
    flags |= SENTRY_FM_TARGET;
    t = *target;
  }
  Write(path, flags, &st, access_ok, t);
}

void FastMeta::PublishAbsent(std::string_view path, bool follow) {
  Write(path, SENTRY_FM_ABSENT | (follow ? SENTRY_FM_FOLLOW : 0), nullptr, 0, {});
}

void FastMeta::Write(std::string_view path, uint32_t flags, const struct stat* st,
                     uint32_t access_ok, std::string_view target) {
  if (!sentry_fm_normal(path.data(), path.size())) return;
  if (path.size() + target.size() > sizeof(sentry_fm_slot::data)) return;
  uint64_t h = sentry_fm_hash(path.data(), path.size(), flags & SENTRY_FM_FOLLOW);
  auto* slot = reinterpret_cast<sentry_fm_slot*>(static_cast<char*>(map_) + SENTRY_FM_SLOTS_OFFSET +
                                                 (h & (kSlots - 1)) * SENTRY_FM_SLOT_SIZE);
  // The seqlock's write side: odd while the fields change.
  uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  slot->flags = flags;
  slot->generation = __atomic_load_n(&header()->generation, __ATOMIC_RELAXED);
  slot->access_ok = access_ok;
  slot->path_len = static_cast<uint16_t>(path.size());
  slot->target_len = static_cast<uint16_t>(target.size());
  if (st) {
    slot->st = *st;
  } else {
    std::memset(&slot->st, 0, sizeof(slot->st));
  }
  std::memcpy(slot->data, path.data(), path.size());
  std::memcpy(slot->data + path.size(), target.data(), target.size());
  __atomic_store_n(&slot->seq, seq + 2, __ATOMIC_RELEASE);
  ++published_;
}

}  // namespace sentry
