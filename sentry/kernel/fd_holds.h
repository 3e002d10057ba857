// FdHolds: donated tokens and read-only system files the sentry keeps open,
// so that a guest fd's identity costs one kcmp(KCMP_FILE) instead of
// pidfd_getfd + fstat + close.
//
// FdIdentity answers "which object is behind this guest fd" from a host copy
// of the fd. Here the sentry keeps its own reference to the very open file
// description it donated, and remembers (process, guest fd) -> that
// reference as a hint. A hinted call asks the kernel whether the guest's fd
// is still that description (kcmp compares descriptions, the struct file,
// not inodes); only then is the held object's identity used. Any other
// answer (a different description, an fd closed, kcmp unavailable) falls
// back to the copy, so a hint is never trusted: dup, fork and fd passing need
// no bookkeeping to stay correct, only a first slow call in the new process
// or under the new number, which hints it again.
//
// What may be held: tokens (a directory's getdents token, an O_PATH
// stand-in) and read-only descriptions of lower-layer regular files; never a
// FIFO, a socket, a device, a /proc memfd, an upper file or a writable
// description. A reference the sentry keeps prolongs its description's life
// past the guest's last close, which Linux lets the guest observe through
// whatever belongs to the description: a pipe's or FIFO's EOF, a socket's
// shutdown, a tty's hangup, flock and OFD locks and leases; for a writable
// file also ETXTBSY at its exec, and for an upper file the store's bytes of
// a file unlinked (kept past the budget). A token is an inode of the store that only its one
// donation ever opened (made, opened and removed in one step: store_stash.h), so no other
// description of it can exist: a lock on it conflicts with nothing, and nothing waits for its
// close. (With --fast-metadata the sentry itself holds a POSIX read lock on
// one byte of each held directory token, which names the token to the
// guest's library: syscalls/fast_meta_publish.h. A guest's F_GETLK on a
// directory fd reports it; a directory fd is read-only, so no lock the
// guest can take conflicts with it.)
//
// A lower file is a shared inode: every open makes a description of its own
// (Keep(shared): the newest donation is held, the one a program fstats
// next), and what a held one could carry past its close is a lock or a
// lease. The calls that take one (flock; fcntl's F_OFD_SETLK, F_OFD_SETLKW,
// F_SETLEASE) trap (syscalls/sys_locks.cc): Refuse lets go of the object's
// reference before the kernel runs the call, and no description of that
// object is held again, so no lock taken in the guest is ever on a
// description the sentry keeps. (POSIX locks, F_SETLK, belong to the
// process, not the description: the sentry's reference carries none.) Only
// donations hold a lower file: a copy seen in GetFd is never kept, so a
// description whose reference was let go is not taken back. A lock a racing
// thread moves (dup2) onto another held description between the trap and
// the kernel's run stays until the sweep below finds that one closed: the
// guest's own lock, on a file it may read.
//
// Bounds: the sentry cannot see a guest close an fd, so every so many
// Keeps it sweeps: it asks the kernel (kcmp) of each reference whether it is
// still open in the guest under the number it was donated as, and closes
// those that are not. (One whose number is seen holding another description
// first, a donation or a proven call under it, or a hint's kcmp that missed
// there, is let go then, without the sweep's kcmp: SetHint, Missed.) The
// sweep comes once max(kSweepEvery, the references
// left by the last sweep) Keeps have passed, so it costs 1 + live/that
// kcmp calls per Keep (1.2 for a find, whose open directories are a few;
// at most 2), where probing two references at each Keep cost 2: a guest
// that opens and closes directories in a loop leaves the sentry at most
// kSweepEvery references more than it keeps open, not a growing pile
// (redteam_resources_test's churn allows 32 fds). At most kMaxHeld
// references per sandbox in any case, the oldest closed first; kMaxHints
// hints, all dropped past that. Dropping either only costs speed. Not
// thread-safe: used under the kernel's mutex.
#ifndef SENTRY_KERNEL_FD_HOLDS_H_
#define SENTRY_KERNEL_FD_HOLDS_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sentry/base/unique_fd.h"

namespace sentry {

class FdHolds final {
 public:
  // 64 fds per sandbox: a find or os.walk holds its path's directories,
  // a dozen or two; an interpreter a handful. The sentry's own table is
  // reserved at 4096 (base/fd_table.h), and a warm pool keeps several
  // sandboxes per process.
  static constexpr size_t kMaxHeld = 64;
  // Keeps between two sweeps, at least (see above).
  static constexpr size_t kSweepEvery = 16;
  static constexpr size_t kMaxHints = 4 * kMaxHeld;
  // Lower files a lock was taken on, never held again. Past this many, no
  // lower file is held any more in this sandbox: the set stays bounded, and
  // a locking program only loses the cheap fstat.
  static constexpr size_t kMaxRefused = 256;

  struct Held {
    int fd = -1;        // the sentry's reference to the donated description
    struct stat st {};  // its identity (dev, ino) as at donation
  };

