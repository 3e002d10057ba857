// Permissions, attributes, copy-up and opening file data.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <cerrno>

#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

bool Later(const timespec& a, const timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

SysResult<UniqueFd> MemfdWith(const std::string& data) {
  int fd = memfd_create("sentry-synthetic", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno{errno};
  UniqueFd owned(fd);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n <= 0) return Errno{EIO};
    off += n;
  }
  lseek(fd, 0, SEEK_SET);
  fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  return owned;
}

}  // namespace

// As fs/namei.c's generic_permission: owner, then group, then other bits; root
// passes read/write always and exec when any x bit is set (or on directories).
SysStatus Vfs::Permission(const Node& node, int may, const Creds& creds) const {
  // A read-only mount answers a write with EROFS before any mode bit, as
  // inode_permission's sb_permission does.
  if ((may & W_OK) && node.read_only) return Errno{EROFS};
  if (node.IsLower() && !node.IsHostRw()) {
    // Reading or searching (and reading to copy up before a write) happens on
    // the host as "other": its other-bits must allow it, whoever the guest is.
    int host = (may & (R_OK | X_OK)) | ((may & W_OK) && !node.IsDir() ? R_OK : 0);
    if ((node.host_mode & host & 7) != (host & 7)) return Errno{EACCES};
  }
  mode_t mode = node.attr().mode;
  if (creds.IsRoot()) {
    if ((may & X_OK) && !node.IsDir() && !(mode & 0111)) return Errno{EACCES};
    return {};
  }
  mode_t bits;
  if (creds.uid == node.attr().uid) {
    bits = (mode >> 6) & 7;
  } else if (creds.InGroup(node.attr().gid)) {
    bits = (mode >> 3) & 7;
  } else {
    bits = mode & 7;
  }
  if ((may & bits & 7) != (may & 7)) return Errno{EACCES};
  return {};
}

// What every stat says from the node's own attributes.
static struct stat NodeStat(const Node& node) {
  struct stat st {};
  const Attr& a = node.attr();
  st.st_dev = a.dev ? a.dev : kVfsDev;
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_rdev = a.rdev;
  st.st_blksize = 4096;
  st.st_atim = a.atime;
  st.st_mtim = a.mtime;
  st.st_ctim = a.ctime;
  st.st_nlink = node.nlink;
  return st;
}

struct stat Vfs::Stat(const Node& node) {
  struct stat st = NodeStat(node);
  // A write-through mount's entry, as the host has it now.
  if (node.IsHostRw() && RwStat(node, &st)) return st;
  switch (node.kind()) {
    case NodeKind::kDir: {
      st.st_size = 4096;
      st.st_blocks = 8;
      if (!node.host_dir || node.host_listed) {
        nlink_t n = 2;
        for (const auto& [name, child] : node.children)
          if (child->IsDir()) ++n;
        for (const auto& [name, entry] : node.host_unlooked)
          if (entry.type == DT_DIR) ++n;
        st.st_nlink = n;
      } else {
        // The host's count, corrected by what the upper layer changed.
        st.st_nlink = static_cast<nlink_t>(static_cast<int>(node.nlink) + node.subdir_delta);
      }
      break;
    }
    case NodeKind::kFile:
      if (node.IsUpperFile()) {
        struct stat data;
        if (store_->Stat(node.store_name, &data).ok()) return StatWithData(node, data);
      } else {
        st.st_size = node.lower_size;
        st.st_blocks = (node.lower_size + 511) / 512;
      }
      break;
    case NodeKind::kSymlink:
      st.st_size = static_cast<off_t>(node.target.size());
      break;
    case NodeKind::kSynthetic:
      // /etc files report their size; /proc files report 0, as procfs does.
      if (node.generate && node.sized) st.st_size = static_cast<off_t>(node.generate().size());
      break;
    default:
      break;
  }
  return st;
}

struct stat Vfs::StatWithData(const Node& node, const struct stat& data) {
  struct stat st = NodeStat(node);
  const Attr& a = node.attr();
  st.st_size = data.st_size;
  st.st_blocks = data.st_blocks;
  st.st_atim = data.st_atim;
  st.st_mtim = data.st_mtim;
  st.st_ctim = Later(data.st_ctim, a.ctime) ? data.st_ctim : a.ctime;
  return st;
}

void Vfs::Touch(Node& dir) {
  LowerChanged(dir);
  dir.attr().mtime = dir.attr().ctime = Now();
}

