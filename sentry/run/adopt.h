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
// in its mount namespace. Returns that tmpfs's directory (S2's store). As
// root only (range mode without root would need newuidmap: not built).
absl::StatusOr<UniqueFd> PrepareChildNamespaces(pid_t child, const std::string& hostname,
                                                uint64_t disk_bytes);

// Whether the task holds a shared mapping a fork must refuse: one it may
// write (or make writable: VM_MAYWRITE: its file opened for writing), or one whose file is
// not on a device of lower_devs (the lower layer's: files neither side can
// write; a store file, shared anonymous, SysV or memfd memory the parent
// could still write through another mapping or fd). *what names it.
bool HasRefusedSharedMapping(pid_t pid, const std::vector<dev_t>& lower_devs, std::string* what);

}  // namespace adopt
}  // namespace sentry

#endif  // SENTRY_RUN_ADOPT_H_
