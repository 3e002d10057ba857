// ListingAhead: lower directories' host listings read on a thread of their
// own, on another CPU, before the guest opens them.
//
// A walk (find, fts, os.walk) opens each directory it lists: the trapped
// open publishes the directory's listing (syscalls/fast_meta_publish.h),
// and its host listing (Vfs::ListHost: the lazy openat2, ext4's getdents64,
// which builds and hashes the whole directory) was half the notification
// thread's host work per directory, while the guest waited. The listing's
// fill queues the subdirectories it just made nodes for (what the walk
// opens next); this thread opens and reads each as ListHost would (the
// same HostDirFd, so the same openat2 beneath the parent, the same check
// of "." against the inode looked up) and keeps the raw getdent64 records;
// ListHost then parses those instead of reading the host. The last queued
// is read first: a walk goes depth first.
//
// What it reads is what the sentry would read a few microseconds later for
// the same node: the lower layer's listings are read once and cached anyway
// (host_listed), so reading one earlier changes no rule. Write-through
// mounts (read_write), which are listed fresh each time, are never queued.
//
// Bounded: at most kMaxQueued directories wait (the oldest are dropped),
// at most kMaxKept listings and kMaxKeptBytes are kept (the oldest are
// dropped), and a listing above kMaxListingBytes is not kept. A listing
// ListHost asks for while it is being read is ListHost's to read (the
// thread's copy is dropped): the guest never waits for this thread.
//
// Thread-safe: Queue, Flush and Take are the notification thread's (under
// the kernel's mutex, as the VFS is); the thread touches nothing of the
// VFS but the HostDir it holds (its HostDirFd is thread-safe).
#ifndef SENTRY_VFS_LISTING_AHEAD_H_
#define SENTRY_VFS_LISTING_AHEAD_H_

#include <sched.h>
#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "sentry/base/placed_thread.h"

namespace sentry::vfs {

struct HostDir;

class ListingAhead final {
 public:
  static constexpr size_t kMaxQueued = 256;
  static constexpr size_t kMaxKept = 256;
  static constexpr size_t kMaxKeptBytes = 4u << 20;
  static constexpr size_t kMaxListingBytes = 256u << 10;

  // The thread runs on cpus (the CPUs other than the guest's pinned one),
  // with the file identity (fs_identity.h) fsuid/fsgid: the notification
  // thread's, so that it opens no host directory that thread could not (a
  // root sentry's own identity would read a 0700 directory the guest's
  // cannot). It reads nothing if it cannot take that identity.
  // charge (if set) is told the thread's CPU time of each listing it reads,
  // from that thread: the sandbox's CPU share (kernel/cpu_share.h) pays for
  // it as for the notification thread's own work.
  ListingAhead(const std::optional<cpu_set_t>& cpus, uid_t fsuid, gid_t fsgid,
               std::function<void(uint64_t cpu_ns)> charge = nullptr);
  ~ListingAhead();  // stops the thread; what is queued or kept is dropped
  ListingAhead(const ListingAhead&) = delete;
  ListingAhead& operator=(const ListingAhead&) = delete;

  // Adds dir to the batch Flush hands to the thread.
  void Queue(const std::shared_ptr<HostDir>& dir);
  // Hands the batch over, its first directory to be read first, and wakes
  // the thread if it sleeps.
  void Flush();
  // dir's whole listing (getdents64 records, in the host's order) if it was
  // read ahead, and how its file system ends a listing (HostDir::list_end,
  // asked there when dir's was not known); else nullopt, and dir is neither
  // read nor kept any more.
  struct Listing {
    std::vector<char> records;
    uint8_t list_end;  // a HostDir::ListEnd
  };
  std::optional<Listing> Take(const HostDir* dir);

  // Counts, for the debug log and tests.
  struct Counts {
    uint64_t read = 0;  // listings read ahead and kept
    uint64_t hits = 0;  // of those, taken by ListHost
    uint64_t late = 0;  // asked for while queued or being read
  };
  Counts counts();

 private:
  struct Queued {
    const HostDir* key;  // null: taken by ListHost meanwhile
    std::weak_ptr<HostDir> dir;
    uint8_t list_end;  // its HostDir::list_end when queued (read there)
  };
  struct Kept {
    const HostDir* key;
    std::weak_ptr<HostDir> dir;  // expired: key may name another HostDir now
    Listing listing;
  };
  void Loop();

  // Reads dir's listing as ListHost would; false if it cannot be kept.
  static bool Read(HostDir& dir, Listing* out);

  std::vector<std::shared_ptr<HostDir>> batch_;  // the caller's, unlocked
  const uid_t fsuid_;
  const gid_t fsgid_;
  const std::function<void(uint64_t)> charge_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool sleeping_ = false;

  std::deque<Queued> queue_;  // back: read next
  const HostDir* reading_ = nullptr;
  bool reading_taken_ = false;  // ListHost asked for reading_ meanwhile
  std::deque<Kept> kept_;       // front: oldest
  size_t kept_bytes_ = 0;
  Counts counts_;
  PlacedThread thread_;  // last: it runs Loop on the members above
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_LISTING_AHEAD_H_