SysStatus Vfs::Chmod(Node& node, mode_t mode, const Creds& creds) {
  LowerChanged(node);
  SYS_TRY(Writable(node));
  if (!creds.IsRoot() && creds.uid != node.attr().uid) return Errno{EPERM};
  if (node.kind() == NodeKind::kSynthetic || node.kind() == NodeKind::kDevice) {
    if (!creds.IsRoot()) return Errno{EPERM};
  }
  mode &= 07777;
  // A non-member may not keep the setgid bit, as the kernel's setattr_prepare.
  if (!creds.IsRoot() && !creds.InGroup(node.attr().gid)) mode &= ~S_ISGID;
  if (node.IsHostRw()) return RwChmod(node, mode);
  node.attr().mode = (node.attr().mode & S_IFMT) | mode;
  node.attr().ctime = Now();
  if (node.IsUpperFile()) store_->SetMode(node.store_name, mode);
  return {};
}

SysStatus Vfs::Chown(Node& node, uid_t uid, gid_t gid, const Creds& creds) {
  LowerChanged(node);
  SYS_TRY(Writable(node));
  Attr& a = node.attr();
  bool uid_change = uid != static_cast<uid_t>(-1) && uid != a.uid;
  bool gid_change = gid != static_cast<gid_t>(-1) && gid != a.gid;
  if (!creds.IsRoot()) {
    if (uid_change) return Errno{EPERM};
    if (gid_change && (creds.uid != a.uid || !creds.InGroup(gid))) return Errno{EPERM};
  }
  if ((uid_change || gid_change) && node.IsHostRw()) return RwChown(node, uid, gid);
  if (uid_change) a.uid = uid;
  if (gid_change) a.gid = gid;
  if ((uid_change || gid_change) && !node.IsDir()) a.mode &= ~(S_ISUID | S_ISGID);
  a.ctime = Now();
  return {};
}

SysStatus Vfs::Utimens(Node& node, const timespec* times, const Creds& creds) {
  LowerChanged(node);
  SYS_TRY(Writable(node));
  bool set_both_now =
      times == nullptr || (times[0].tv_nsec == UTIME_NOW && times[1].tv_nsec == UTIME_NOW);
  bool owner = creds.IsRoot() || creds.uid == node.attr().uid;
  if (set_both_now) {
    if (!owner && !Permission(node, W_OK, creds).ok()) return Errno{EACCES};
  } else if (!owner) {
    return Errno{EPERM};
  }
  for (int i = 0; times && i < 2; ++i) {
    long ns = times[i].tv_nsec;
    if (ns != UTIME_NOW && ns != UTIME_OMIT && (ns < 0 || ns >= 1000000000)) return Errno{EINVAL};
  }
  if (node.IsHostRw()) return RwUtimens(node, times);
  timespec now = Now();
  timespec at = times == nullptr || times[0].tv_nsec == UTIME_NOW ? now : times[0];
  timespec mt = times == nullptr || times[1].tv_nsec == UTIME_NOW ? now : times[1];
  bool set_a = times == nullptr || times[0].tv_nsec != UTIME_OMIT;
  bool set_m = times == nullptr || times[1].tv_nsec != UTIME_OMIT;
  if (node.IsUpperFile()) {
    SYS_ASSIGN_OR_RETURN(UniqueFd fd, store_->Open(node.store_name, O_RDONLY));
    timespec ts[2] = {at, mt};
    if (!set_a) ts[0].tv_nsec = UTIME_OMIT;
    if (!set_m) ts[1].tv_nsec = UTIME_OMIT;
    SYS_TRY(store_->SetTimes(fd.get(), ts));
  }
  if (set_a) node.attr().atime = at;
  if (set_m) node.attr().mtime = mt;
  node.attr().ctime = now;
  return {};
}

