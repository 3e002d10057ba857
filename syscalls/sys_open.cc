// open, openat, openat2, creat: resolve in the VFS, then donate a real fd.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>

#include <cerrno>

#include "sentry/kernel/fast_meta.h"
#include "sentry/kernel/kernel.h"
#include "syscalls/common.h"
#include "syscalls/fast_meta_publish.h"
#include "syscalls/fifo_open.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

constexpr int kValidOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |
                                O_NONBLOCK | O_DSYNC | O_SYNC | O_DIRECT | O_LARGEFILE |
                                O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_PATH |
                                O_TMPFILE | FASYNC;

// What the guest gets for O_PATH: seccomp's ADDFD cannot install a real O_PATH
// file (it takes fds with fget(), which skips them), so a fresh store file
// opened with access mode 3 (neither read nor write) stands in: reads and
// writes fail with EBADF as on an O_PATH fd, while fstat and *at calls find
// the node through fd identity.
SysResult<UniqueFd> PathToken(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(std::string name, ctx.vfs().store().Create(0));
  auto fd = ctx.vfs().store().Open(name, O_ACCMODE);
  ctx.vfs().store().Remove(name);
  return fd;
}

SysResult<uint64_t> OpenTmpfile(SyscallContext& ctx, const vfs::NodeRef& dir, int flags,
                                mode_t mode) {
  if ((flags & O_ACCMODE) == O_RDONLY) return Errno{EINVAL};
  if (!dir->IsDir()) return Errno{ENOTDIR};
  SYS_TRY(ctx.vfs().Permission(*dir, W_OK | X_OK, ctx.creds()));
  // An unnamed file: a fresh store file that no directory lists.
  vfs::NodeRef node = ctx.vfs().NewNode(vfs::NodeKind::kFile, S_IFREG | ApplyUmask(ctx, mode),
                                        ctx.creds().uid, ctx.creds().gid);
  SYS_ASSIGN_OR_RETURN(node->store_name, ctx.vfs().store().Create(node->attr().mode));
  node->nlink = 0;
  SYS_ASSIGN_OR_RETURN(UniqueFd fd, ctx.vfs().OpenData(*node, flags & ~O_TMPFILE));
  ctx.vfs().store().Remove(node->store_name);
  return Donate(ctx, std::move(fd), node, false, flags & O_CLOEXEC);
}

