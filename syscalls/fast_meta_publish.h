// What the trapped path calls publish to the fast-metadata region
// (sentry/kernel/fast_meta.h) after they answered.
//
// Only an answer every guest process would get by the same trap, for as long
// as nothing invalidates it, is published:
//   - the path is absolute and normalised (sentry_fm_normal), so neither the
//     cwd nor a dirfd takes part;
//   - its first component is one of the kernel's fast_meta_tops (the lower
//     roots and /etc, none with a -v mount at or above it), and every later
//     node is one a host lookup made (IsCached): no mount, no synthetic
//     file (/etc/passwd...), no upper node, nothing write-through;
//   - no symlink is crossed but a final one under lstat;
//   - every directory walked may be searched by any caller (u, g, o and the
//     host's other bits all have x), so the caller's credentials do not
//     change the answer;
// An ENOENT is published when every directory above the last name passed.
// The VFS invalidates the whole region before any change to a lower node,
// the root, or a dropped cache, and when listing a directory changes its
// st_nlink (vfs.h set_on_lower_change).
#ifndef SENTRY_SYSCALLS_FAST_META_PUBLISH_H_
#define SENTRY_SYSCALLS_FAST_META_PUBLISH_H_

#include <string>

#include "sentry/kernel/syscall_context.h"
#include "syscalls/common.h"
#include "vfs/vfs.h"

namespace sentry::sys {

// After a lookup of path (as the guest gave it) answered with node, or
// failed with err.
void PublishLookup(SyscallContext& ctx, const std::string& path, bool follow,
                   const vfs::NodeRef& node, int err);

// NodeAtPath (common.h), whose answer is then published.
SysResult<vfs::NodeRef> NodeAtPublished(SyscallContext& ctx, int dirfd, const std::string& path,
                                        bool follow, bool empty_ok);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_FAST_META_PUBLISH_H_
