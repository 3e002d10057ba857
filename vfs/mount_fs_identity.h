// MountFsIdentity: a write-through bind mount's file-system identity
// (HostDir::as_uid/as_gid, the guest's ids) for the host calls of one scope,
// the calling thread's own fsuid/fsgid restored after (they are per thread).
#ifndef SENTRY_VFS_MOUNT_FS_IDENTITY_H_
#define SENTRY_VFS_MOUNT_FS_IDENTITY_H_

#include <sys/fsuid.h>

#include "sentry/base/fs_identity.h"
#include "vfs/node.h"

namespace sentry::vfs {

class MountFsIdentity final {
 public:
  explicit MountFsIdentity(const HostDir& h)
      : uid_(static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1)))),
        gid_(static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1)))) {
    DropFsIdentity(h.as_uid, h.as_gid);
  }
  ~MountFsIdentity() { DropFsIdentity(uid_, gid_); }
  MountFsIdentity(const MountFsIdentity&) = delete;
  MountFsIdentity& operator=(const MountFsIdentity&) = delete;

 private:
  uid_t uid_;
  gid_t gid_;
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_MOUNT_FS_IDENTITY_H_