SysResult<uint64_t> DoOpen(SyscallContext& ctx, int dirfd, GuestAddr path_addr, int flags,
                           mode_t mode, vfs::ResolveOpts opts) {
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, path_addr));
  if (flags & ~kValidOpenFlags) flags &= kValidOpenFlags;  // open(2) ignores unknown bits
  if (flags & O_PATH) flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int acc = flags & O_ACCMODE;
  if ((flags & O_TMPFILE) == O_TMPFILE) {
    SYS_ASSIGN_OR_RETURN(vfs::NodeRef dir, NodeAtPath(ctx, dirfd, path, true, false));
    return OpenTmpfile(ctx, dir, flags, mode);
  }
  bool creat = flags & O_CREAT;
  opts.follow_final = !(flags & O_NOFOLLOW) && !(creat && (flags & O_EXCL));
  SYS_ASSIGN_OR_RETURN(vfs::Resolved r, WalkAt(ctx, dirfd, path, opts));
  vfs::NodeRef node = r.node;
  UniqueFd fresh;  // a new file's write-only description, from the store's stash
  bool made = !node;
  if (!node) {
    if (!creat) return Errno{ENOENT};
    if (r.trailing_slash) return Errno{EISDIR};
    SYS_ASSIGN_OR_RETURN(node, ctx.vfs().Create(r, vfs::NodeKind::kFile, ApplyUmask(ctx, mode),
                                                ctx.creds(), &fresh));
  } else {
    if (creat && (flags & O_EXCL)) return Errno{EEXIST};
    if (node->kind() == vfs::NodeKind::kSymlink) {
      if (!(flags & O_PATH)) return Errno{ELOOP};
      // O_PATH|O_NOFOLLOW names the link itself: a bare store file stands for it.
      SYS_ASSIGN_OR_RETURN(UniqueFd fd, PathToken(ctx));
      return Donate(ctx, std::move(fd), node, false, flags & O_CLOEXEC, "", /*hold=*/true);
    }
    if (r.trailing_slash && !node->IsDir()) return Errno{ENOTDIR};
    if (node->IsDir() && (creat || acc != O_RDONLY)) return Errno{EISDIR};
    if ((flags & O_DIRECTORY) && !node->IsDir()) return Errno{ENOTDIR};
    if (!(flags & O_PATH)) {
      int may = (acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK);
      SYS_TRY(ctx.vfs().Permission(*node, may, ctx.creds()));
      if ((flags & O_TRUNC) && acc != O_RDONLY &&
          (node->kind() == vfs::NodeKind::kFile || node->kind() == vfs::NodeKind::kSynthetic)) {
        SYS_TRY(ctx.vfs().Truncate(*node, 0, ctx.creds()));
      }
    }
  }
  // A read-only open leaves its read checks to its ADDFD (DefersReadChecks in
  // sentry/kernel/dispatcher.cc) only where nothing but that fd comes of it:
  // a directory's or O_PATH token, a regular file. Any other open (a FIFO,
  // which its writer sees; a device; generated /proc text; a pipe reopened)
  // proves them first.
  bool quiet =
      node->IsDir() || (flags & O_PATH) || (node->kind() == vfs::NodeKind::kFile && !node->reopen);
  if (!quiet && !ctx.mem.Settle()) return Errno{EFAULT};
  bool cloexec = flags & O_CLOEXEC;
  if (node->IsDir() && !(flags & O_PATH)) {
    SYS_ASSIGN_OR_RETURN(vfs::DirToken token, ctx.vfs().store().NewDirToken());
    return Donate(ctx, std::move(token.fd), node, true, cloexec, "", /*hold=*/true, &token.st,
                  /*shared=*/false, token.lock_id);
  }
  if (flags & O_PATH) {
    SYS_ASSIGN_OR_RETURN(UniqueFd token, PathToken(ctx));
    return Donate(ctx, std::move(token), node, false, cloexec, "", /*hold=*/true);
  }
  if (node->reopen) {
    // A pipe opened anew through /proc/PID/fd/N is the guest's own pipe
    // again, not an object the sentry donated.
    SYS_ASSIGN_OR_RETURN(UniqueFd fd, node->reopen(flags));
    SYS_ASSIGN_OR_RETURN(int guest_fd, ctx.fds.Install(fd.get(), cloexec));
    return static_cast<uint64_t>(guest_fd);
  }
  std::string where;
  if (r.parent) {
    auto dir = ctx.vfs().PathOf(r.parent);
    if (dir.ok()) where = (dir.value() == "/" ? "" : dir.value()) + "/" + r.name;
  }
  if (node->kind() == vfs::NodeKind::kFifo && !node->store_name.empty()) {
    return OpenFifo(ctx, node, flags, std::move(where));
  }
  // A create that asks for exactly what the stash opened (write-only, no
  // status flag) gets that description: no open nor fstat of the store file
  // while the guest waits. Not in a watched directory, whose events come
  // from an open through its shadow's link (vfs_watch.cc).
  bool take_fresh = fresh && acc == O_WRONLY &&
                    !(flags & (O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | O_DIRECT)) &&
                    !(r.parent && ctx.vfs().Watched(*r.parent));
  UniqueFd fd;
  if (take_fresh) {
    fd = std::move(fresh);
  } else {
    fresh.Reset();
    SYS_ASSIGN_OR_RETURN(fd, ctx.vfs().OpenData(*node, flags, &r));
  }
  // An upper file's identity is the store's (Store::Identity): no fstat.
  struct stat known;
  bool is_known = node->IsUpperFile() && ctx.vfs().store().Identity(node->store_name, &known);
  // A read-only lower file is held (fstat by one kcmp: fd_holds.h); not a
  // write-through mount's (a writable description of it may exist: ETXTBSY
  // at exec) nor an upper file (its bytes would outlive an unlink).
  bool hold = node->IsLowerFile() && !node->IsHostRw() && acc == O_RDONLY;
  bool publish = hold && !(flags & (O_CREAT | O_TRUNC));
  // An upper file opened read-only is published too (so the guest's library
  // records this fd) when no writer of it exists: the description about to
  // be donated asks the kernel (Store::NoWriter); no trap comes between.
  bool no_writer = false;
  if (FastMeta* fm = ctx.kernel.fast_meta(); fm && fm->upper_files() && fm->fd_records() &&
                                             node->IsUpperFile() && acc == O_RDONLY &&
                                             !(flags & (O_CREAT | O_TRUNC))) {
    // (A live answer of the path already is the one it would publish.)
    if (!path.empty() && (path[0] != '/' || !fm->HasAnswer(path))) {
      no_writer = ctx.vfs().store().NoWriter(node->store_name, fd.get());
    }
    publish = no_writer;
  }
  // A file this open made, write-only: the fd holds its only description
  // (the stash's, or one opened just now; the stash's own is closed), and
  // that fd's fstat is for the guest's library (what it looks for:
  // fastmeta/fdrec.c fm_fresh_open).
  struct stat created {};
  bool fresh_answer = made && acc == O_WRONLY && !(flags & O_APPEND) && node->IsUpperFile() &&
                      !where.empty() && ctx.kernel.fast_meta() &&
                      ctx.kernel.fast_meta()->upper_files() &&
                      ctx.kernel.fast_meta()->fd_records() && fstat(fd.get(), &created) == 0 &&
                      created.st_size == 0;
  std::string created_at = fresh_answer ? where : std::string();
  std::string opened_at = publish && dirfd != AT_FDCWD ? where : std::string();
  SYS_ASSIGN_OR_RETURN(uint64_t guest_fd,
                       Donate(ctx, std::move(fd), node, false, cloexec, std::move(where), hold,
                              is_known       ? &known
                              : fresh_answer ? &created
                                             : nullptr,
                              /*shared=*/true));
  // What the guest's library records for that fd (fast_meta_publish.h).
  if (publish) PublishOpened(ctx, dirfd, path, opened_at, opts.follow_final, node, no_writer);
  if (fresh_answer) {
    PublishCreated(ctx, dirfd, path, created_at, node, ctx.vfs().StatWithData(*node, created));
  }
  return guest_fd;
}

}  // namespace

