#include "sentry/kernel/fast_meta.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "fastmeta/library.h"

namespace sentry {

namespace {

absl::StatusOr<UniqueFd> SealedLibrary() {
  int fd = memfd_create("sentry-fastmeta-lib", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create");
  UniqueFd owned(fd);
  size_t off = 0;
  while (off < kFastMetaLibrarySize) {
    ssize_t n = write(fd, kFastMetaLibrary + off, kFastMetaLibrarySize - off);
    if (n <= 0) return absl::ErrnoToStatus(errno, "write");
    off += n;
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
    return absl::ErrnoToStatus(errno, "F_ADD_SEALS");
  }
  return owned;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FastMeta>> FastMeta::Create() {
  auto lib = SealedLibrary();
  if (!lib.ok()) return lib.status();
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
  h->slots_offset = kSlotsOffset;
  h->index_offset = SENTRY_FM_INDEX_OFFSET;
  __atomic_store_n(&h->generation, 1, __ATOMIC_RELEASE);
  return std::unique_ptr<FastMeta>(new FastMeta(std::move(owned), map, std::move(*lib)));
}

FastMeta::~FastMeta() { munmap(map_, kRegionBytes); }

SysResult<UniqueFd> FastMeta::Reopen(int src) {
  // A description of its own, O_RDONLY: never the sentry's O_RDWR one.
  std::string self = absl::StrCat("/proc/self/fd/", src);
  int fd = open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno{EIO};
  return UniqueFd(fd);
}

void FastMeta::Invalidate() {
  __atomic_add_fetch(&header()->generation, 1, __ATOMIC_RELEASE);
  ++invalidations_;
  next_slot_ = 0;
}

void FastMeta::PublishStat(std::string_view path, const struct stat& st, uint32_t access_ok,
                           const std::string_view* link_target) {
  if (!sentry_fm_normal(path.data(), path.size())) return;
  if (!link_target) {
    Write(path, SENTRY_FM_FOLLOW, &st, access_ok, {});
  } else if (path.size() + link_target->size() <= sizeof(sentry_fm_slot::data)) {
    Write(path, SENTRY_FM_TARGET, &st, 0, *link_target);
  } else {
    Write(path, 0, &st, 0, {});
  }
}

void FastMeta::PublishAbsent(std::string_view path) {
  if (!sentry_fm_normal(path.data(), path.size())) return;
  Write(path, SENTRY_FM_ABSENT | SENTRY_FM_FOLLOW, nullptr, 0, {});
}

void FastMeta::EnableTokens(int32_t lock_pid) {
  header()->lock_pid = lock_pid;
  __atomic_store_n(&header()->features, SENTRY_FM_HAS_TOKENS, __ATOMIC_RELEASE);
  tokens_ = true;
}

void FastMeta::PublishToken(uint64_t id, std::string_view dir_path) {
  if (!tokens_ || !sentry_fm_normal(dir_path.data(), dir_path.size())) return;
  char key[SENTRY_FM_TOKEN_KEY_LEN];
  sentry_fm_token_key(id, key);
  Write(std::string_view(key, sizeof(key)), SENTRY_FM_TOKEN | SENTRY_FM_FOLLOW, nullptr, 0,
        dir_path);
}

uint64_t FastMeta::NewTokenId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed) & ((uint64_t{1} << 62) - 1);
}

void FastMeta::Write(std::string_view path, uint32_t flags, const struct stat* st,
                     uint32_t access_ok, std::string_view target) {
  // The caller checked the key (a normal path or a token's key).
  if (path.size() + target.size() > sizeof(sentry_fm_slot::data)) return;
  uint64_t h = sentry_fm_hash(path.data(), path.size(), 0);
  auto* index = reinterpret_cast<uint32_t*>(static_cast<char*>(map_) + SENTRY_FM_INDEX_OFFSET);
  auto slot_at = [this](uint32_t n) {
    return reinterpret_cast<sentry_fm_slot*>(static_cast<char*>(map_) + kSlotsOffset +
                                             size_t{n} * SENTRY_FM_SLOT_SIZE);
  };
  uint64_t gen = __atomic_load_n(&header()->generation, __ATOMIC_RELAXED);
  auto live = [&](uint32_t n) {
    return n != 0 && n <= next_slot_ && slot_at(n - 1)->generation == gen;
  };
  // The key's own slot on its probe sequence (rewritten in place), else the
  // first free bucket there (a new slot); all taken: the first bucket's
  // answer gives way (rewritten in place).
  uint32_t bucket = static_cast<uint32_t>(h & (kSlots - 1));
  uint32_t k = __atomic_load_n(&index[bucket], __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < SENTRY_FM_PROBES; ++i) {
    uint32_t b = static_cast<uint32_t>((h + i) & (kSlots - 1));
    uint32_t n = __atomic_load_n(&index[b], __ATOMIC_RELAXED);
    if (!live(n)) {
      bucket = b;
      k = 0;
      break;
    }
    const sentry_fm_slot* s = slot_at(n - 1);
    if (s->path_len == path.size() && std::memcmp(s->data, path.data(), path.size()) == 0) {
      bucket = b;
      k = n;
      break;
    }
  }
  if (k == 0) {
    if (next_slot_ == kSlots) {
      // Full: everything goes, and the slots are taken from the first again.
      Invalidate();
      gen = __atomic_load_n(&header()->generation, __ATOMIC_RELAXED);
      bucket = static_cast<uint32_t>(h & (kSlots - 1));
    }
    k = ++next_slot_;
  }
  sentry_fm_slot* slot = slot_at(k - 1);
  // The seqlock's write side: odd while the fields change.
  uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  slot->flags = flags;
  slot->generation = gen;
  slot->access_ok = access_ok;
  slot->path_len = static_cast<uint16_t>(path.size());
  slot->target_len = static_cast<uint16_t>(target.size());
  if (st) {
    slot->st = *st;
  } else {
    std::memset(&slot->st, 0, sizeof(slot->st));
  }
  std::memcpy(slot->data, path.data(), path.size());
  // An empty target's data() may be null, which memcpy may not be given.
  if (!target.empty()) std::memcpy(slot->data + path.size(), target.data(), target.size());
  __atomic_store_n(&slot->seq, seq + 2, __ATOMIC_RELEASE);
  __atomic_store_n(&index[bucket], k, __ATOMIC_RELEASE);
  ++published_;
}

}  // namespace sentry
