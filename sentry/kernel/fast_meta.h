// FastMeta: the sandbox's fast-metadata region (fastmeta/region.h), where the
// sentry publishes answers it has already given about the read-only lower
// layer (and, with EnableUpper, the upper layer's directories and symlinks),
// for the guest's preload library to read without a trap.
//
// One sealed memfd per sandbox. It is sized, mapped writable once by the
// sentry, then sealed with F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW
// | F_SEAL_SEAL: from then on no one (not the guest with any fd of it, not
// the sentry) can make another writable mapping, write(2) it or resize it;
// the guest is also given only O_RDONLY descriptions of it. Its pages are
// shmem charged to the sentry's memory cgroup (the sandbox's) as they are
// first written: at most kRegionBytes (6 MiB + 20 KiB: 2 MiB of slots, 4 MiB
// of listings) a sandbox, and 14 KiB for the library, beside the VFS's 8 MiB
// lower cache (vfs.h kLowerCacheBytes).
//
// Publish* and Invalidate run under the kernel mutex (one writer); guests
// read concurrently through the per-slot seqlock.
#ifndef SENTRY_KERNEL_FAST_META_H_
#define SENTRY_KERNEL_FAST_META_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "absl/status/statusor.h"
#include "fastmeta/region.h"
#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry {

class FastMeta final {
 public:
  static constexpr uint32_t kSlots = 4096;
  static constexpr size_t kSlotsOffset = SENTRY_FM_INDEX_OFFSET + size_t{kSlots} * 4;
  // Listings (region.h): appended in order, all dropped with the slots when
  // full (a find over the corpus's trees lists 1.2 MiB; all of /usr, 9 MiB).
  static constexpr size_t kListOffset = kSlotsOffset + size_t{kSlots} * SENTRY_FM_SLOT_SIZE;
  static constexpr size_t kListBytes = 4 << 20;
  static constexpr size_t kRegionBytes = kListOffset + kListBytes;

  static absl::StatusOr<std::unique_ptr<FastMeta>> Create();
  ~FastMeta();
  FastMeta(const FastMeta&) = delete;
  FastMeta& operator=(const FastMeta&) = delete;

  // A new read-only description of the region, to donate to a guest.
  SysResult<UniqueFd> OpenReadOnly() const { return Reopen(fd_.get()); }
  // The same of the guest's library (fastmeta/library.h), held in a sealed
  // memfd of its own: every process maps the same pages.
  SysResult<UniqueFd> OpenLibrary() const { return Reopen(lib_fd_.get()); }

