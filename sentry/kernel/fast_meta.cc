#include "sentry/kernel/fast_meta.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
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
  __atomic_store_n(&h->upper_generation, 1, __ATOMIC_RELEASE);
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
  // Both kinds: the slots and the listings' area are taken from the first
  // again, over upper answers too.
  ++counter_;
  __atomic_store_n(&header()->upper_generation, counter_, __ATOMIC_RELEASE);
  __atomic_store_n(&header()->generation, counter_, __ATOMIC_RELEASE);
  // The seqlock's write side for the listings' area, which has no seq of
  // its own: a reader that sees any byte written after this sees the new
  // generation too (region.h).
  __atomic_thread_fence(__ATOMIC_RELEASE);
  ++invalidations_;
  cwd_tids_.clear();
  next_slot_ = 0;
  kept_count_ = 0;  // (their slots are free again)
  list_fill_ = 0;
}

void FastMeta::InvalidateUpper() {
  if (!upper_) return;
  ++counter_;
  __atomic_store_n(&header()->upper_generation, counter_, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  ++upper_invalidations_;
  cwd_tids_.clear();
}

bool FastMeta::SoleUid(uint32_t uid) {
  if (sole_ended_) return false;
  if (!sole_set_) {
    sole_set_ = true;
    sole_uid_ = uid;
  }
  return sole_uid_ == uid;
}

void FastMeta::EndSoleUid() {
  if (sole_ended_) return;
  sole_ended_ = true;
  if (!sole_set_) return;  // nothing was published by the owner's rule
  Invalidate();
  // Every slot through its seqlock (a reader mid-copy misses), then the
  // listings (their readers check the generation, bumped above).
  for (uint32_t n = 0; n < kSlots; ++n) {
    sentry_fm_slot* slot = SlotAt(n);
    uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    std::memset(reinterpret_cast<char*>(slot) + sizeof(slot->seq), 0,
                sizeof(*slot) - sizeof(slot->seq));
    __atomic_store_n(&slot->seq, seq + 2, __ATOMIC_RELEASE);
  }
  std::memset(static_cast<char*>(map_) + kListOffset, 0, kListBytes);
}

void FastMeta::PublishCwd(int32_t tid, std::string_view dir_path) {
  if (!upper_ || !sentry_fm_normal(dir_path.data(), dir_path.size())) return;
  char key[SENTRY_FM_CWD_KEY_LEN];
  sentry_fm_cwd_key(static_cast<uint32_t>(tid), key);
  Write(std::string_view(key, sizeof(key)), SENTRY_FM_CWD | SENTRY_FM_FOLLOW | SENTRY_FM_UPPER,
        nullptr, 0, dir_path);
  cwd_tids_.insert(tid);
}

bool FastMeta::HasCwd(int32_t tid) const {
  if (!cwd_tids_.count(tid)) return false;
  char key[SENTRY_FM_CWD_KEY_LEN];
  sentry_fm_cwd_key(static_cast<uint32_t>(tid), key);
  return LiveSlot(std::string_view(key, sizeof(key))) != 0;
}

void FastMeta::ForgetCwds() {
  if (!cwd_tids_.empty()) InvalidateUpper();
}

void FastMeta::ForgetCwd(int32_t tid) {
  if (cwd_tids_.count(tid)) InvalidateUpper();
}

void FastMeta::EnableUpper() {
  __atomic_or_fetch(&header()->features, SENTRY_FM_HAS_UPPER | SENTRY_FM_HAS_CWD, __ATOMIC_RELEASE);
  upper_ = true;
}

bool FastMeta::SlotLive(uint32_t n) const {
  if (n == 0 || n > next_slot_) return false;
  const sentry_fm_slot* s = SlotAt(n - 1);
  const sentry_fm_header* h = header();
  return s->generation == ((s->flags & SENTRY_FM_UPPER) ? h->upper_generation : h->generation);
}

void FastMeta::PublishStat(std::string_view path, const struct stat& st, uint32_t access_ok,
                           const std::string_view* link_target, bool upper) {
  if (!sentry_fm_normal(path.data(), path.size()) || (upper && !upper_)) return;
  uint32_t kind = upper ? SENTRY_FM_UPPER : 0;
  if (!link_target) {
    Write(path, SENTRY_FM_FOLLOW | kind, &st, access_ok, {});
  } else if (path.size() + link_target->size() <= sizeof(sentry_fm_slot::data)) {
    Write(path, SENTRY_FM_TARGET | kind, &st, 0, *link_target);
  } else {
    Write(path, kind, &st, 0, {});
  }
}

void FastMeta::PublishAbsent(std::string_view path, bool upper) {
  if (!sentry_fm_normal(path.data(), path.size()) || (upper && !upper_)) return;
  Write(path, SENTRY_FM_ABSENT | SENTRY_FM_FOLLOW | (upper ? SENTRY_FM_UPPER : 0), nullptr, 0, {});
}

void FastMeta::EnableTokens(int32_t lock_pid) {
  header()->lock_pid = lock_pid;
  __atomic_store_n(&header()->features, SENTRY_FM_HAS_TOKENS, __ATOMIC_RELEASE);
  tokens_ = true;
}

void FastMeta::PublishToken(uint64_t id, std::string_view dir_path, bool upper) {
  if (!tokens_ || !sentry_fm_normal(dir_path.data(), dir_path.size()) || (upper && !upper_)) return;
  char key[SENTRY_FM_TOKEN_KEY_LEN];
  sentry_fm_token_key(id, key);
  Write(std::string_view(key, sizeof(key)),
        SENTRY_FM_TOKEN | SENTRY_FM_FOLLOW | (upper ? SENTRY_FM_UPPER : 0), nullptr, 0, dir_path);
}

void FastMeta::EnableListings() {
  header()->list_offset = kListOffset;
  header()->list_bytes = kListBytes;
  __atomic_or_fetch(&header()->features, SENTRY_FM_HAS_LISTINGS, __ATOMIC_RELEASE);
  listings_ = true;
}

void FastMeta::EnableNegatives() {
  __atomic_or_fetch(&header()->features, SENTRY_FM_HAS_NEGATIVES, __ATOMIC_RELEASE);
  negatives_ = true;
}

void FastMeta::EnableDirStreams() {
  __atomic_or_fetch(&header()->features, SENTRY_FM_DIR_STREAMS, __ATOMIC_RELEASE);
}

void FastMeta::EnableFdRecords() {
  __atomic_or_fetch(&header()->features, SENTRY_FM_FD_RECORDS, __ATOMIC_RELEASE);
  fd_records_ = true;
}

void FastMeta::EnableUpperFiles() {
  __atomic_or_fetch(&header()->features, SENTRY_FM_UPPER_FILES, __ATOMIC_RELEASE);
  upper_files_ = true;
}

void FastMeta::PublishFresh(int32_t tid, std::string_view path, const struct stat& st) {
  if (!upper_files() || !fd_records_ || !sentry_fm_normal(path.data(), path.size())) return;
  char prefix[SENTRY_FM_FRESH_KEY_LEN];
  sentry_fm_fresh_key(static_cast<uint32_t>(tid), prefix);
  std::string key(prefix, sizeof(prefix));
  key += path;
  Write(key, SENTRY_FM_FRESH | SENTRY_FM_UPPER, &st, 0, {});
}

bool FastMeta::HasAnswer(std::string_view path) const {
  uint32_t n = LiveSlot(path);
  return n != 0 && !(SlotAt(n - 1)->flags & SENTRY_FM_ABSENT);
}

namespace {

std::string ListingKey(std::string_view dir_path) {
  std::string key(1, SENTRY_FM_LISTING_PREFIX);
  key += dir_path;
  return key;
}

}  // namespace

bool FastMeta::HasListing(std::string_view dir_path) const {
  return listings_ && LiveSlot(ListingKey(dir_path)) != 0;
}

void FastMeta::PublishListing(std::string_view dir_path, std::string_view records, bool complete,
                              bool upper) {
  if (!listings_ || !sentry_fm_normal(dir_path.data(), dir_path.size())) return;
  if (upper && !upper_) return;
  if (records.empty() || records.size() > SENTRY_FM_MAX_LISTING || records.size() % 8 != 0) return;
  // Taken before the area is written: a Write that found the slots full
  // would invalidate after it, and the next listing would be written over
  // records a live slot points at.
  sentry_fm_listing list{0, records.size(), 0};
  for (size_t off = 0; off < records.size(); ++list.entries) {
    uint16_t reclen;  // struct linux_dirent64's d_reclen, at byte 16
    if (records.size() - off < 24) return;
    std::memcpy(&reclen, records.data() + off + 16, sizeof(reclen));
    if (reclen < 24 || reclen % 8 != 0 || reclen > records.size() - off) return;
    off += reclen;
  }
  if (next_slot_ == kSlots) Invalidate();
  if (list_fill_ + records.size() > kListBytes) Invalidate();
  list.offset = list_fill_;
  std::memcpy(static_cast<char*>(map_) + kListOffset + list.offset, records.data(), records.size());
  list_fill_ += records.size();
  // The slot's union: a listing where a path's answer has its stat.
  struct stat st {};
  static_assert(sizeof(list) <= sizeof(st));
  std::memcpy(&st, &list, sizeof(list));
  uint32_t flags = SENTRY_FM_LISTING | SENTRY_FM_FOLLOW | (upper ? SENTRY_FM_UPPER : 0);
  if (complete && negatives()) flags |= SENTRY_FM_COMPLETE;
  Write(ListingKey(dir_path), flags, &st, 0, {});
  ++listings_published_;
}

void FastMeta::Reserve(uint32_t slots, size_t list_bytes) {
  if (next_slot_ + slots > kSlots || list_fill_ + list_bytes > kListBytes) Invalidate();
  kept_count_ = 0;
  keep_next_ = std::min(slots, kKept);
}

uint32_t FastMeta::LiveSlot(std::string_view key) const {
  uint64_t h = sentry_fm_hash(key.data(), key.size(), 0);
  const auto* index =
      reinterpret_cast<const uint32_t*>(static_cast<const char*>(map_) + SENTRY_FM_INDEX_OFFSET);
  for (uint32_t i = 0; i < SENTRY_FM_PROBES; ++i) {
    uint32_t n = index[(h + i) & (kSlots - 1)];
    if (!SlotLive(n)) return 0;
    const sentry_fm_slot* s = SlotAt(n - 1);
    if (s->path_len == key.size() && std::memcmp(s->data, key.data(), key.size()) == 0) return n;
  }
  return 0;
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
  auto slot_at = [this](uint32_t n) { return SlotAt(n); };
  // The key's own slot on its probe sequence (rewritten in place), else the
  // first free bucket there (a new slot, or the dead one it points at: an
  // upper answer of an older upper generation, so that the churn of /tmp
  // reuses slots rather than filling them); all taken: the first bucket
  // whose answer is not one the last Reserve keeps gives way (rewritten in
  // place), and with none such this answer is not written (a miss traps). A
  // slot rewritten in place that another bucket also points at only costs
  // that bucket's answer: every reader compares the key.
  auto kept = [this](uint32_t n) {
    return std::find(kept_, kept_ + kept_count_, n) != kept_ + kept_count_;
  };
  uint32_t bucket = 0;
  uint32_t k = 0;
  bool victim = false;
  bool found = false;
  for (uint32_t i = 0; i < SENTRY_FM_PROBES; ++i) {
    uint32_t b = static_cast<uint32_t>((h + i) & (kSlots - 1));
    uint32_t n = __atomic_load_n(&index[b], __ATOMIC_RELAXED);
    if (!SlotLive(n)) {
      bucket = b;
      k = n != 0 && n <= next_slot_ ? n : 0;
      found = true;
      break;
    }
    const sentry_fm_slot* s = slot_at(n - 1);
    if (s->path_len == path.size() && std::memcmp(s->data, path.data(), path.size()) == 0) {
      bucket = b;
      k = n;
      found = true;
      break;
    }
    if (!victim && !kept(n)) {
      victim = true;
      bucket = b;
      k = n;
    }
  }
  if (!found && !victim) return;
  if (k == 0) {
    if (next_slot_ == kSlots) {
      // Full: everything goes, and the slots are taken from the first again.
      Invalidate();
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
  slot->generation = (flags & SENTRY_FM_UPPER) ? header()->upper_generation : header()->generation;
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
  if (keep_next_ > 0) {
    --keep_next_;
    kept_[kept_count_++] = k;
  }
}

}  // namespace sentry
