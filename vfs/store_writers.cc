// Store::NoWriter: whether a store file has a writer anywhere.
//
// The kernel knows: fcntl(F_SETLEASE, F_RDLCK) on a read-only description
// fails with EAGAIN exactly while the inode is open for writing by anyone
// (fs/locks.c check_conflicting_open, inode_is_open_for_write; a writable
// shared mapping keeps its file open for writing, so it counts). The lease
// is let go at once: held, the sentry's own next write-open of the file
// would break it and wait for it. (Its F_UNLCK also drops the owner the
// lease gave the description, f_delown: a guest's description probed
// before its donation keeps F_GETOWN 0.) A lease needs the file's owner as fsuid
// or CAP_LEASE in the initial user namespace: the sentry tries as itself
// first (root, or a rootless run's user, the store's owner) and, refused
// once, as the owner's uid from then on (store_owner.h). Any other failure
// (a file system without leases, leases disabled) just says "a writer".
#include <fcntl.h>
#include <sys/statvfs.h>

#include <cerrno>

#include "sentry/base/unique_fd.h"
#include "vfs/store.h"
#include "vfs/store_owner.h"

namespace sentry::vfs {
namespace {

bool ReadLeaseTaken(int fd) {
  if (fcntl(fd, F_SETLEASE, F_RDLCK) != 0) return false;
  fcntl(fd, F_SETLEASE, F_UNLCK);
  return true;
}

}  // namespace

bool Store::NoWriter(const std::string& name, int fd) {
  if (noatime_ < 0) {
    // A native read changes the answer (its atime) unless the mount says
    // noatime: then nothing is published (the trapped stat reads it anew).
    struct statvfs sv;
    noatime_ = fstatvfs(dir_fd_.get(), &sv) == 0 && (sv.f_flag & ST_NOATIME) ? 1 : 0;
  }
  if (noatime_ == 0 || name.empty()) return false;
  UniqueFd own;
  if (fd < 0) {
    // O_NONBLOCK: a guest's write lease on the file fails this open at once
    // (EWOULDBLOCK) instead of making the sentry wait for its break.
    own.Reset(openat(dir_fd_.get(), name.c_str(),
                     O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
    if (!own) return false;
    fd = own.get();
  }
  if (!lease_as_owner_) {
    if (ReadLeaseTaken(fd)) return true;
    if (errno != EACCES) return false;
    lease_as_owner_ = true;
  }
  AsOwnerUid as(uid_);
  return ReadLeaseTaken(fd);
}

}  // namespace sentry::vfs
