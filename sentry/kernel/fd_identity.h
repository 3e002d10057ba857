// FdIdentity: which VFS object a guest fd stands for.
//
// Every fd the sentry donates is a real kernel object; the sentry remembers its
// host (st_dev, st_ino). To answer an fd-based call it takes a copy of the guest's
// fd (pidfd_getfd), fstats it and looks the pair up here. Identity travels with
// the kernel object, so dup, fork and fd passing need no bookkeeping.
//
// An entry is never forgotten while a guest process holds its object: the
// sentry cannot see a guest close an fd, so when the table grows past a
// high-water mark it sweeps, keeping exactly the objects some guest task's fd
// table still holds (held(), read from /proc/TID/fd) and dropping the rest.
// If the table is still full after a sweep (or held() could not be read), the
// call that would donate one more object fails with ENFILE, the errno Linux
// gives at its own system-wide file limit: the guest's call fails, never the
// sentry, and no entry a guest still holds is ever dropped to make room.
//
// What a sweep can miss is an object in flight in a unix socket's queue
// (SCM_RIGHTS sent, not yet received) or moved between two tasks while they
// are read: its entry may go although the guest will hold it again. That is
// why a lookup that misses must fail closed (syscalls/common.cc GetFd): an
// unknown fd on a host or store file system is refused, never answered from
// the host object.
//
// Memory: at most kMaxEntries entries and kMaxBytes charged bytes (a fixed
// cost per entry plus its path and, for directory tokens, the getdents64
// cursor name), so a guest cannot grow the sentry with long paths either;
// and at most kMaxDataBytes of generated memfd text held by the guest (past
// that the open fails with ENOMEM).
//
// Not thread-safe: used under the kernel's mutex. Find's pointer stays valid
// until the next Register.
#ifndef SENTRY_KERNEL_FD_IDENTITY_H_
#define SENTRY_KERNEL_FD_IDENTITY_H_

#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sentry/base/sys_result.h"
#include "vfs/node.h"

namespace sentry {

struct OpenObject {
  vfs::NodeRef node;
  bool dir_token = false;  // a directory token: getdents64 position is its f_pos
  std::string path;        // the sandbox path it was opened by (/proc/PID/fd)
  // An object the sentry may keep a reference to (fd_holds.h): a token (one
  // description per object, no data, nothing that waits for its close) or
  // a read-only lower file (shared, below).
  bool holdable = false;
  // Holdable, yet not a token: a lower regular file, of which every open
  // makes another description (read-only, all of them). Only its donations
  // are held (fd_holds.h).
  bool shared = false;
  // Directory tokens: the last name getdents64 returned (at most NAME_MAX
  // bytes) and the position it left, so that a listing resumes after that
  // name even if entries before it went meanwhile (mutable: a cursor, not
  // part of the identity).
  mutable std::string cursor_name;
  mutable off_t cursor_pos = -1;
  // Directory tokens: the id of the sentry's lock on it, which the guest
  // reads to find the token in the fast-metadata region (fastmeta/region.h);
  // 0 until first published.
  mutable uint64_t fast_meta_id = 0;
  // Bytes of a memfd the sentry wrote for it (a /proc file's text): memory
  // made by the sentry, charged to the sentry's cgroup and not the guest's,
  // for as long as the guest holds the object.
  size_t data_bytes = 0;
};

class FdIdentity final {
 public:
  struct Key {
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const Key&) const = default;
    bool operator<(const Key& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
  };
  static Key KeyOf(const struct stat& st) { return {st.st_dev, st.st_ino}; }

  // The objects every guest task holds an fd to now, sorted; nullopt when
  // they could not all be read (then nothing is dropped).
  using HeldKeys = std::function<std::optional<std::vector<Key>>()>;

  // 32,768 objects: more than the guest's default limits let a real program
  // hold (nofile 1024 per process; a few hundred fds in a busy interpreter),
  // and at kEntryBytes each about 8 MiB: a quarter of the sentry's 64 MiB
  // budget for a sandbox.
  static constexpr size_t kMaxEntries = 1 << 15;
  // Paths are up to PATH_MAX: without a byte cap 32,768 of them would be
  // 128 MiB. 16 MiB allows the full count at an average path of ~250 bytes.
  static constexpr size_t kMaxBytes = 16 << 20;
  // What one entry costs beyond its strings: the hash node, key, OpenObject
  // and the string headers, rounded up (measured: about 170 bytes).
  static constexpr size_t kEntryBytes = 256;
  static constexpr size_t kCursorBytes = 256;  // NAME_MAX + 1
  // Generated files (/proc) the guest holds open at once: a program reads
  // them and closes them; 32 MiB is two of the largest (a 16 MiB maps).
  static constexpr size_t kMaxDataBytes = 32 << 20;
  // No sweep before this many entries: a sweep reads every guest fd, so it
  // is kept rare (its cost is paid back over at least this many opens).
  static constexpr size_t kSweepFloor = 4096;
  // While full, a sweep at most this often: a guest that holds the cap and
  // keeps opening must not make the sentry read 32,768 fds on every call.
  static constexpr std::chrono::milliseconds kFullSweepInterval{200};

  FdIdentity() = default;
  FdIdentity(const FdIdentity&) = delete;
  FdIdentity& operator=(const FdIdentity&) = delete;

  void set_held_keys(HeldKeys held) { held_ = std::move(held); }

  // Remembers obj as the object behind host; ENFILE when the table is full
  // of objects the guest still holds.
  SysStatus Register(const struct stat& host, OpenObject obj);
  const OpenObject* Find(const struct stat& host) const;

  // Objects the caller of the run handed the guest (its stdio: a tty, a
  // pipe, /dev/null; an engine's preserved fds): not the VFS's, answered
  // from the host object. Kept for the whole run (a few: 3 + kMaxExtraFds
  // for the run, 3 per exec'd process).
  void TrustCallerObject(const struct stat& host) { caller_.insert(KeyOf(host)); }
  bool IsCallerObject(const struct stat& host) const { return caller_.count(KeyOf(host)) > 0; }

  size_t size() const { return map_.size(); }
  size_t bytes() const { return bytes_; }
  size_t data_bytes() const { return data_bytes_; }
  uint64_t sweeps() const { return sweeps_; }

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.ino * 0x9E3779B97F4A7C15ull ^ k.dev);
    }
  };
  static size_t Cost(const OpenObject& o) {
    return kEntryBytes + o.path.size() + (o.dir_token ? kCursorBytes : 0);
  }
  // Drops every entry no guest task holds; false if held() failed.
  bool Sweep();

  std::unordered_map<Key, OpenObject, KeyHash> map_;
  std::unordered_set<Key, KeyHash> caller_;
  size_t bytes_ = 0;
  size_t data_bytes_ = 0;
  size_t sweep_at_ = kSweepFloor;
  std::chrono::steady_clock::time_point last_full_sweep_{};
  uint64_t sweeps_ = 0;
  HeldKeys held_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_FD_IDENTITY_H_