  FdHolds() : slots_(kMaxHeld) {}
  FdHolds(const FdHolds&) = delete;
  FdHolds& operator=(const FdHolds&) = delete;

  // --no-fast-fd-identity: nothing is held, every call takes the copy.
  void set_enabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }
  // Where a released token's reference goes to be closed off the caller's
  // thread (vfs::Store::CloseLater; null: closed at once). Its close is the
  // last of a removed directory's (a dentry and inode freed, the sentry's
  // lock on it dropped): 9 % of the notification thread's time in a find.
  // Never a shared object's: a flock on a lower file's description must go
  // when the guest's last fd of it does (Refuse).
  void set_close_later(std::function<void(UniqueFd)> f) { close_later_ = std::move(f); }

  // Keeps fd (a token whose identity is st), hinted for (tgid, guest_fd).
  // An object already held is not held twice: the hint goes to it. A shared
  // object (a lower regular file: other descriptions of it exist) replaces
  // the reference held for it instead, unless it was refused.
  void Keep(UniqueFd fd, const struct stat& st, pid_t tgid, int guest_fd, bool shared = false);
  // A lock or lease is about to be taken on a description of st's object:
  // its reference goes, and no description of it is kept again.
  void Refuse(const struct stat& st);
  // Whether any shared object was ever kept (else Refuse has nothing to do).
  bool kept_shared() const { return kept_shared_; }
  // The reference hinted for (tgid, guest_fd), if any. Valid until the next
  // Keep.
  std::optional<Held> Hinted(pid_t tgid, int guest_fd) const;
  // The reference held for st's object, if any.
  std::optional<Held> OfObject(const struct stat& st) const;
  // Points (tgid, guest_fd) at the reference held for st's object, if any.
  bool Hint(pid_t tgid, int guest_fd, const struct stat& st);
  // The reference the last Keep in tgid kept or hinted, at most once per
  // Keep: a guess for an fd not hinted yet, which one kcmp checks. A
  // program often moves a directory fd it was just given to another number
  // (gnulib's fts: F_DUPFD_CLOEXEC, then close) and calls with that one
  // next; the guess saves its copy (pidfd_getfd, fstat, close and the
  // token's lock set again). Once per Keep, so a program whose unhinted
  // fds are something else pays at most one kcmp per donation.
  std::optional<Held> Guess(pid_t tgid);
  void Unhint(pid_t tgid, int guest_fd) { hints_.erase(HintKey(tgid, guest_fd)); }
  // The hinted reference's kcmp said (tgid, guest_fd) is another description
  // now: the hint goes, and so does the reference if that is where it was
  // last seen (what the sweep's kcmp of it would decide, one call sooner).
  void Missed(pid_t tgid, int guest_fd);

  size_t held() const { return by_object_.size(); }
  // Calls answered by the held reference, and hinted calls that missed.
  uint64_t hits = 0, misses = 0;

 private:
  struct Slot {
    UniqueFd fd;
    struct stat st {};
    uint32_t gen = 0;  // bumped when the slot is reused: old hints miss
    // Where it was last seen in the guest (donated or hinted).
    pid_t tgid = 0;
    int guest_fd = -1;
    bool shared = false;  // a lower file's description (Keep's shared)
  };
  struct HintSlot {
    uint32_t slot;
    uint32_t gen;
  };
  struct ObjectKey {
    dev_t dev;
    ino_t ino;
    bool operator==(const ObjectKey&) const = default;
  };
  struct ObjectHash {
    size_t operator()(const ObjectKey& k) const {
      return std::hash<uint64_t>()(k.ino * 0x9E3779B97F4A7C15ull ^ k.dev);
    }
  };
  static uint64_t HintKey(pid_t tgid, int guest_fd) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(tgid)) << 32) |
           static_cast<uint32_t>(guest_fd);
  }
  void SetHint(pid_t tgid, int guest_fd, uint32_t slot);
  void Guessable(pid_t tgid, uint32_t slot);
  void Release(uint32_t slot);
  // Whether the guest still holds slot's description as slot.guest_fd.
  bool StillHeld(const Slot& slot) const;

  bool enabled_ = true;
  std::function<void(UniqueFd)> close_later_;
  std::vector<Slot> slots_;
  uint32_t next_ = 0;                 // where the next Keep looks for a free slot (the oldest)
  size_t keeps_ = 0;                  // Keeps since the last sweep
  size_t sweep_after_ = kSweepEvery;  // ...and how many make the next
  pid_t self_ = 0;                    // the sentry's pid, for kcmp
  std::unordered_map<ObjectKey, uint32_t, ObjectHash> by_object_;
  std::unordered_map<uint64_t, HintSlot> hints_;
  std::unordered_set<ObjectKey, ObjectHash> refused_;
  // The last Keep's slot (Guess), and whether it may still be guessed.
  pid_t last_tgid_ = 0;
  uint32_t last_slot_ = 0;
  uint32_t last_gen_ = 0;
  bool guessable_ = false;
  bool shared_off_ = false;  // refused_ overflowed: no shared object is kept
  bool kept_shared_ = false;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_FD_HOLDS_H_
