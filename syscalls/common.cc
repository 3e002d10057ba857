#include "syscalls/common.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>

#include <cerrno>
#include <optional>

#include "syscalls/fast_meta_publish.h"

namespace sentry::sys {

SysResult<std::string> ReadPath(SyscallContext& ctx, GuestAddr addr) {
  return ctx.mem.CopyInString(addr, vfs::kPathMax - 1);
}

const vfs::NodeRef& FdRef::node() const { return object->node; }

namespace {

constexpr __fsword_t kPidfsMagic = 0x50494446;   // PID_FS_MAGIC (Linux 6.9+)
constexpr __fsword_t kMqueueMagic = 0x19800202;  // MQUEUE_MAGIC (ipc/mqueue.c)

// The device of the kernel's internal shmem mount, where every memfd lives.
dev_t MemfdDev() {
  static const dev_t dev = [] {
    struct stat st {};
    int fd = memfd_create("sentry-probe", MFD_CLOEXEC);
    if (fd >= 0) {
      if (fstat(fd, &st) < 0) st.st_dev = 0;
      close(fd);
    }
    return st.st_dev;
  }();
  return dev;
}

// Whether an fd the identity table does not know may be answered from its
// host object: one the guest made itself with a native call (a pipe, a
// socket, an eventfd, epoll, timerfd, pidfd, a POSIX queue of its own ipc
// namespace, a memfd), a pty of the sandbox's own devpts, or stdio the
// run's caller handed it. Everything else lives on a host file system (the
// lower layer, a device) or in the store, and an fd there can only be one the
// sentry donated and no longer recognises (see FdIdentity): never the guest's
// own object.
bool GuestsOwnObject(SyscallContext& ctx, const FdRef& ref) {
  const struct stat& st = ref.host_st;
  if (ctx.kernel.fds().IsCallerObject(st)) return true;
  if (ctx.kernel.pts_dev && st.st_dev == ctx.kernel.pts_dev) return true;
  struct statfs sf;
  if (fstatfs(ref.host.get(), &sf) < 0) return false;
  switch (sf.f_type) {
    case PIPEFS_MAGIC:
    case SOCKFS_MAGIC:
    case ANON_INODE_FS_MAGIC:
    case kPidfsMagic:
    case kMqueueMagic:
      return true;
    case TMPFS_MAGIC: {
      if (MemfdDev() == 0 || st.st_dev != MemfdDev()) return false;
      struct stat store;
      int store_fd = ctx.vfs().store().dir_fd();
      return store_fd < 0 || fstat(store_fd, &store) < 0 || store.st_dev != st.st_dev;
    }
    default:
      return false;
  }
}

}  // namespace

// A miss on a host or store object is EBADF: every fd-taking call documents
// it, so no program meets an errno its call cannot return, and it says what
// the sandbox holds to be true: this fd is not an open file of the sandbox's
// that it can describe. EACCES would suggest a permission the guest could
// change, and fstat(2) does not return it.
SysResult<FdRef> GetFd(SyscallContext& ctx, int fd) {
  if (fd < 0) return Errno{EBADF};
  FdRef ref;
  FdHolds& holds = ctx.kernel.holds();
  pid_t tgid = ctx.task.process->tgid;
  // A token the sentry holds: one kcmp says whether the guest's fd is still
  // that description. Anything else (another object under this number, the
  // fd closed, no kcmp) takes the copy below. An fd not hinted, or whose
  // hint missed, is checked against the process's last donation, once per
  // donation (FdHolds::Guess: fts moves each directory fd it is given to
  // another number, often one a closed directory had).
  std::optional<FdHolds::Held> hinted = holds.Hinted(tgid, fd);
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool guessed = attempt == 1;
    std::optional<FdHolds::Held> held = guessed ? holds.Guess(tgid) : hinted;
    if (!held || (guessed && hinted && held->fd == hinted->fd)) continue;
    bool same = ctx.fds.SameFile(fd, held->fd) == 0;
    if (same) {
      if (const OpenObject* object = ctx.kernel.fds().Find(held->st)) {
        ++holds.hits;
        if (guessed) holds.Hint(tgid, fd, held->st);
        ref.held = held->fd;
        ref.host_st = held->st;
        ref.object = object;
        return ref;
      }
    }
    if (!guessed) {
      ++holds.misses;
      if (same) {
        holds.Unhint(tgid, fd);
      } else {
        holds.Missed(tgid, fd);
      }
    }
  }
  SYS_ASSIGN_OR_RETURN(ref.host, ctx.fds.Get(fd));
  if (fstat(ref.host.get(), &ref.host_st) < 0) return Errno{EBADF};
  ref.object = ctx.kernel.fds().Find(ref.host_st);
  if (!ref.object && !GuestsOwnObject(ctx, ref)) {
    ctx.hint = "the sandbox no longer knows what this fd stands for; open the file again";
    return Errno{EBADF};
  }
  // A token seen through a copy (a forked child's, a dup, an fd received,
  // one whose reference was closed to make room): hinted, so its next call
  // takes the kcmp; the copy itself is kept if nothing is held for it. A
  // token has one description (fd_holds.h), so its object is its description.
  // Not a lower file's: its object has many descriptions, and one whose
  // reference went (a lock taken on it) must not be taken back.
  if (ref.object && ref.object->holdable && !ref.object->shared && holds.enabled()) {
    if (!holds.Hint(tgid, fd, ref.host_st)) {
      ref.held = ref.host.get();
      holds.Keep(std::move(ref.host), ref.host_st, tgid, fd);
    } else if (ref.object->fast_meta_id != 0) {
      // Closing the copy drops the sentry's POSIX lock that names the token
      // to the guest (fast_meta_publish.h): the held reference serves this
      // call instead, and the lock is set again.
      if (std::optional<FdHolds::Held> h = holds.OfObject(ref.host_st)) {
        ref.host.Reset();
        ref.held = h->fd;
        RelockDirToken(*ref.object, h->fd);
      }
    }
  }
  return ref;
}

