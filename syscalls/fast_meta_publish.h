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
//     file (/etc/passwd...), nothing write-through; or (with upper answers,
//     region.h SENTRY_FM_UPPER) a directory or symlink of the in-memory
//     upper layer (PureUpper: no dynamic directory, nothing of the host),
//     the first component included, or (with upper files, the last
//     component only) an upper regular file while no writable description
//     of its store file exists (Store::NoWriter asks the kernel; every
//     writable one made later bumps the upper generation before it is
//     donated: Vfs::OpenData's copy-up step); an answer that rests on any
//     upper node is published as UPPER;
//   - no symlink is crossed but a final one under lstat; a lookup that
//     crossed symlinks (or named "." or "..") publishes its parts instead,
//     each by these rules at its own normal path: every symlink it followed
//     (lstat's answer and the target), a directory a "." or ".." was taken
//     from, and the node it ended at (PublishResolved in the .cc; the guest's
//     library puts them together, fastmeta/resolve.c);
//   - every directory walked may be searched by any caller (u, g, o and the
//     host's other bits all have x), so the caller's credentials do not
//     change the answer; with upper files, an upper directory only its
//     owner may search (mkdtemp's 0700) passes too while every guest
//     process has that owner's uid (FastMeta::SoleUid; root searches any):
//     a process of another uid joining (`sentry exec`, which today serves
//     OCI containers, never published) wipes the region first;
// An ENOENT is published when every directory above the last name passed.
// A directory token's path is published (for its fd's relative lookups)
// when that path leads to the token's very directory by the same rules.
// The VFS invalidates the whole region before any change to a lower node,
// the root, or a dropped cache, and when listing a directory changes its
// st_nlink (vfs.h set_on_lower_change); the upper answers alone before any
// change to any other node (set_on_upper_change). A relative stat also
// publishes the thread's working directory (SENTRY_FM_CWD), forgotten at
// every chdir (sys_cwd.cc) and when the thread leaves the task table.
#ifndef SENTRY_SYSCALLS_FAST_META_PUBLISH_H_
#define SENTRY_SYSCALLS_FAST_META_PUBLISH_H_

#include <string>
#include <utility>
#include <vector>

#include "sentry/kernel/syscall_context.h"
#include "syscalls/common.h"
#include "syscalls/dir_listing.h"
#include "vfs/vfs.h"

namespace sentry::sys {

// After a lookup of path (as the guest gave it) answered with node, or
// failed with err. quiet: an upper file (node) the caller found without a
// writer in this very call (Store::NoWriter), not asked again.
void PublishLookup(SyscallContext& ctx, const std::string& path, bool follow,
                   const vfs::NodeRef& node, int err, const vfs::Node* quiet = nullptr);

// A directory token (fd_identity.h) the guest holds: publishes the
// directory's own answer (its fstat) and, with the sentry's reference
// held_fd (fd_holds.h), the token's id (a POSIX lock on held_fd, region.h)
// and path, so that fstat and fstatat(fd, name) find them without a trap;
// with names (what a getdents64 just returned, with each d_type), the
// answers of its entries that need no host call (looked up before) and of
// its subdirectories (one host lookup each: what fts and a walk stat next).
// With list and listings on (FastMeta::EnableListings), also the
// directory's whole listing, when every caller may read the directory and it
// is not published yet: at the token's donation (names null; the listing's
// names then serve as the fill's), so that the guest's opendir/readdir read
// it without a getdents64, and after a getdents64 from position 0 (a
// listing the guest read by the trap: an invalidation since, or a program
// that calls getdents64 itself).
// Only while the directory's path may be published (the rules above), and
// every child only when that directory may be searched by every caller.
// locked: held_fd carries the lock already (set where the token was made,
// vfs::DirToken::lock_id, and nothing closed another fd of it since).
void PublishDirToken(SyscallContext& ctx, const OpenObject& object, int held_fd,
                     const DirNames* names, bool list, bool locked = false);

// Sets the sentry's lock that names object (a directory token already
// published) on its held reference held_fd; false if it could not.
bool RelockDirToken(const OpenObject& object, int held_fd);

// After a read-only open of a lower regular file (node) by (dirfd, path)
// answered, with fd records on (or of an upper file, with upper files on,
// quiet: the open found no writer of it, Store::NoWriter, on the very
// description it donated): the path's own answer (as a stat of it),
// so that the guest's library finds it for the fd it records
// (fastmeta/fdrec.c) even where no stat came first (Python opens each .pyc
// directly). An absolute path, or one relative to the working directory;
// one relative to a directory fd as where (the node's parent's path and
// its name), which is what the library makes of the token's path and the
// name (fgrep -r, fts: openat(dirfd, name) then fstat).
void PublishOpened(SyscallContext& ctx, int dirfd, const std::string& path,
                   const std::string& where, bool follow, const vfs::NodeRef& node,
                   bool quiet = false);

// After an open that made node, an upper regular file, and donated its
// only description (with upper files and fd records on): st, that fd's
// fstat, as the fd's FRESH answer (region.h) at where, the node's path,
// when that path may be published and leads to node (the rules above), so
// that the guest's library answers the fstat that follows (Python's open
// for writing makes one) without a trap.
// (dirfd, path): how the guest named it (a name relative to the working
// directory publishes that directory again, which the create invalidated).
void PublishCreated(SyscallContext& ctx, int dirfd, const std::string& path,
                    const std::string& where, const vfs::NodeRef& node, const struct stat& st);

// NodeAtPath (common.h), whose answer is then published.
SysResult<vfs::NodeRef> NodeAtPublished(SyscallContext& ctx, int dirfd, const std::string& path,
                                        bool follow, bool empty_ok);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_FAST_META_PUBLISH_H_
