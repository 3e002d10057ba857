#include "sentry/platform/unotify.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

namespace sentry {

bool Unotify::SetSyncWakeup() {
  return ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0;
}

int Unotify::Receive(seccomp_notif* req) {
  std::memset(req, 0, sizeof(*req));  // the kernel insists
  if (ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_RECV, req) < 0) return -errno;
  return 0;
}

int Unotify::Respond(uint64_t id, int64_t value, int error) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.val = value;
  resp.error = error;
  resp.flags = 0;  // the sentry answers itself
  if (ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0) return -errno;
  return 0;
}

int Unotify::RespondContinue(uint64_t id) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  if (ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0) return -errno;
  return 0;
}

bool Unotify::IdValid(uint64_t id) {
  return ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int Unotify::AddFdAt(uint64_t id, int src_fd, int target_fd, bool cloexec) {
  seccomp_notif_addfd add{};
  add.id = id;
  add.flags = SECCOMP_ADDFD_FLAG_SETFD;
  add.srcfd = static_cast<uint32_t>(src_fd);
  add.newfd = static_cast<uint32_t>(target_fd);
  add.newfd_flags = cloexec ? O_CLOEXEC : 0;
  int r = ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &add);
  return r < 0 ? -errno : r;
}

int Unotify::AddFd(uint64_t id, int src_fd, bool cloexec, bool send) {
  seccomp_notif_addfd add{};
  add.id = id;
  add.flags = send ? SECCOMP_ADDFD_FLAG_SEND : 0;
  add.srcfd = static_cast<uint32_t>(src_fd);
  add.newfd = 0;
  add.newfd_flags = cloexec ? O_CLOEXEC : 0;
  int r = ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &add);
  return r < 0 ? -errno : r;
}

}  // namespace sentry
