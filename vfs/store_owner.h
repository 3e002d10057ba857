// AsOwner: the store owner's file-system identity for the scope of one call.
// setfsuid/setfsgid act on the calling thread only, so a sentry thread takes
// the owner's ids just for the call that creates or removes a store entry.
#ifndef SENTRY_VFS_STORE_OWNER_H_
#define SENTRY_VFS_STORE_OWNER_H_

#include <sys/fsuid.h>
#include <sys/types.h>

namespace sentry::vfs {

class AsOwner final {
 public:
  AsOwner(uid_t uid, gid_t gid) : old_uid_(setfsuid(uid)), old_gid_(setfsgid(gid)) {}
  ~AsOwner() {
    setfsgid(old_gid_);
    setfsuid(old_uid_);
  }
  AsOwner(const AsOwner&) = delete;
  AsOwner& operator=(const AsOwner&) = delete;

 private:
  int old_uid_, old_gid_;
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_STORE_OWNER_H_
