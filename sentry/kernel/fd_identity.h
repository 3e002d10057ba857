// FdIdentity: which VFS object a guest fd stands for.
//
// Every fd the sentry donates is a real kernel object; the sentry remembers its
// host (st_dev, st_ino). To answer an fd-based call it takes a copy of the guest's
// fd (pidfd_getfd), fstats it and looks the pair up here. Identity travels with
// the kernel object, so dup, fork and fd passing need no bookkeeping.
#ifndef SENTRY_KERNEL_FD_IDENTITY_H_
#define SENTRY_KERNEL_FD_IDENTITY_H_

#include <sys/stat.h>

#include <map>
#include <string>
#include <utility>

#include "vfs/node.h"

namespace sentry {

struct OpenObject {
  vfs::NodeRef node;
  bool dir_token = false;  // a directory token: getdents64 position is its f_pos
  std::string path;        // the sandbox path it was opened by (/proc/PID/fd)
};

class FdIdentity final {
 public:
  void Register(const struct stat& host, OpenObject obj) {
    map_[{host.st_dev, host.st_ino}] = std::move(obj);
  }
  const OpenObject* Find(const struct stat& host) const {
    auto it = map_.find({host.st_dev, host.st_ino});
    return it == map_.end() ? nullptr : &it->second;
  }
  void Forget(const struct stat& host) { map_.erase({host.st_dev, host.st_ino}); }

 private:
  std::map<std::pair<dev_t, ino_t>, OpenObject> map_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_FD_IDENTITY_H_