SysResult<vfs::NodeRef> NodeOfFd(SyscallContext& ctx, int fd, int not_ours) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, fd));
  if (!ref.object) return Errno{not_ours};
  return ref.object->node;
}

SysResult<vfs::NodeRef> StartDir(SyscallContext& ctx, int dirfd, const std::string& path) {
  if ((!path.empty() && path[0] == '/') || dirfd == AT_FDCWD) return ctx.task.fs->cwd;
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeOfFd(ctx, dirfd, ENOTDIR));
  if (!node->IsDir()) return Errno{ENOTDIR};
  return node;
}

SysResult<vfs::Resolved> WalkAt(SyscallContext& ctx, int dirfd, const std::string& path,
                                const vfs::ResolveOpts& opts) {
  if (path.empty()) return Errno{ENOENT};
  // RESOLVE_BENEATH and RESOLVE_IN_ROOT scope even an absolute path to dirfd.
  bool scoped = opts.beneath || opts.in_root;
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef start, StartDir(ctx, dirfd, scoped ? "" : path));
  return ctx.vfs().Walk(start, path, opts, ctx.creds());
}

SysResult<vfs::NodeRef> NodeAt(SyscallContext& ctx, int dirfd, GuestAddr path_addr, bool follow,
                               bool empty_ok) {
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, path_addr));
  return NodeAtPath(ctx, dirfd, path, follow, empty_ok);
}

SysResult<vfs::NodeRef> NodeAtPath(SyscallContext& ctx, int dirfd, const std::string& path,
                                   bool follow, bool empty_ok) {
  if (path.empty()) {
    if (!empty_ok) return Errno{ENOENT};
    if (dirfd == AT_FDCWD) return ctx.task.fs->cwd;
    return NodeOfFd(ctx, dirfd, EBADF);
  }
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef start, StartDir(ctx, dirfd, path));
  vfs::ResolveOpts opts;
  opts.follow_final = follow;
  return ctx.vfs().Lookup(start, path, opts, ctx.creds());
}

SysStatus RegisterOpen(SyscallContext& ctx, const struct stat& st, const vfs::NodeRef& node,
                       bool dir_token, std::string path, bool holdable, bool shared) {
  OpenObject obj{node, dir_token, std::move(path)};
  obj.holdable = holdable;
  obj.shared = holdable && shared;
  // A memfd is text the sentry generated (/proc): its pages are the sentry's.
  if (st.st_dev == MemfdDev()) obj.data_bytes = static_cast<size_t>(st.st_blocks) * 512;
  if (SysStatus r = ctx.kernel.fds().Register(st, std::move(obj)); !r.ok()) {
    ctx.hint = r.error() == ENFILE
                   ? "the sandbox has as many files open as it may (32768): close some"
                   : "the sandbox holds as much generated /proc text open as it may: close some";
    return Errno{r.error()};
  }
  return {};
}

SysResult<uint64_t> Donate(SyscallContext& ctx, UniqueFd host_fd, const vfs::NodeRef& node,
                           bool dir_token, bool cloexec, std::string path, bool hold,
                           const struct stat* known, bool shared, uint64_t token_lock) {
  struct stat st;
  if (known) {
    st = *known;
  } else if (fstat(host_fd.get(), &st) < 0) {
    return Errno{errno};
  }
  hold = hold && ctx.kernel.holds().enabled();
  SYS_TRY(RegisterOpen(ctx, st, node, dir_token, std::move(path), hold, shared));
  SYS_ASSIGN_OR_RETURN(int guest_fd, ctx.fds.Install(host_fd.get(), cloexec));
  if (hold) {
    int held_fd = host_fd.get();
    ctx.kernel.holds().Keep(std::move(host_fd), st, ctx.task.process->tgid, guest_fd, shared);
    // A directory's fstat and its relative lookups, without a trap.
    if (dir_token && ctx.kernel.fast_meta()) {
      std::optional<FdHolds::Held> held = ctx.kernel.holds().OfObject(st);
      const OpenObject* object = ctx.kernel.fds().Find(st);
      if (held && object) {
        // The token's own lock names it (its fd is the one held), unless
        // a token of this object was named before.
        if (token_lock && object->fast_meta_id == 0) object->fast_meta_id = token_lock;
        bool locked = token_lock && object->fast_meta_id == token_lock && held->fd == held_fd;
        PublishDirToken(ctx, *object, held->fd, nullptr, /*list=*/true, locked);
      }
    }
  }
  return static_cast<uint64_t>(guest_fd);
}

mode_t ApplyUmask(SyscallContext& ctx, mode_t mode) { return mode & ~ctx.task.fs->umask & 07777; }

}  // namespace sentry::sys
