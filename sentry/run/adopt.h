// Adopt mode (sentry/session/FORK.md steps 3 and 5): the supervisor S2 of a
// forked child. RunSandbox runs it when RunOptions::adopt_fd is set: it
// takes the child from its parent's supervisor S1 (platform/handoff_wire.h,
// Tracer::HandOffForkChild), makes the child a sandbox of its own (its id
// maps, loopback, hostname, a store of S2's over the parent's, a VFS copied
// from the parent's, its own relay pipes, its own listener and filter) before
// it runs one instruction, and then supervises it as a run's pid 1 until it
// ends. The run's exit code is the child's (128+N for signal N), or
// kExitSentryError when the adoption failed (the child is then killed).
#ifndef SENTRY_RUN_ADOPT_H_
#define SENTRY_RUN_ADOPT_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/run.h"

namespace sentry {

int AdoptSandbox(const RunOptions& options);

namespace adopt {

// The child's namespaces made whole, by a single-threaded helper process
// (forked here) that joins them: its uid and gid maps (written from its
// parent's user namespace, the sandbox's: the same ids, nothing more), `lo`
// up in its network namespace, its hostname in its uts namespace, and a
// tmpfs of disk_bytes mounted over the parent's store (vfs::Store::kGuestPath)
// in its mount namespace. Returns that tmpfs's directory (S2's store).
// Root or not: the caller made the sandbox's user namespace, so it holds
// every capability there and in the child's, nested in it (no newuidmap:
// the child's maps name only ids the sandbox's already maps).
absl::StatusOr<UniqueFd> PrepareChildNamespaces(pid_t child, const std::string& hostname,
                                                uint64_t disk_bytes);

// The sandbox's user namespace: the parent of the child's (which the
// guest made, and owns). Empty with errno where it is out of reach.
UniqueFd SandboxUserns(pid_t child);

// The host ids behind a subordinate range's inside ids 1 .. count (the
// second line of a range-mode sandbox's maps, which the child's repeat),
// from the child's uid_map and gid_map as the host reads them; count 0
// where there is no such line (root's block, single-id mode).
struct ChildRange {
  uid_t uid = 0;
  gid_t gid = 0;
  uint32_t count = 0;
};
ChildRange RangeOfChild(pid_t child);

// Whether the task holds a shared mapping a fork must refuse: one it may
// write (or make writable: VM_MAYWRITE: its file opened for writing), or one whose file is
// not on a device of lower_devs (the lower layer's: files neither side can
// write; a store file, shared anonymous, SysV or memfd memory the parent
// could still write through another mapping or fd), by smaps' device
// and inode of each mapping. *what names it.
bool HasRefusedSharedMapping(pid_t pid, const std::vector<dev_t>& lower_devs, std::string* what);

}  // namespace adopt
}  // namespace sentry

#endif  // SENTRY_RUN_ADOPT_H_
