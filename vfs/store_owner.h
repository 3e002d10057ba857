// The store owner's file-system identity for the scope of one call.
//
// setfsuid/setfsgid act on the calling thread only, so a sentry thread takes
// the owner's ids just for the call that creates, changes or removes a store
// entry. Each call makes the thread a new set of credentials: 3-4 µs here
// (commit_creds, with the host's hooks on it), so a scope that only needs the
// owner's uid changes only the uid, and a thread that holds the owner's ids
// for good (the stash's, see store_stash.h) changes nothing.
#ifndef SENTRY_VFS_STORE_OWNER_H_
#define SENTRY_VFS_STORE_OWNER_H_

#include <sys/fsuid.h>
#include <sys/types.h>

namespace sentry::vfs {

// The ids this thread took for good with HoldOwner, if any.
struct HeldFsIds {
  bool held = false;
  uid_t uid = 0;
  gid_t gid = 0;
};
inline thread_local HeldFsIds t_held_fs_ids;

// Gives the calling thread the owner's file-system ids until it ends.
inline void HoldOwner(uid_t uid, gid_t gid) {
  setfsgid(gid);
  setfsuid(uid);
  t_held_fs_ids = {true, uid, gid};
}

// Both ids, for a call that makes an entry (its owner and group are the
// caller's fsuid and fsgid).
class AsOwner final {
 public:
  AsOwner(uid_t uid, gid_t gid)
      : change_(!(t_held_fs_ids.held && t_held_fs_ids.uid == uid && t_held_fs_ids.gid == gid)) {
    if (change_) {
      old_uid_ = setfsuid(uid);
      old_gid_ = setfsgid(gid);
    }
  }
  ~AsOwner() {
    if (change_) {
      setfsgid(old_gid_);
      setfsuid(old_uid_);
    }
  }
  AsOwner(const AsOwner&) = delete;
  AsOwner& operator=(const AsOwner&) = delete;

 private:
  bool change_;
  int old_uid_ = 0, old_gid_ = 0;
};

// The uid alone, for a call the kernel checks by owner or by the store
// directory's owner bits (unlink, chmod, explicit times): the store's
// directories are the owner's, mode 0755 or 0700, so the group plays no part.
class AsOwnerUid final {
 public:
  explicit AsOwnerUid(uid_t uid) : change_(!(t_held_fs_ids.held && t_held_fs_ids.uid == uid)) {
    if (change_) old_uid_ = setfsuid(uid);
  }
  ~AsOwnerUid() {
    if (change_) setfsuid(old_uid_);
  }
  AsOwnerUid(const AsOwnerUid&) = delete;
  AsOwnerUid& operator=(const AsOwnerUid&) = delete;

 private:
  bool change_;
  int old_uid_ = 0;
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_STORE_OWNER_H_
