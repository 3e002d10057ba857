// Unix sockets bound to guest paths: the socket inode lives in the store, and
// the name the kernel keeps for it (what getsockname, getpeername, accept and
// recvfrom report) is the guest's own path, byte for byte.
//
// bind(2) records the sun_path it was given. So the bind is made by a short
// thread of its own that unshares its fs_struct and chroots into an empty
// scratch directory of the store, where it makes the directories the guest's
// path names (nothing else exists there: no symlink, no way out, and `..`
// stops at the chroot) and binds the socket to that very path. The inode is
// then linked into the store under a store name and the scratch is removed
// (without root, in a forked child: see BindInChild).
// Connecting needs no such care: the peer's name comes from the bound socket.
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
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

// Without root the sentry has no CAP_SYS_CHROOT: the same steps run in a
// forked child that first makes a user namespace of its own, where it has
// that capability (chroot asks for it in the caller's own namespace). Its
// kuid is unchanged (no map is written), so what it makes is the caller's,
// as the thread's would be, and no capability of that namespace reaches an
// inode (their owners are not mapped there). The child allocates nothing
// (the fork copied a threaded process) and reports its errno through a pipe,
// since another thread of the sentry may reap it first.
int BindInChild(int sock, const sockaddr_un& addr, socklen_t len, const std::string& path,
                int scratch_fd, int store_fd, const std::string& store_name) {
  std::vector<std::string> dirs = ParentPrefixes(path);
  std::vector<char> made(dirs.size(), 0);
  int report[2];
  if (pipe2(report, O_CLOEXEC) < 0) return errno;
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(report[0]);
    close(report[1]);
    return err;
  }
  if (pid == 0) {
    int err = 0;
    if (unshare(CLONE_NEWUSER) < 0 || fchdir(scratch_fd) < 0 || chroot(".") < 0 || chdir("/") < 0) {
      err = errno;
    } else {
      for (size_t i = 0; i < dirs.size(); ++i) made[i] = mkdir(dirs[i].c_str(), 0700) == 0;
      if (bind(sock, reinterpret_cast<const sockaddr*>(&addr), len) < 0) {
        err = errno;
      } else {
        if (linkat(AT_FDCWD, path.c_str(), store_fd, store_name.c_str(), 0) < 0) err = errno;
        unlink(path.c_str());
        if (!err) fchmodat(store_fd, store_name.c_str(), 0777, 0);
      }
      for (size_t i = dirs.size(); i-- > 0;) {
        if (made[i]) rmdir(dirs[i].c_str());
      }
    }
    (void)!write(report[1], &err, sizeof(err));
    _exit(0);
  }
  close(report[1]);
  int err = EIO;  // the child died before its report
  while (read(report[0], &err, sizeof(err)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
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
  if (scratch_fd >= 0 && geteuid() != 0) {
    err = BindInChild(sock, addr, len, path, scratch_fd, dir_fd_.get(), name);
    close(scratch_fd);
  } else if (scratch_fd >= 0) {
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
