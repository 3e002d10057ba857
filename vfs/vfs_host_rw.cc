// Write-through bind mounts (-v HOST:GUEST:rw, an OCI rw bind): the guest's
// changes made on the host, confined beneath the mount's host directory.
//
// Confinement: every host call names one plain entry (never a path) relative
// to a directory fd the VFS holds, and each such fd was opened with openat2
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS from the
// mount's own fd (vfs_walk.cc OpenHostChildDir). The guest's own paths,
// symlinks and ".." are resolved by the VFS walk, never by the host, so a
// symlink's text never steers a host call. Calls that would follow a final
// symlink are made with AT_SYMLINK_NOFOLLOW / O_NOFOLLOW, so an entry the host
// swaps for a link between the walk and the call fails (ELOOP) instead of
// leading out. Rename and link stay within one mount (EXDEV otherwise, as
// across Linux mounts); sockets and FIFOs are not made on the host.
//
// Identity: the host calls run with the mount's fsuid/fsgid (HostDir::as_uid,
// the guest's ids as the run gave them), so the host sees the guest's uid as
// it is and applies its own permission bits for it. setuid and setgid bits
// are never set on the host's regular files.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "vfs/mount_fs_identity.h"
#include "vfs/vfs.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

namespace sentry::vfs {
namespace {

// The file this thread's last create made, with the O_RDWR fd of the
// creating open, for the open that follows in the same syscall (Linux lets
// that open write whatever mode the file got: open(O_CREAT|O_WRONLY, 0400)).
// One per thread, replaced by the next create: a guest making many files
// (mknod) never makes the sentry hold many fds.
struct CreatedFile {
  std::weak_ptr<Node> node;
  UniqueFd fd;
};
thread_local CreatedFile t_created;

// One plain name beneath dir_fd, no symlink at all, no magic link.
int OpenBeneath(int dir_fd, const std::string& name, int flags, mode_t mode = 0) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof(how)));
  return fd < 0 ? -errno : fd;
}

// Opens a regular file beneath dir_fd for data: never blocks on a FIFO or a
// device the host put there (refused: only regular files are shown).
SysResult<UniqueFd> OpenRegular(int dir_fd, const std::string& name, int flags) {
  int fd = OpenBeneath(dir_fd, name, flags | O_NONBLOCK);
  if (fd < 0) return Errno{-fd};
  UniqueFd owned(fd);
  struct stat st;
  if (fstat(fd, &st) < 0) return Errno{errno};
  if (!S_ISREG(st.st_mode)) return Errno{S_ISDIR(st.st_mode) ? EISDIR : ENXIO};
  if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return owned;
}

// Regular files never carry setuid/setgid on the host: the guest may be root.
mode_t HostMode(const Node& node, mode_t mode) {
  mode &= 07777;
  if (!node.IsDir()) mode &= ~(S_ISUID | S_ISGID);
  return mode;
}

SysStatus Check(long r) {
  if (r < 0) return Errno{errno};
  return {};
}

void CopyAttrs(Node& node, const struct stat& st) {
  Attr& a = node.attr();
  a.mode = st.st_mode;
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  g_host_owner_view.Apply(a.uid, a.gid);  // a -v mount's (see HostDir::owner_view)
  a.atime = st.st_atim;
  a.mtime = st.st_mtim;
  a.ctime = st.st_ctim;
  node.host_mode = st.st_mode;
  node.nlink = static_cast<uint32_t>(st.st_nlink);
  if (node.IsLowerFile()) node.lower_size = st.st_size;
  // Still a clean cache entry (vfs_cache.cc): it is what the host has now.
  if (node.IsCached()) node.looked_up_ctime = st.st_ctim;
}

}  // namespace

bool Vfs::RwStat(const Node& node, struct stat* st) {
  MountFsIdentity id(*node.RwHost());
  int r = node.host_dir ? fstat(node.host_dir->fd.get(), st)
                        : fstatat(node.lower_parent->fd.get(), node.lower_name.c_str(), st,
                                  AT_SYMLINK_NOFOLLOW);
  // Another object under the name now (the host replaced it): the node's
  // own attributes stand; the next lookup finds the new one.
  if (r < 0 || st->st_ino != node.attr().ino ||
      (st->st_mode & S_IFMT) != (node.attr().mode & S_IFMT))
    return false;
  st->st_dev = kVfsDev;
  // The caller's own ids read as the guest's, as its lookups show them.
  if (node.RwHost()->owner_view) g_host_owner_view.Apply(st->st_uid, st->st_gid);
  return true;
}

void Vfs::RwRefresh(Node& node) {
  struct stat st;
  if (RwStat(node, &st)) CopyAttrs(node, st);
}

