// The VFS copy of a session fork (sentry/session/FORK.md, step 4): one
// sandbox's file tree written as bytes to an fd (a socket or pipe to another
// sentry process), and rebuilt from those bytes in that process's own, fresh
// Vfs, built from the same tree configuration (the same lower layer and -v
// mounts) over a store of its own.
//
// What is copied: every name the guest can reach in the tree (the upper
// layer and the lower nodes it changed): directories, regular files (an
// upper file's data is copied into the new store, a lower file stays a
// reference to its host file), symlinks, FIFOs (a new FIFO), unix socket
// names, whiteouts (so an opaque directory, a new directory over a removed
// lower one, stays opaque), hard links as links, a renamed lower file or
// directory as the same host object at its new name, and each node's mode,
// owner, times, inode number, link count and user.* xattrs. The metadata
// charges are taken again in the new Vfs, and its metadata budget applies.
//
// What is deliberately not copied:
//  - open file descriptions (offsets, flags), directory tokens and mappings:
//    the child's fds are rebuilt by its supervisor (FORK.md step 5);
//  - inotify watches and the store shadows that serve them (a watch belongs
//    to an inotify instance, an fd);
//  - file locks (flock, POSIX, OFD: they belong to open file descriptions);
//  - a unix socket's listener and peers: the copy's name is a dead name
//    (connect: ECONNREFUSED, as a name whose listener closed), never a way to
//    the parent's socket;
//  - FIFO contents and waiting openers (the copy's FIFO is new and empty);
//  - the -v HOST:GUEST:rw mounts: their files are the host's, shared by
//    design; the child's own mount of the same directory stands in for them;
//  - generated nodes (/etc files nobody wrote, /proc, devpts entries): the
//    child's own stand in for them at the same name (its hostname, its pids),
//    and one the guest renamed elsewhere is not carried;
//  - the cwd of each process and the lower layer's cache (what host lookups
//    left unchanged is looked up again in the child);
//  - an upper file's ctime: its data's ctime is the copy's time, as cp -p's.
//
// The stream is untrusted input to the reader: every length is bounded, the
// whole tree is charged against the new Vfs's budgets as it is read, and a
// truncated or malformed stream is an error (never a crash). After an error
// the new Vfs is half built and must be dropped with its store.
#ifndef SENTRY_VFS_VFS_SNAPSHOT_H_
#define SENTRY_VFS_VFS_SNAPSHOT_H_

#include <cstdint>
#include <string>

#include "vfs/vfs.h"

namespace sentry::vfs {

struct SnapshotStats {
  uint64_t entries = 0;       // names written or read
  uint64_t upper_files = 0;   // store files copied
  uint64_t data_bytes = 0;    // their data
  uint64_t stream_bytes = 0;  // all bytes written or read
  uint64_t dropped = 0;       // names not carried (see above), or lower files gone
};

struct SnapshotResult {
  std::string error;  // empty: done
  SnapshotStats stats;
  bool ok() const { return error.empty(); }
};

// Writes v's tree to fd (blocking writes, SIGPIPE must be ignored by the
// caller). The tree must not change meanwhile: the caller holds the kernel's
// mutex and the sandbox is stopped.
SnapshotResult WriteSnapshot(Vfs& v, int fd);

struct SnapshotReadOptions {
  // The new sandbox's --disk: the copied files' data, each rounded up to
  // whole pages as tmpfs charges them, must fit under it and under the
  // store's free space (0: the store's free space alone).
  uint64_t disk_bytes = 0;
};

// Reads a stream WriteSnapshot wrote from fd and builds it into v, a Vfs
// freshly built from the same tree configuration that nothing has used yet.
SnapshotResult ReadSnapshot(Vfs& v, int fd, const SnapshotReadOptions& opts = {});

// The stream's limits (the reader's bounds).
inline constexpr uint64_t kSnapshotMagic = 0x3150414e53534656ull;  // "VFSSNAP1"
inline constexpr size_t kSnapshotMaxXattrValue = 65536;
// Everything the reader makes is counted as the VFS counts its nodes
// (kNodeCost, kNameCost...): at most the metadata ceiling for what the
// guest made, plus the lower cache's budget and as much again for the lower
// nodes it changed (a chmod'ed lower file is not charged to the guest).
inline constexpr uint64_t kSnapshotMaxTreeBytes = 2 * kMaxMetadataBytes + kLowerCacheBytes;

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_VFS_SNAPSHOT_H_
