// FdIdentity: which VFS object a guest fd stands for.
//
// Every fd the sentry donates is a real kernel object; the sentry remembers its
// host (st_dev, st_ino). To answer an fd-based call it takes a copy of the guest's
// fd (pidfd_getfd), fstats it and looks the pair up here. Identity travels with
// the kernel object, so dup, fork and fd passing need no bookkeeping.
//
// The sentry cannot see a guest close an fd, and some objects are fresh on
// every open (directory tokens, /proc memfds): the table keeps the most recent
// kMaxEntries objects, so its memory stays bounded whatever the guest does. The
// guest cannot hold more fds than that at once under its default limits.
#ifndef SENTRY_KERNEL_FD_IDENTITY_H_
#define SENTRY_KERNEL_FD_IDENTITY_H_

#include <sys/stat.h>

#include <deque>
#include <map>
#include <string>
#include <utility>

#include "vfs/node.h"

namespace sentry {

struct OpenObject {
  vfs::NodeRef node;
  bool dir_token = false;  // a directory token: getdents64 position is its f_pos
  std::string path;        // the sandbox path it was opened by (/proc/PID/fd)
  // Directory tokens: the last name getdents64 returned and the position it
  // left, so that a listing resumes after that name even if entries before it
  // went meanwhile (mutable: a cursor, not part of the identity).
  mutable std::string cursor_name;
  mutable off_t cursor_pos = -1;
};

class FdIdentity final {
 public:
  static constexpr size_t kMaxEntries = 1 << 16;

  void Register(const struct stat& host, OpenObject obj) {
    Key key{host.st_dev, host.st_ino};
    auto [it, fresh] = map_.insert_or_assign(key, std::move(obj));
    if (!fresh) return;
    order_.push_back(key);
    if (order_.size() > kMaxEntries) {
      map_.erase(order_.front());
      order_.pop_front();
    }
  }
  const OpenObject* Find(const struct stat& host) const {
    auto it = map_.find({host.st_dev, host.st_ino});
    return it == map_.end() ? nullptr : &it->second;
  }
  size_t size() const { return map_.size(); }

 private:
  using Key = std::pair<dev_t, ino_t>;
  std::map<Key, OpenObject> map_;
  std::deque<Key> order_;  // keys in the order they were first registered
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_FD_IDENTITY_H_
