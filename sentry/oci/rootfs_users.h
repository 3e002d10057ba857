// `exec --user NAME[:GROUP]`: names looked up in the container's rootfs
// (etc/passwd, etc/group), as runc looks them up in the container's. The
// files are the rootfs's as the bundle holds them (what the guest changed
// in its in-memory layer does not count), opened beneath the rootfs
// (RESOLVE_IN_ROOT), so a symlink in an image never leads to a host file.
#ifndef SENTRY_OCI_ROOTFS_USERS_H_
#define SENTRY_OCI_ROOTFS_USERS_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace sentry::oci {

struct UserIds {
  uid_t uid = 0;
  std::optional<gid_t> gid;  // unset: the process keeps its gid (a bare UID)
};

// spec is UID, NAME, UID:GID, NAME:GROUP, UID:GROUP or NAME:GID. A name
// sets the gid of its passwd entry unless a group is given.
absl::StatusOr<UserIds> ResolveUser(const std::string& rootfs, const std::string& spec);

}  // namespace sentry::oci

#endif  // SENTRY_OCI_ROOTFS_USERS_H_