SysResult<uint64_t> Open(SyscallContext& ctx) {
  return DoOpen(ctx, AT_FDCWD, ctx.args.Ptr(0), ctx.args.Int(1), ctx.args.Uint(2), {});
}

SysResult<uint64_t> Openat(SyscallContext& ctx) {
  return DoOpen(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Int(2), ctx.args.Uint(3), {});
}

SysResult<uint64_t> Creat(SyscallContext& ctx) {
  return DoOpen(ctx, AT_FDCWD, ctx.args.Ptr(0), O_CREAT | O_WRONLY | O_TRUNC, ctx.args.Uint(1), {});
}

// openat2 is strict where openat is lenient: unknown flags, a mode without
// O_CREAT/O_TMPFILE, and unknown RESOLVE_ bits are EINVAL (fs/open.c build_open_how).
SysResult<uint64_t> Openat2(SyscallContext& ctx) {
  size_t size = ctx.args.Ulong(3);
  if (size < sizeof(open_how)) return Errno{EINVAL};
  if (size > 4096) return Errno{E2BIG};
  open_how how{};
  SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(2), &how, sizeof(how)));
  if (size > sizeof(how)) {
    // Larger structs are accepted only if the bytes we do not know are zero.
    char tail[4096];
    SYS_ASSIGN_OR_RETURN(GuestAddr rest, ctx.args.Ptr(2).Offset(sizeof(how)));
    SYS_TRY(ctx.mem.CopyIn(rest, tail, size - sizeof(how)));
    for (size_t i = 0; i < size - sizeof(how); ++i)
      if (tail[i]) return Errno{E2BIG};
  }
  if (how.flags & ~static_cast<uint64_t>(kValidOpenFlags)) return Errno{EINVAL};
  bool wants_mode = (how.flags & O_CREAT) || (how.flags & O_TMPFILE) == O_TMPFILE;
  if (!wants_mode && how.mode) return Errno{EINVAL};
  if (how.mode & ~07777ull) return Errno{EINVAL};
  constexpr uint64_t kResolveAll = RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS |
                                   RESOLVE_BENEATH | RESOLVE_IN_ROOT | RESOLVE_CACHED;
  if (how.resolve & ~kResolveAll) return Errno{EINVAL};
  if ((how.resolve & RESOLVE_BENEATH) && (how.resolve & RESOLVE_IN_ROOT)) return Errno{EINVAL};
  if ((how.flags & O_PATH) &&
      (how.flags & ~static_cast<uint64_t>(O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))) {
    return Errno{EINVAL};
  }
  vfs::ResolveOpts opts;
  opts.beneath = how.resolve & RESOLVE_BENEATH;
  opts.in_root = how.resolve & RESOLVE_IN_ROOT;
  opts.no_symlinks = how.resolve & RESOLVE_NO_SYMLINKS;
  opts.no_magiclinks = how.resolve & RESOLVE_NO_MAGICLINKS;
  int dirfd = ctx.args.Int(0);
  return DoOpen(ctx, dirfd, ctx.args.Ptr(1), static_cast<int>(how.flags),
                static_cast<mode_t>(how.mode), opts);
}

}  // namespace sentry::sys
