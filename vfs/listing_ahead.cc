#include "vfs/listing_ahead.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "sentry/base/fs_identity.h"
#include "sentry/base/unique_fd.h"
#include "vfs/node.h"

namespace sentry::vfs {

namespace {

struct Dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// The d_off of ext4's last record (vfs_walk.cc kExt4Eof, node.h ListEnd).
constexpr int64_t kExt4Eof = 0x7fffffffffffffff;

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

ListingAhead::ListingAhead(const std::optional<cpu_set_t>& cpus, uid_t fsuid, gid_t fsgid,
                           std::function<void(uint64_t)> charge)
    : fsuid_(fsuid),
      fsgid_(fsgid),
      charge_(std::move(charge)),
      thread_(
          cpus, [this] { Loop(); }, "sentry-ahead") {}

ListingAhead::~ListingAhead() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.Join();
}

void ListingAhead::Queue(const std::shared_ptr<HostDir>& dir) { batch_.push_back(dir); }

void ListingAhead::Flush() {
  if (batch_.empty()) return;
  bool wake;
  {
    std::lock_guard<std::mutex> l(mu_);
    // Reversed: the batch's first is read first (the back is read next).
    for (auto it = batch_.rbegin(); it != batch_.rend(); ++it) {
      queue_.push_back(Queued{it->get(), *it, static_cast<uint8_t>((*it)->list_end)});
    }
    while (queue_.size() > kMaxQueued) queue_.pop_front();
    wake = sleeping_;
  }
  batch_.clear();
  // Only a sleeping thread costs the wake-up (a futex call).
  if (wake) wake_.notify_one();
}

std::optional<ListingAhead::Listing> ListingAhead::Take(const HostDir* dir) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
    if (it->key != dir) continue;
    bool same = !it->dir.expired();  // else dir is a new HostDir at that address
    Listing listing = std::move(it->listing);
    kept_bytes_ -= listing.records.size();
    kept_.erase(std::next(it).base());
    if (!same) break;
    ++counts_.hits;
    return listing;
  }
  // Not read yet: ListHost reads it now, so the thread need not.
  std::erase_if(batch_, [dir](const std::shared_ptr<HostDir>& d) { return d.get() == dir; });
  if (reading_ == dir) {
    reading_taken_ = true;
    ++counts_.late;
  }
  for (Queued& q : queue_) {
    if (q.key != dir) continue;
    q.key = nullptr;
    q.dir.reset();
    ++counts_.late;
  }
  return std::nullopt;
}

ListingAhead::Counts ListingAhead::counts() {
  std::lock_guard<std::mutex> l(mu_);
  return counts_;
}

bool ListingAhead::Read(HostDir& dir, Listing* out) {
  // As Vfs::ListHost reads it: the lazy open (the one name beneath the
  // parent, checked by the d_ino of "." in its first batch), then every
  // batch up to the end (ext4's EOF cookie, else getdents64's 0).
  UniqueFd owned;
  bool unchecked = false;
  int fd = dir.fd.OpenToRead(&owned, &unchecked);
  if (fd < 0) return false;
  using End = HostDir::ListEnd;
  if (out->list_end == static_cast<uint8_t>(End::kUnknown)) {
    // Asked here, for ListHost to keep (vfs_walk.cc ProbeListEnd).
    struct statfs sf;
    bool ext4 = fstatfs(fd, &sf) == 0 && sf.f_type == EXT4_SUPER_MAGIC;
    out->list_end = static_cast<uint8_t>(ext4 ? End::kExt4Cookie : End::kReadToZero);
  }
  const bool cookie = out->list_end == static_cast<uint8_t>(End::kExt4Cookie);
  constexpr size_t kBufSize = 32768;
  std::unique_ptr<char[]> buf(new char[kBufSize]);
  long n;
  while ((n = syscall(SYS_getdents64, fd, buf.get(), kBufSize)) > 0) {
    int64_t last_d_off = 0;
    uint64_t dot = 0;
    for (long off = 0; off < n;) {
      const auto* e = reinterpret_cast<const Dirent64*>(buf.get() + off);
      off += e->d_reclen;
      last_d_off = e->d_off;
      if (e->d_name[0] == '.' && e->d_name[1] == '\0') dot = e->d_ino;
    }
    if (unchecked) {
      // Replaced since its lookup: the directory is never opened again,
      // and ListHost finds it empty, as it would have.
      if (!dir.fd.Keep(&owned, dot)) return false;
      unchecked = false;
    }
    if (out->records.size() + static_cast<size_t>(n) > kMaxListingBytes) return false;
    out->records.insert(out->records.end(), buf.get(), buf.get() + n);
    if (cookie && last_d_off == kExt4Eof) return true;
  }
  return n == 0;
}

void ListingAhead::Loop() {
  // Without the notification thread's identity, nothing is read: Take
  // finds nothing, and ListHost reads every listing itself.
  if (!DropFsIdentity(fsuid_, fsgid_)) return;
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    while (!stop_ && queue_.empty()) {
      sleeping_ = true;
      wake_.wait(l);
      sleeping_ = false;
    }
    if (stop_) return;
    Queued next = std::move(queue_.back());
    queue_.pop_back();
    std::shared_ptr<HostDir> dir = next.key ? next.dir.lock() : nullptr;
    if (!dir) continue;  // taken meanwhile, or its node is gone
    reading_ = dir.get();
    reading_taken_ = false;
    l.unlock();
    Listing listing{{}, next.list_end};
    uint64_t cpu0 = ThreadCpuNs();
    bool ok = Read(*dir, &listing);
    if (charge_) charge_(ThreadCpuNs() - cpu0);
    l.lock();
    reading_ = nullptr;
    if (!ok || reading_taken_) continue;
    kept_bytes_ += listing.records.size();
    kept_.push_back(Kept{dir.get(), dir, std::move(listing)});
    ++counts_.read;
    while (kept_.size() > kMaxKept || kept_bytes_ > kMaxKeptBytes) {
      kept_bytes_ -= kept_.front().listing.records.size();
      kept_.pop_front();
    }
    // dir's last reference may be this one: let it go unlocked.
    l.unlock();
    dir.reset();
    l.lock();
  }
}

}  // namespace sentry::vfs
