// Unotify: the seccomp user-notification listener, the sentry's side of the
// syscall wall. Only this file and the notification loop see seccomp_notif.
#ifndef SENTRY_PLATFORM_UNOTIFY_H_
#define SENTRY_PLATFORM_UNOTIFY_H_

#include <linux/seccomp.h>

#include <cstdint>

#include "sentry/base/unique_fd.h"

namespace sentry {

class Unotify final {
 public:
  explicit Unotify(UniqueFd fd) : fd_(std::move(fd)) {}

  // Switches the listener to synchronous wake-up (Linux 6.6+): the guest thread
  // hands its CPU to the sentry instead of waking it elsewhere. Returns whether
  // the kernel accepted it.
  bool SetSyncWakeup();
  // Blocks for the next notification. 0, or -errno (EINTR when interrupted,
  // ENOENT when the notifying task died before it was received).
  int Receive(seccomp_notif* req);
  // Answers a notification with a value or an errno. -ENOENT means the guest
  // thread is gone (killed or interrupted): expected, not an error.
  int Respond(uint64_t id, int64_t value, int error);
  // Lets the kernel run the call as it is. Only for a call whose arguments
  // are all registers the sentry checked (SyscallContext::let_kernel_run):
  // the kernel would read guest memory again, after the check.
  int RespondContinue(uint64_t id);
  // Whether the notification is still pending (its task alive and waiting).
  bool IdValid(uint64_t id);
  // Installs src_fd in the notifying process at its lowest free fd. With
  // send, the same ioctl also answers the notification with that fd number
  // (SECCOMP_ADDFD_FLAG_SEND): one wake-up of the guest instead of two.
  int AddFd(uint64_t id, int src_fd, bool cloexec, bool send);
  // Installs src_fd in the notifying process as exactly target_fd, replacing
  // what is there (as dup2 does).
  int AddFdAt(uint64_t id, int src_fd, int target_fd, bool cloexec);
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

}  // namespace sentry

#endif  // SENTRY_PLATFORM_UNOTIFY_H_
