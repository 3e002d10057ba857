// StoreStash: store entries made ahead, on a thread of their own.
//
// Two kinds of store entry cost the guest most to make while it waits:
// - directory tokens (see Store::NewDirToken): mkdir, open and rmdir, seven
//   of them in every `python3 -c pass`, 30-35 µs each here;
// - empty store files for the files the guest creates: an open with O_CREAT,
//   a chmod and an fstat, under the store owner's file-system identity. The
//   file stays open write-only: a create that asks for just that (Python's
//   "wb", fopen's "w") is donated this description, with its identity,
//   instead of opening and fstating the name while the guest waits.
// Taking the owner's identity and giving it back is four setfsuid/setfsgid
// calls, each a new set of credentials: 13-15 µs here (bench/README.md),
// more than the rest of a create. The stash's thread takes the owner's
// identity once, for good (Store::StartStash), makes both kinds beforehand,
// on another CPU when there is one, and keeps a few in hand; an open of a
// directory or a create takes one. When the guest is quicker than the
// thread, the caller makes its own, as without a stash.
//
// Its thread also removes the files whose last name the guest removed
// (Defer), off the guest's path and without a credential switch. Their data
// stays on the store's tmpfs until the thread has run, so at most
// kMaxDeferredBytes wait at once: beyond that Defer refuses and the caller
// removes the file itself. (A guest that deletes a file and writes at once
// at the very cap of --disk may meet ENOSPC up to that much early.)
//
// The files left unused when the stash stops are removed by its thread, and
// so are those still waiting.
#ifndef SENTRY_VFS_STORE_STASH_H_
#define SENTRY_VFS_STORE_STASH_H_

#include <sched.h>
#include <sys/stat.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sentry/base/placed_thread.h"
#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry::vfs {

// A directory token (Store::NewDirToken) and its identity, taken by fstat
// where it was made: on the stash's thread when the stash made it, so that
// the donation does not fstat it again while the guest waits.
struct DirToken {
  UniqueFd fd;
  struct stat st {};
  // Non-zero: the sentry's POSIX read lock on byte lock_id of fd, which
  // names the token to the guest's fast-metadata library, set where it was
  // made (Store::set_token_locks), so that its donation does not set it
  // while the guest waits.
  uint64_t lock_id = 0;
  explicit operator bool() const { return static_cast<bool>(fd); }
};

// An empty store file made ahead: its name, a write-only description of it
// (O_WRONLY, no other status flag) and its identity. The description is the
// only one until taken, and no guest name leads to the file yet, so nothing
// can observe it (a writable description makes an exec ETXTBSY: the taker
// either donates it or closes it within its call).
struct StashFile {
  std::string name;
  UniqueFd wronly;
  struct stat st {};
};

class StoreStash final {
 public:
  // What the stash's thread calls. start: once, before it makes anything
  // (Store takes the owner's identity there); token: one new directory
  // token; file: one new empty store file, its name (null: the stash keeps
  // no files); drop: removes a file made and never taken.
  struct Makers {
    std::function<void()> start;
    std::function<SysResult<DirToken>()> token;
    std::function<SysResult<StashFile>()> file;
    std::function<void(const std::string&)> drop;
  };

  // The thread runs on `cpus` if given (else where its maker's runs) and
  // makes nothing until Resume is called (the thread is made before the store
  // can make entries, while the sentry waits for the sandbox's mount view).
  StoreStash(Makers makers, const std::optional<cpu_set_t>& cpus);
  ~StoreStash();  // stops the thread, closes the tokens and drops the files left
  StoreStash(const StoreStash&) = delete;
  StoreStash& operator=(const StoreStash&) = delete;

  // A token made ahead, or one with an invalid fd if none is in hand.
  DirToken TakeToken();
  // An empty file made ahead, or nullopt if none is in hand.
  std::optional<StashFile> TakeFile();
  // Lets the thread make entries (a mutex orders it after the store's setup).
  void Resume();
  // Has the thread remove the file `name`, which holds `bytes` of the
  // store's space; false (nothing done) when that would make more than
  // kMaxDeferredBytes wait, or the thread has not started.
  bool Defer(std::string name, uint64_t bytes);
  // Has the thread close fd (a released token's reference: FdHolds::
  // set_close_later) when it next wakes for anything: a token taken wakes
  // it every kHigh - kLow donations, so the closes come in batches and add
  // no wake-up of their own (handing each over with one cost more than the
  // close: bench/README.md, "Fast paths, A/B"); past kMaxClosing waiting,
  // it is woken for them. Closed at once if the thread has not started or
  // has stopped.
  void CloseLater(UniqueFd fd);

  static constexpr size_t kLow = 4;    // refilled when fewer are left...
  static constexpr size_t kHigh = 16;  // ...up to this many
  static constexpr uint64_t kMaxDeferredBytes = 1 << 20;
  static constexpr size_t kMaxClosing = 64;

 private:
  bool Low() const;
  void Loop();

  Makers makers_;
  std::mutex mu_;
  std::condition_variable low_;
  std::vector<DirToken> tokens_;
  std::vector<StashFile> files_;
  std::vector<std::string> doomed_;  // waiting for Defer's removal
  std::vector<UniqueFd> closing_;    // waiting for CloseLater's close
  uint64_t doomed_bytes_ = 0;
  bool stop_ = false;
  bool resumed_ = false;
  PlacedThread thread_;  // last: it runs Loop on the members above
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_STORE_STASH_H_
