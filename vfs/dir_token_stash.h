// DirTokenStash: directory tokens made ahead, on a thread of their own.
//
// A directory the guest opens is donated as a token (see Store::NewDirToken):
// made with mkdir, open and rmdir under the store's owner, eleven syscalls
// and 30-35 µs each here, seven of them in every `python3 -c pass`, all while
// the guest waits. The stash's thread makes them beforehand, on another CPU
// when there is one, and keeps a few in hand; a directory open takes one.
#ifndef SENTRY_VFS_DIR_TOKEN_STASH_H_
#define SENTRY_VFS_DIR_TOKEN_STASH_H_

#include <sched.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "sentry/base/placed_thread.h"
#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry::vfs {

class DirTokenStash final {
 public:
  // make: one new token (Store::MakeDirToken), called on the stash's thread
  // once Resume is (the thread is made before the store can make tokens, while
  // the sentry waits for the sandbox's mount view). The thread runs on `cpus`
  // if given (else where its maker's runs).
  DirTokenStash(std::function<SysResult<UniqueFd>()> make, const std::optional<cpu_set_t>& cpus);
  ~DirTokenStash();  // stops the thread and closes the tokens left
  DirTokenStash(const DirTokenStash&) = delete;
  DirTokenStash& operator=(const DirTokenStash&) = delete;

  // A token made ahead, or an invalid fd if none is in hand.
  UniqueFd Take();
  // Lets the thread make tokens (a mutex orders it after the store's setup).
  void Resume();

  static constexpr size_t kLow = 4;    // refilled when fewer are left...
  static constexpr size_t kHigh = 16;  // ...up to this many

 private:
  void Loop();

  std::function<SysResult<UniqueFd>()> make_;
  std::mutex mu_;
  std::condition_variable low_;
  std::vector<UniqueFd> tokens_;
  bool stop_ = false;
  bool resumed_ = false;
  PlacedThread thread_;  // last: it runs Loop on the members above
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_DIR_TOKEN_STASH_H_