NodeRef Vfs::RwChild(const NodeRef& dir, const std::string& name) {
  // Looked up as the mount's identity: a directory only its owner may search
  // is the guest's to search.
  MountFsIdentity id(*dir->host_dir);
  struct stat st;
  auto it = dir->children.find(name);
  if (fstatat(dir->host_dir->fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (it != dir->children.end()) dir->children.erase(it);
    return nullptr;
  }
  if (it != dir->children.end()) {
    Node& old = *it->second;
    if (old.attr().ino == st.st_ino && (old.attr().mode & S_IFMT) == (st.st_mode & S_IFMT)) {
      CopyAttrs(old, st);
      return it->second;
    }
    dir->children.erase(it);
  }
  NodeRef node = MakeLowerNode(dir->host_dir, name, st);
  if (!node) return nullptr;
  node->looked_up_ctime = node->attr().ctime;
  cache_bytes_ += kNodeCost + kNameCost + name.size();
  AddChild(dir, name, node);
  return node;
}

SysResult<NodeRef> Vfs::RwCreate(const Resolved& at, NodeKind kind, mode_t mode) {
  const HostDir& h = *at.parent->host_dir;
  // mknod of a FIFO: a host FIFO is not shown (MakeLowerNode), so not made.
  if (kind != NodeKind::kFile && kind != NodeKind::kDir) return Errno{EPERM};
  UniqueFd created;
  {
    MountFsIdentity id(h);
    int fd;
    if (kind == NodeKind::kFile) {
      mode_t m = mode & 0777;
      fd = OpenBeneath(h.fd.get(), at.name, O_CREAT | O_EXCL | O_RDWR | O_NONBLOCK, m);
      if (fd < 0) return Errno{-fd};
      fchmod(fd, m);  // exactly the guest's mode, whatever the sentry's umask
      created = UniqueFd(fd);
      fd = -1;
    } else {
      mode_t m = mode & 07777 & ~(S_ISUID);
      if (mkdirat(h.fd.get(), at.name.c_str(), m) < 0) return Errno{errno};
      // Swapped for a link since: openat2 refuses it, the mode stays the umask's.
      fd = OpenBeneath(h.fd.get(), at.name, O_RDONLY | O_DIRECTORY);
      if (fd >= 0) fchmod(fd, m);
    }
    if (fd >= 0) close(fd);
  }
  at.parent->children.erase(at.name);
  NodeRef node = RwChild(at.parent, at.name);
  if (!node) return Errno{ENOENT};  // the host removed it at once
  if (kind == NodeKind::kFile) {
    t_created.node = node;
    t_created.fd = std::move(created);
  }
  return node;
}

SysResult<NodeRef> Vfs::RwSymlink(const Resolved& at, std::string_view target) {
  const HostDir& h = *at.parent->host_dir;
  {
    MountFsIdentity id(h);
    // The target is text: the host never follows it for the guest (the VFS
    // walk resolves it inside the sandbox's tree).
    SYS_TRY(Check(symlinkat(std::string(target).c_str(), h.fd.get(), at.name.c_str())));
  }
  at.parent->children.erase(at.name);
  NodeRef node = RwChild(at.parent, at.name);
  if (!node) return Errno{ENOENT};
  return node;
}

SysStatus Vfs::RwLink(const NodeRef& node, const Resolved& at) {
  const HostDir* to = at.parent->RwHost();
  const HostDir* from = node->host_dir ? nullptr : node->RwHost();
  if (!to || !from || to->mount_id != from->mount_id || !at.parent->host_dir) return Errno{EXDEV};
  {
    MountFsIdentity id(*to);
    // No AT_SYMLINK_FOLLOW: the name itself is linked, whatever it is now.
    SYS_TRY(Check(linkat(node->lower_parent->fd.get(), node->lower_name.c_str(), to->fd.get(),
                         at.name.c_str(), 0)));
  }
  at.parent->children.erase(at.name);
  RwRefresh(*node);
  RwRefresh(*at.parent);
  return {};
}

SysStatus Vfs::RwRemove(const Resolved& at, bool dir) {
  const HostDir& h = *at.parent->host_dir;
  {
    MountFsIdentity id(h);
    SYS_TRY(Check(unlinkat(h.fd.get(), at.name.c_str(), dir ? AT_REMOVEDIR : 0)));
  }
  at.parent->children.erase(at.name);
  if (dir) {
    at.node->removed = true;
  } else if (at.node->nlink > 0) {
    --at.node->nlink;
  }
  at.node->attr().ctime = Now();
  RwRefresh(*at.parent);
  return {};
}

SysStatus Vfs::RwRename(const Resolved& from, const Resolved& to, unsigned flags) {
  // A mount's own root moves no more than a Linux mount point does.
  auto is_mount_root = [](const Resolved& r) {
    return r.node && r.node->host_dir && r.node->host_dir->read_write &&
           !(r.parent && r.parent->host_dir && r.parent->host_dir->read_write);
  };
  if (is_mount_root(from) || is_mount_root(to)) return Errno{EBUSY};
  const HostDir* fh = from.parent->host_dir ? from.parent->RwHost() : nullptr;
  const HostDir* th = to.parent->host_dir ? to.parent->RwHost() : nullptr;
  if (!fh || !th || fh->mount_id != th->mount_id) return Errno{EXDEV};
  {
    MountFsIdentity id(*fh);
    SYS_TRY(Check(syscall(SYS_renameat2, fh->fd.get(), from.name.c_str(), th->fd.get(),
                          to.name.c_str(), flags)));
  }
  NodeRef src = from.node;
  NodeRef dst = to.node;
  from.parent->children.erase(from.name);
  to.parent->children.erase(to.name);
  // The moved nodes keep working from their new place; what a moved
  // directory had cached is looked up again (paths under it changed).
  auto relocate = [this](const NodeRef& node, const NodeRef& dir, const std::string& name) {
    if (node->host_dir) {
      node->host_dir->path = dir->host_dir->path + "/" + name;
      node->children.clear();
    } else {
      node->lower_parent = dir->host_dir;
      node->lower_name = name;
    }
    AddChild(dir, name, node);
    node->attr().ctime = Now();
  };
  relocate(src, to.parent, to.name);
  if (dst && (flags & RENAME_EXCHANGE)) {
    relocate(dst, from.parent, from.name);
  } else if (dst) {
    if (dst->IsDir()) {
      dst->removed = true;
    } else if (dst->nlink > 0) {
      --dst->nlink;
    }
  }
  RwRefresh(*from.parent);
  RwRefresh(*to.parent);
  return {};
}

SysStatus Vfs::RwChmod(Node& node, mode_t mode) {
  const HostDir& h = *node.RwHost();
  mode_t m = HostMode(node, mode);
  {
    MountFsIdentity id(h);
    if (node.host_dir) {
      SYS_TRY(Check(syscall(SYS_fchmodat2, h.fd.get(), "", m, AT_EMPTY_PATH)));
    } else {
      // EOPNOTSUPP for a symlink, as Linux's fchmodat2 answers.
      SYS_TRY(Check(
          syscall(SYS_fchmodat2, h.fd.get(), node.lower_name.c_str(), m, AT_SYMLINK_NOFOLLOW)));
    }
  }
  RwRefresh(node);
  return {};
}

SysStatus Vfs::RwChown(Node& node, uid_t uid, gid_t gid) {
  const HostDir& h = *node.RwHost();
  {
    MountFsIdentity id(h);
    if (node.host_dir) {
      SYS_TRY(Check(fchownat(h.fd.get(), "", uid, gid, AT_EMPTY_PATH)));
    } else {
      SYS_TRY(Check(fchownat(h.fd.get(), node.lower_name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW)));
    }
  }
  RwRefresh(node);
  return {};
}

SysStatus Vfs::RwUtimens(Node& node, const timespec* times) {
  const HostDir& h = *node.RwHost();
  {
    MountFsIdentity id(h);
    if (node.host_dir) {
      SYS_TRY(Check(utimensat(h.fd.get(), "", times, AT_EMPTY_PATH)));
    } else {
      SYS_TRY(Check(utimensat(h.fd.get(), node.lower_name.c_str(), times, AT_SYMLINK_NOFOLLOW)));
    }
  }
  RwRefresh(node);
  return {};
}

SysStatus Vfs::RwTruncate(Node& node, off_t len) {
  if (!node.IsLowerFile()) return Errno{EINVAL};
  const HostDir& h = *node.RwHost();
  {
    MountFsIdentity id(h);
    SYS_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegular(h.fd.get(), node.lower_name, O_WRONLY));
    SYS_TRY(Check(ftruncate(fd.get(), len)));
  }
  RwRefresh(node);
  return {};
}

SysResult<UniqueFd> Vfs::RwOpen(Node& node, int flags) {
  const HostDir& h = *node.RwHost();
  int keep = flags & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | O_DIRECT);
  UniqueFd created;
  if (t_created.node.lock().get() == &node) created = std::move(t_created.fd);
  t_created = {};
  MountFsIdentity id(h);
  SysResult<UniqueFd> fd = OpenRegular(h.fd.get(), node.lower_name, keep);
  if (fd.ok() || fd.error() != EACCES || created.get() < 0) return fd;
  struct stat now, made;
  if (fstatat(h.fd.get(), node.lower_name.c_str(), &now, AT_SYMLINK_NOFOLLOW) < 0 ||
      fstat(created.get(), &made) < 0 || now.st_ino != made.st_ino || now.st_dev != made.st_dev) {
    return fd;  // the name is another file's now
  }
  // The open right after the create, on a mode that denies it: the creating
  // open's fd (O_RDWR, the one difference from Linux's O_WRONLY there).
  fcntl(created.get(), F_SETFL, flags & (O_APPEND | O_NONBLOCK | O_DIRECT));
  return created;
}

}  // namespace sentry::vfs