  // path must satisfy sentry_fm_normal. access_ok: see sentry_fm_slot.
  // link_target: a symlink's target (the entry then answers lstat and
  // readlink only; null for anything else, whose entry answers stat too).
  // upper (every Publish*): the answer depends on an upper node (region.h
  // SENTRY_FM_UPPER); dropped unless EnableUpper was called.
  void PublishStat(std::string_view path, const struct stat& st, uint32_t access_ok,
                   const std::string_view* link_target, bool upper = false);
  void PublishAbsent(std::string_view path, bool upper = false);
  // Upper answers (region.h SENTRY_FM_UPPER; off: --no-fast-upper).
  void EnableUpper();
  bool upper() const { return upper_; }
  // Working directories (region.h SENTRY_FM_CWD), with upper answers: the
  // guest's thread tid (as it reads gettid) works in dir_path.
  void PublishCwd(int32_t tid, std::string_view dir_path);
  bool HasCwd(int32_t tid) const;
  // Before a chdir is answered: every published working directory goes.
  void ForgetCwds();
  // A thread is gone (its id may be reused): its working directory goes.
  void ForgetCwd(int32_t tid);
  // Directory tokens (region.h): the guest reads a token's id off the
  // sentry's lock on it and finds here the path that leads to it.
  void EnableTokens(int32_t lock_pid);
  bool tokens() const { return tokens_; }
  void PublishToken(uint64_t id, std::string_view dir_path, bool upper = false);
  // Directory listings (region.h): records are what getdents64 returns for
  // the whole directory at dir_path from position 0; larger than
  // SENTRY_FM_MAX_LISTING, not published.
  void EnableListings();
  bool listings() const { return listings_; }
  // The library's own stream for every opendir (region.h
  // SENTRY_FM_DIR_STREAMS), relying on the trapped getdents64's end mark.
  void EnableDirStreams();
  // fd records (region.h SENTRY_FM_FD_RECORDS; off: --no-fast-fd-records):
  // the guest's library remembers the stat of a lower regular file it
  // opened read-only, published at that open (fast_meta_publish.h).
  void EnableFdRecords();
  bool fd_records() const { return fd_records_; }
  // Upper regular files (region.h SENTRY_FM_UPPER_FILES; off:
  // --no-fast-upper-files): published, with upper answers, while no writer
  // of the store file exists (fast_meta_publish.h).
  void EnableUpperFiles();
  bool upper_files() const { return upper_ && upper_files_; }
  // A regular file a trapped open of the guest's thread tid just made and
  // donated (region.h SENTRY_FM_FRESH; with upper files and fd records): st
  // is that fd's fstat, for the guest's library to record for it.
  void PublishFresh(int32_t tid, std::string_view path, const struct stat& st);
  // The one uid every guest process has (fast_meta_publish.h: a directory
  // only its owner may search is published when that owner is every
  // caller): the first caller's, asked while no process of another uid
  // joined. EndSoleUid (one does, `sentry exec` as another user) wipes
  // every slot and listing, so that no byte of such an answer stays for it
  // to read, and turns the rule off for good.
  bool SoleUid(uint32_t uid);
  void EndSoleUid();
  // Whether path has a live answer that is not ENOENT.
  bool HasAnswer(std::string_view path) const;
  // Whether dir_path's listing is published in the current generation (it
  // cannot have changed since: every change bumps the generation first).
  bool HasListing(std::string_view dir_path) const;
  // complete (with negatives on): the listing also answers ENOENT for the
  // names absent from it (region.h SENTRY_FM_COMPLETE).
  void PublishListing(std::string_view dir_path, std::string_view records, bool complete = false,
                      bool upper = false);
  // Complete listings (off: --no-fast-negatives): what the caller vouches
  // for with PublishListing's complete is published as such.
  void EnableNegatives();
  bool negatives() const { return listings_ && negatives_; }
  // Room for `slots` new slots and list_bytes of listings, made now (by an
  // invalidation) if there is not: answers published together then all
  // stay, where making room halfway would drop the first ones. The next
  // `slots` answers written (at most kKept) are also kept from giving way
  // to another key whose probes are all taken (Write), until the next
  // Reserve: a directory's token and listing, which the guest reads next,
  // are never the victims of its own listing or fill.
  void Reserve(uint32_t slots, size_t list_bytes);
  // Whether every slot is taken: the next new answer would invalidate all
  // (an answer published only in passing, as a listing's fill, waits).
  bool Full() const { return next_slot_ == kSlots; }
  // A new id, unique in this process, below 2^62 (a lock's l_start).
  static uint64_t NewTokenId();
  // Every published answer becomes a miss.
  void Invalidate();
  // Every upper answer becomes a miss (the lower ones stay): called before
  // any change to an upper node is answered (vfs.h set_on_upper_change).
  void InvalidateUpper();

  uint64_t published() const { return published_; }
  uint64_t invalidations() const { return invalidations_; }
  uint64_t listings_published() const { return listings_published_; }
  uint64_t upper_invalidations() const { return upper_invalidations_; }

 private:
  FastMeta(UniqueFd fd, void* map, UniqueFd lib_fd)
      : fd_(std::move(fd)), map_(map), lib_fd_(std::move(lib_fd)) {}
  static SysResult<UniqueFd> Reopen(int fd);
  sentry_fm_header* header() const { return static_cast<sentry_fm_header*>(map_); }
  void Write(std::string_view path, uint32_t flags, const struct stat* st, uint32_t access_ok,
             std::string_view target);
  sentry_fm_slot* SlotAt(uint32_t n) const {
    return reinterpret_cast<sentry_fm_slot*>(static_cast<char*>(map_) + kSlotsOffset +
                                             size_t{n} * SENTRY_FM_SLOT_SIZE);
  }
  // Whether slot number n - 1 is taken and of its kind's generation.
  bool SlotLive(uint32_t n) const;
  // The slot number + 1 of key's live slot, or 0.
  uint32_t LiveSlot(std::string_view key) const;

  UniqueFd fd_;
  void* map_;
  UniqueFd lib_fd_;
  bool tokens_ = false;
  bool listings_ = false;
  bool negatives_ = false;
  bool fd_records_ = false;
  bool upper_ = false;
  bool upper_files_ = false;
  bool sole_set_ = false;    // sole_uid_ taken
  bool sole_ended_ = false;  // another uid joined: no owner-only answers
  uint32_t sole_uid_ = 0;
  uint64_t counter_ = 1;  // the last generation of either kind (region.h)
  uint64_t upper_invalidations_ = 0;
  std::unordered_set<int32_t> cwd_tids_;  // live CWD slots' threads (at most one each)
  uint32_t next_slot_ = 0;                // taken in order; from 0 again after Invalidate
  // The slots the last Reserve's answers took (Reserve), and how many of
  // the next writes still join them.
  static constexpr uint32_t kKept = 4;
  uint32_t kept_[kKept] = {};
  uint32_t kept_count_ = 0;
  uint32_t keep_next_ = 0;
  size_t list_fill_ = 0;  // the listings' area used; 0 again after Invalidate
  uint64_t published_ = 0;
  uint64_t invalidations_ = 0;
  uint64_t listings_published_ = 0;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_FAST_META_H_
