// The file-system identity of a sentry thread that works for the guest.
//
// The sentry runs as root, but what it opens on the guest's behalf must be
// what an unprivileged host user could open: a thread that answers guest
// syscalls takes an unprivileged fsuid/fsgid (per thread on Linux), which also
// drops its file capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER...), so the host
// kernel enforces the host's permission bits on every lower-layer file and on
// any host object the guest names through an fd. ptrace and pidfd_getfd use
// the real credentials and keep working.
#ifndef SENTRY_BASE_FS_IDENTITY_H_
#define SENTRY_BASE_FS_IDENTITY_H_

#include <grp.h>
#include <sys/fsuid.h>
#include <sys/types.h>
#include <unistd.h>

namespace sentry {

// Whether the sentry runs as root. Without root a thread has one file
// identity only, the caller's: the kernel enforces the caller's permissions.
inline bool SentryIsRoot() {
  static const bool root = geteuid() == 0;
  return root;
}

// Returns false if the kernel did not take the identity. (0, 0) gives a root
// thread its own identity back. Without root the only identity is the
// caller's own: (0, 0) or the caller's uid keep it.
inline bool DropFsIdentity(uid_t uid, gid_t gid) {
  if (!SentryIsRoot()) {
    setfsuid(getuid());
    setfsgid(getgid());
    return uid == 0 || uid == getuid();
  }
  setfsgid(gid);
  setfsuid(uid);
  return setfsuid(static_cast<uid_t>(-1)) == static_cast<int>(uid) &&
         setfsgid(static_cast<gid_t>(-1)) == static_cast<int>(gid);
}

// A root sentry's supplementary groups (root's own: 0 and what the caller's
// session added) would stay with a thread that took a guest's fsuid/fsgid,
// so a host object a missing VFS check let through would be granted by
// group 0. Dropped once at start, before any thread: nothing of the sentry
// needs them (root's file capabilities do not depend on groups; the guest,
// an OCI process and a tool get the groups their spec gives them). False
// if they could not be dropped (a user namespace with setgroups denied).
inline bool DropSupplementaryGroups() {
  if (geteuid() != 0) return true;  // a caller's own groups: its own to use
  return setgroups(0, nullptr) == 0 || getgroups(0, nullptr) == 0;
}

// The caller's real uid and gid as this thread's file-system identity, for
// one scope (the process's supplementary groups stay, as access(2) uses
// them). A non-zero fsuid also drops the thread's file capabilities.
class CallerFsIdentity final {
 public:
  CallerFsIdentity()
      : uid_(static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1)))),
        gid_(static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1)))),
        ok_(DropFsIdentity(getuid(), getgid())) {}
  ~CallerFsIdentity() { DropFsIdentity(uid_, gid_); }
  CallerFsIdentity(const CallerFsIdentity&) = delete;
  CallerFsIdentity& operator=(const CallerFsIdentity&) = delete;
  bool ok() const { return ok_; }

 private:
  uid_t uid_;
  gid_t gid_;
  bool ok_;
};

// The calling thread's own (root) file-system identity for one scope, for an
// operation whose permission the sentry has already checked for the guest.
class SentryFsIdentity final {
 public:
  SentryFsIdentity()
      : uid_(static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1)))),
        gid_(static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1)))) {
    DropFsIdentity(0, 0);
  }
  ~SentryFsIdentity() { DropFsIdentity(uid_, gid_); }
  SentryFsIdentity(const SentryFsIdentity&) = delete;
  SentryFsIdentity& operator=(const SentryFsIdentity&) = delete;

 private:
  uid_t uid_;
  gid_t gid_;
};

}  // namespace sentry

#endif  // SENTRY_BASE_FS_IDENTITY_H_
