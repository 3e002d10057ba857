// Unix sockets bound to guest paths: the socket inode lives in the store, and
// the name the kernel keeps for it (what getsockname, getpeername, accept and
// recvfrom report) is the guest's own path, byte for byte.
//
// bind(2) records the sun_path it was given. So the bind is made by a short
// thread of its own that unshares its fs_struct and chroots into an empty
// scratch directory of the store, where it makes the directories the guest's
// path names (nothing else exists there: no symlink, no way out, and `..`
// stops at the chroot) and binds the socket to that very path. The inode is
// then linked into the store under a store name and the scratch is removed.
// Connecting needs no such care: the peer's name comes from the bound socket.
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "vfs/store.h"
#include "vfs/store_owner.h"

namespace sentry::vfs {
namespace {

// The directories a path's components name, outermost first ("a", "a/b" for
// "a/b/s.sock"; "/x" for "/x/s.sock").
std::vector<std::string> ParentPrefixes(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] == '/' && path[i - 1] != '/') out.push_back(path.substr(0, i));
  }
  return out;
}

// Runs in the binding thread: unshared fs, chrooted into scratch_fd.
int BindInScratch(int sock, const sockaddr_un& addr, socklen_t len, const std::string& path,
                  int scratch_fd, int store_fd, const std::string& store_name, uid_t uid,
                  gid_t gid) {
  if (unshare(CLONE_FS) < 0) return errno;
  AsOwner as(uid, gid);  // this thread ends with the bind
  if (fchdir(scratch_fd) < 0 || chroot(".") < 0 || chdir("/") < 0) return errno;
  std::vector<std::string> made;
  for (const std::string& dir : ParentPrefixes(path)) {
    if (mkdir(dir.c_str(), 0700) == 0) made.push_back(dir);
  }
  int err = 0;
  if (bind(sock, reinterpret_cast<const sockaddr*>(&addr), len) < 0) {
    err = errno;
  } else {
    if (linkat(AT_FDCWD, path.c_str(), store_fd, store_name.c_str(), 0) < 0) err = errno;
    unlink(path.c_str());
    // 0777 on the host: the guest's own mode bits are kept in the node.
    if (!err) fchmodat(store_fd, store_name.c_str(), 0777, 0);
  }
  for (auto it = made.rbegin(); it != made.rend(); ++it) rmdir(it->c_str());
  return err;
}

}  // namespace

SysResult<std::string> Store::BindSocket(int sock, const sockaddr_un& addr, socklen_t len) {
  if (len <= offsetof(sockaddr_un, sun_path)) return Errno{EINVAL};
  size_t max = std::min<size_t>(len - offsetof(sockaddr_un, sun_path), sizeof(addr.sun_path));
  std::string path(addr.sun_path, strnlen(addr.sun_path, max));
  if (path.empty()) return Errno{EINVAL};
  std::string name = "s" + std::to_string(next_++);
  std::string scratch = name + ".bind";
  {
    AsOwner as(uid_, gid_);
    if (mkdirat(dir_fd_.get(), scratch.c_str(), 0700) < 0) return Errno{errno};
  }
  int scratch_fd = openat(dir_fd_.get(), scratch.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  int err = scratch_fd < 0 ? errno : 0;
  if (scratch_fd >= 0) {
    std::thread t([&] {
      err = BindInScratch(sock, addr, len, path, scratch_fd, dir_fd_.get(), name, uid_, gid_);
    });
    t.join();
    close(scratch_fd);
  }
  {
    AsOwner as(uid_, gid_);
    unlinkat(dir_fd_.get(), scratch.c_str(), AT_REMOVEDIR);
  }
  if (err) return Errno{err};
  return name;
}

}  // namespace sentry::vfs
