#include "vfs/host_dir_fd.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "vfs/node.h"

namespace sentry::vfs {

HostDirFd::HostDirFd(HostDirFd&& o) noexcept
    : fd_(o.fd_.exchange(-1)),
      failed_(o.failed_.load()),
      parent_(std::move(o.parent_)),
      name_(std::move(o.name_)),
      dev_(o.dev_),
      ino_(o.ino_) {}

HostDirFd& HostDirFd::operator=(HostDirFd&& o) noexcept {
  if (this == &o) return *this;
  int old = fd_.exchange(o.fd_.exchange(-1));
  if (old >= 0) close(old);
  failed_ = o.failed_.load();
  parent_ = std::move(o.parent_);
  name_ = std::move(o.name_);
  dev_ = o.dev_;
  ino_ = o.ino_;
  return *this;
}

HostDirFd& HostDirFd::operator=(UniqueFd fd) { return *this = HostDirFd(std::move(fd)); }

HostDirFd::~HostDirFd() {
  int fd = fd_.load();
  if (fd >= 0) close(fd);
}

HostDirFd HostDirFd::Lazy(std::shared_ptr<const HostDir> parent, std::string name, dev_t dev,
                          ino_t ino) {
  HostDirFd h;
  h.parent_ = std::move(parent);
  h.name_ = std::move(name);
  h.dev_ = dev;
  h.ino_ = ino;
  return h;
}

int HostDirFd::OpenLazily(int flags, bool check) const {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd =
      static_cast<int>(syscall(SYS_openat2, parent_->fd.get(), name_.c_str(), &how, sizeof(how)));
  if (fd < 0 || !check) return fd;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
    close(fd);
    errno = ESTALE;
    return -1;
  }
  return fd;
}

void HostDirFd::Fail(int err) const {
  // Replaced or gone: never tried again, so every later use is the same
  // EBADF rather than another directory. Running out of fds is not that.
  if (err != EMFILE && err != ENFILE && err != ENOMEM) failed_ = true;
}

int HostDirFd::get() const {
  int fd = fd_.load(std::memory_order_acquire);
  if (fd >= 0 || !parent_ || failed_.load(std::memory_order_relaxed)) return fd;
  int mine = OpenLazily(O_PATH, /*check=*/true);
  if (mine < 0) {
    Fail(errno);
    return -1;
  }
  int expected = -1;
  if (fd_.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) return mine;
  close(mine);  // another thread's open won
  return expected;
}

int HostDirFd::OpenToRead(UniqueFd* owned, bool* unchecked) const {
  *unchecked = false;
  int fd = fd_.load(std::memory_order_acquire);
  if (fd < 0 && parent_ && !failed_.load(std::memory_order_relaxed)) {
    // An O_RDONLY directory fd serves *at calls as O_PATH does, and its
    // position is no one else's: later listings open "." anew.
    int mine = OpenLazily(O_RDONLY, /*check=*/false);
    if (mine >= 0) {
      owned->Reset(mine);
      *unchecked = true;
      return mine;
    }
    if (errno != EACCES) {
      Fail(errno);
      return -1;
    }
    // Searchable but not readable by the sentry: an O_PATH fd for lookups.
  }
  fd = get();
  if (fd < 0) return -1;
  owned->Reset(openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return owned->get();
}

bool HostDirFd::Keep(UniqueFd* fd, uint64_t dot_ino) const {
  if (dot_ino != ino_) {
    struct stat st;
    if (fstat(fd->get(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
      Fail(ESTALE);
      return false;
    }
  }
  int expected = -1;
  if (fd_.compare_exchange_strong(expected, fd->get(), std::memory_order_acq_rel)) fd->Release();
  return true;  // else another open won: *fd stays the caller's, to read and close
}

}  // namespace sentry::vfs