SysStatus Vfs::CopyUp(Node& node) {
  LowerChanged(node);
  SYS_TRY(Writable(node));
  if (node.IsHostRw()) return {};  // its data is the host's, written in place
  if (node.kind() == NodeKind::kSynthetic && node.sized && node.generate) {
    SYS_ASSIGN_OR_RETURN(std::string name, store_->Create(node.attr().mode));
    SYS_ASSIGN_OR_RETURN(UniqueFd fd, store_->Open(name, O_WRONLY));
    std::string data = node.generate();
    if (write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
      store_->Remove(name);
      return Errno{ENOSPC};
    }
    node.BecomeUpperFile(name);
    return {};
  }
  if (!node.IsLowerFile()) return {};
  SYS_ASSIGN_OR_RETURN(std::string name, store_->Create(node.attr().mode));
  auto fail = [&](int err) {
    store_->Remove(name);
    return Errno{err};
  };
  int src = openat(node.lower_parent->fd.get(), node.lower_name.c_str(),
                   O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (src < 0) return fail(errno);
  UniqueFd src_fd(src);
  auto dst = store_->Open(name, O_WRONLY);
  if (!dst.ok()) return fail(dst.error());
  while (true) {
    ssize_t n = sendfile(dst->get(), src, nullptr, 1 << 20);
    if (n < 0) return fail(errno);
    if (n == 0) break;
  }
  timespec ts[2] = {node.attr().atime, node.attr().mtime};
  (void)store_->SetTimes(dst->get(), ts);
  node.store_name = name;
  node.lower_parent.reset();
  node.lower_name.clear();
  node.host_dev = 0;
  node.host_ino = 0;
  return {};
}

SysStatus Vfs::Truncate(Node& node, off_t len, const Creds& creds) {
  LowerChanged(node);
  if (node.IsDir()) return Errno{EISDIR};
  SYS_TRY(Writable(node));
  if (node.kind() == NodeKind::kSynthetic && node.sized) SYS_TRY(CopyUp(node));
  if (node.kind() != NodeKind::kFile) return Errno{EINVAL};
  if (len < 0) return Errno{EINVAL};
  if (node.IsHostRw()) return RwTruncate(node, len);
  SYS_TRY(CopyUp(node));
  SYS_TRY(store_->Truncate(node.store_name, len));
  node.attr().ctime = Now();
  return {};
}

SysResult<UniqueFd> Vfs::OpenData(Node& node, int flags, const Resolved* via) {
  int acc = flags & O_ACCMODE;
  int keep = flags & (O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | O_DIRECT);
  switch (node.kind()) {
    case NodeKind::kFile: {
      if (node.IsLowerFile() && node.IsHostRw()) return RwOpen(node, flags);
      if (node.IsLowerFile() && acc == O_RDONLY) {
        int fd = openat(node.lower_parent->fd.get(), node.lower_name.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (keep & ~O_APPEND));
        if (fd < 0) return Errno{errno};
        return UniqueFd(fd);
      }
      // Any other open of a file copies it up; for an upper file that is the
      // invalidation that must come before a writable description of it is
      // donated (fast_meta_publish.h: its published answer would go stale
      // by native writes). A read-only one changes nothing: none.
      if (!(node.IsUpperFile() && acc == O_RDONLY)) SYS_TRY(CopyUp(node));
      if (const std::string* shadow = via && via->parent ? ShadowOf(*via->parent) : nullptr) {
        // Through its link in a watched directory's shadow (vfs_watch.cc).
        auto fd = store_->OpenShadowed(*shadow + "/" + via->name, node.store_name, acc | keep);
        if (fd.ok()) return fd;
      }
      return store_->Open(node.store_name, acc | keep);
    }
    case NodeKind::kDevice: {
      int flags = acc | keep | O_NOCTTY | O_CLOEXEC;
      int fd = node.device_parent ? openat(node.device_parent->fd.get(), node.device_name.c_str(),
                                           flags | O_NOFOLLOW)
                                  : open(node.device_path.c_str(), flags);
      if (fd < 0) return Errno{errno};
      return UniqueFd(fd);
    }
    case NodeKind::kSynthetic:
      // An object of the sentry's shown read-only (the fast-metadata region).
      if (node.reopen) return acc == O_RDONLY ? node.reopen(flags) : Errno{EACCES};
      if (acc != O_RDONLY && node.sized) {  // /etc: copied up; /proc: read-only
        SYS_TRY(CopyUp(node));
        return store_->Open(node.store_name, acc | keep);
      }
      if (acc != O_RDONLY) return Errno{EACCES};
      return MemfdWith(node.generate ? node.generate() : std::string());
    case NodeKind::kFifo: {
      if (node.store_name.empty()) return Errno{ENXIO};
      // Opened non-blocking so the sentry never waits for the other end; the
      // guest's own O_NONBLOCK choice is restored on the open file description.
      int fd = openat(store_->dir_fd(), node.store_name.c_str(),
                      acc | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) return Errno{errno};
      if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return UniqueFd(fd);
    }
    case NodeKind::kSocket:
      return Errno{ENXIO};
    default:
      return Errno{ELOOP};
  }
}

}  // namespace sentry::vfs
