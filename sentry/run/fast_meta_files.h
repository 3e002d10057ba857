// The sandbox's side of fast metadata (sentry/kernel/fast_meta.h): the
// region, the guest's library and the /etc/ld.so.preload that loads it.
#ifndef SENTRY_RUN_FAST_META_FILES_H_
#define SENTRY_RUN_FAST_META_FILES_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sentry/kernel/kernel.h"
#include "sentry/run/sandbox_tree.h"

namespace sentry {

// The top-level names whose lower subtrees may be published: the lower
// roots and etc, but for one a -v mount replaces (a mount deeper down is a
// fixed node, which the publishing walk refuses). None for an OCI rootfs.
std::set<std::string> FastMetaTops(const TreeConfig& tree);

// Makes the region and gives it to kernel, then adds to /etc (root-owned,
// read-only to the guest): sentry/libfastmeta.so, sentry/fastmeta (opening it
// gives an O_RDONLY description of the region) and ld.so.preload naming the
// library. An error leaves the kernel without fast metadata.
absl::Status AddFastMeta(Kernel& kernel, const TreeConfig& tree);

}  // namespace sentry

#endif  // SENTRY_RUN_FAST_META_FILES_H_
