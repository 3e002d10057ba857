// HostDirFd: the host directory fd of a lower directory node (HostDir::fd),
// opened when something first uses it rather than when the node is made.
//
// A listing's fill (syscalls/fast_meta_publish.h) makes a node for every
// subdirectory of a listed directory, for the stat a walk makes next; most
// are never walked through (Python lists dist-packages and stats none of its
// ~140 packages), and an eager fd cost each of them an openat2. A lazy one is
// opened on first use exactly as the eager one was: the one name beneath its
// parent's fd, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
// so nothing it reaches is outside the parent's tree; and only if it is
// still the inode the node was made from (st_dev and st_ino by an fstat, or
// the d_ino of "." in the listing a first open reads): a component
// replaced since the lookup (by a symlink, another directory, a file) is
// never opened, and the node then reads as an empty, unsearchable directory
// (every *at call on fd -1 fails with EBADF; a listing is empty).
//
// Thread-safe: the fd is published by compare-and-swap, so two first uses
// racing open twice and keep one.
#ifndef SENTRY_VFS_HOST_DIR_FD_H_
#define SENTRY_VFS_HOST_DIR_FD_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>

#include "sentry/base/unique_fd.h"

namespace sentry::vfs {

struct HostDir;

class HostDirFd final {
 public:
  HostDirFd() = default;
  // An fd opened already (a lower root, a -v mount, a :rw directory).
  HostDirFd(UniqueFd fd) : fd_(fd.Release()) {}  // NOLINT: implicit, as HostDir{fd, ...}
  HostDirFd(HostDirFd&& o) noexcept;
  HostDirFd& operator=(HostDirFd&& o) noexcept;
  HostDirFd& operator=(UniqueFd fd);
  HostDirFd(const HostDirFd&) = delete;
  HostDirFd& operator=(const HostDirFd&) = delete;
  ~HostDirFd();

  // name in parent's directory, which a host lookup found to be the
  // directory (dev, ino): opened at the first get() or OpenToRead().
  static HostDirFd Lazy(std::shared_ptr<const HostDir> parent, std::string name, dev_t dev,
                        ino_t ino);

  // The directory's fd (O_PATH, or O_RDONLY if a listing opened it first);
  // -1 when it could not be opened (see above).
  int get() const;
  // An fd to read the directory's listing from, at position 0. If the
  // directory is open already, a fresh open of "." in *owned. Else the open
  // that reads it (O_RDONLY) is to become its fd too, once checked: it is
  // in *owned, *unchecked is set, and the caller hands it to Keep with the
  // d_ino of the listing's "." (a getdents64 answers for the inode it read,
  // where an fstat would cost one more call). -1 if none can be opened.
  int OpenToRead(UniqueFd* owned, bool* unchecked) const;
  // Keeps *fd (OpenToRead's unchecked open) as the directory's fd if it is
  // the inode looked up: dot_ino (0 if "." was not seen) or else an fstat
  // says so. False, and the directory is never opened again, if not.
  bool Keep(UniqueFd* fd, uint64_t dot_ino) const;
  // Whether the fd is open now (tests, and what a budget would count).
  bool opened() const { return fd_.load(std::memory_order_acquire) >= 0; }

 private:
  // The one name beneath the parent; checked by an fstat if check.
  int OpenLazily(int flags, bool check) const;
  void Fail(int err) const;

  mutable std::atomic<int> fd_{-1};
  mutable std::atomic<bool> failed_{false};
  std::shared_ptr<const HostDir> parent_;  // null: not lazy
  std::string name_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_HOST_DIR_FD_H_
