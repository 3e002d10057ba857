// Creating, linking, removing and renaming names, with Linux's rules.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

// The errno for a Resolved that names no creatable entry ("/", ".", "..").
int NotCreatable(const Resolved& at) { return at.node ? EEXIST : ENOENT; }

bool IsAncestor(const NodeRef& maybe_ancestor, NodeRef node) {
  while (node) {
    if (node == maybe_ancestor) return true;
    node = node->parent.lock();
  }
  return false;
}

}  // namespace

SysStatus Vfs::Charge(uint64_t bytes) {
  if (meta_limit_ && meta_bytes_ + bytes > meta_limit_) return Errno{ENOSPC};
  meta_bytes_ += bytes;
  return {};
}

void Vfs::RefundNode(Node& node) {
  // An unlinked file still open keeps its xattrs (fsetxattr works on it), but
  // they go with the node: RemoveXattr refunds no more than xattr_bytes.
  Refund(node.charged + node.xattr_bytes);
  node.charged = 0;
  node.xattr_bytes = 0;
}

SysStatus Vfs::MayDelete(const Node& dir, const Node& victim, const Creds& creds) const {
  if (dir.lookup) return Errno{EACCES};  // /proc and its like are read-only
  SYS_TRY(Permission(dir, W_OK | X_OK, creds));
  // The sticky bit (/tmp): only the owner of the entry or of the dir may remove it.
  if ((dir.attr().mode & S_ISVTX) && !creds.IsRoot() && creds.uid != dir.attr().uid &&
      creds.uid != victim.attr().uid) {
    return Errno{EPERM};
  }
  return {};
}

SysStatus Vfs::ChargeWhiteout(const NodeRef& dir, const std::string& name, const Node& child) {
  // A node a host lookup made under this name is (nearly always: a lower
  // node renamed within its directory is charged twice) a host name that
  // was never charged; one the guest made carries its name's charge already.
  if (!dir->host_dir || !child.IsCached() || dir->whiteouts.count(name)) return {};
  return Charge(NameCost(name));
}

void Vfs::Detach(const NodeRef& dir, const std::string& name) {
  auto it = dir->children.find(name);
  if (it != dir->children.end() && it->second->IsDir()) --dir->subdir_delta;
  dir->children.erase(name);
  // A new whiteout keeps the name's charge (ChargeWhiteout made one for a
  // host name): creating and removing unique names in a host directory must
  // not grow the sentry for free.
  if (!dir->host_dir || !dir->whiteouts.insert(name).second) Refund(NameCost(name));
  Touch(*dir);
}

void Vfs::ReleaseFile(Node& node) {
  if (node.nlink > 0) --node.nlink;
  if (node.nlink == 0) RefundNode(node);
  node.attr().ctime = Now();
  if (node.nlink == 0 && !node.store_name.empty()) {
    // Guest fds still open keep the data alive, as an unlinked file's do.
    store_->Release(node.store_name);
  }
}

SysResult<NodeRef> Vfs::Create(const Resolved& at, NodeKind kind, mode_t mode, const Creds& creds,
                               UniqueFd* wronly) {
  if (!at.Creatable()) return Errno{NotCreatable(at)};
  if (at.node) return Errno{EEXIST};
  if (at.trailing_slash && kind != NodeKind::kDir) return Errno{ENOENT};
  if (at.parent->lookup) return Errno{EACCES};
  SYS_TRY(Writable(*at.parent));
  SYS_TRY(Permission(*at.parent, W_OK | X_OK, creds));
  if (IsRwDir(*at.parent)) return RwCreate(at, kind, mode);
  SYS_TRY(Charge(NameCost(at.name) + kNodeCost));
  mode_t type = kind == NodeKind::kDir ? S_IFDIR : kind == NodeKind::kFifo ? S_IFIFO : S_IFREG;
  gid_t gid = creds.gid;
  // A setgid directory hands its group (and, to subdirectories, the bit) down.
  if (at.parent->attr().mode & S_ISGID) {
    gid = at.parent->attr().gid;
    if (kind == NodeKind::kDir) mode |= S_ISGID;
  }
  NodeRef node = NewNode(kind, type | (mode & 07777), creds.uid, gid);
  node->charged = kNodeCost;
  if (kind == NodeKind::kFile || kind == NodeKind::kFifo) {
    SysResult<std::string> name = store_->Create(mode, kind == NodeKind::kFile ? wronly : nullptr);
    if (name.ok() && kind == NodeKind::kFifo) {
      store_->Remove(*name);
      if (SysStatus s = store_->MakeFifo(*name); !s.ok()) name = Errno{s.error()};
    }
    if (!name.ok()) {
      Refund(NameCost(at.name) + kNodeCost);
      return Errno{name.error()};
    }
    node->store_name = *name;
  }
  AddChild(at.parent, at.name, node);
  if (kind == NodeKind::kDir) ++at.parent->subdir_delta;
  Touch(*at.parent);
  ShadowAdd(at.parent, at.name, *node);
  return node;
}

SysResult<NodeRef> Vfs::CreateSocket(const Resolved& at, mode_t mode, const Creds& creds,
                                     const std::function<SysResult<std::string>()>& bind) {
  if (at.node) return Errno{EADDRINUSE};
  if (!at.Creatable()) return Errno{NotCreatable(at)};
  if (at.trailing_slash) return Errno{ENOENT};
  if (at.parent->lookup) return Errno{EACCES};
  SYS_TRY(Writable(*at.parent));
  SYS_TRY(Permission(*at.parent, W_OK | X_OK, creds));
  // A socket inode on the host would be a door that host programs could
  // connect to: not made (EACCES, as a directory bind may not write).
  if (IsRwDir(*at.parent)) return Errno{EACCES};
  SYS_TRY(Charge(NameCost(at.name) + kNodeCost));
  SysResult<std::string> name = bind();
  if (!name.ok()) {
    Refund(NameCost(at.name) + kNodeCost);
    return Errno{name.error()};
  }
  NodeRef node = NewNode(NodeKind::kSocket, S_IFSOCK | (mode & 07777), creds.uid, creds.gid);
  node->charged = kNodeCost;
  node->store_name = *name;
  AddChild(at.parent, at.name, node);
  Touch(*at.parent);
  ShadowAdd(at.parent, at.name, *node);
  return node;
}

SysResult<NodeRef> Vfs::Symlink(const Resolved& at, std::string_view target, const Creds& creds) {
  if (target.empty()) return Errno{ENOENT};
  if (!at.Creatable()) return Errno{NotCreatable(at)};
  if (at.node) return Errno{EEXIST};
  if (at.trailing_slash) return Errno{ENOENT};
  if (at.parent->lookup) return Errno{EACCES};
  SYS_TRY(Writable(*at.parent));
  SYS_TRY(Permission(*at.parent, W_OK | X_OK, creds));
  if (IsRwDir(*at.parent)) return RwSymlink(at, target);
  SYS_TRY(Charge(NameCost(at.name) + kNodeCost + target.size()));
  NodeRef node = NewNode(NodeKind::kSymlink, S_IFLNK | 0777, creds.uid, creds.gid);
  node->charged = kNodeCost + target.size();
  node->target = std::string(target);
  AddChild(at.parent, at.name, node);
  Touch(*at.parent);
  ShadowAdd(at.parent, at.name, *node);
  return node;
}

SysStatus Vfs::Link(const NodeRef& node, const Resolved& at, const Creds& creds) {
  LowerChanged(*node);
  if (node->IsDir()) return Errno{EPERM};
  if (!at.Creatable()) return Errno{NotCreatable(at)};
  if (at.node) return Errno{EEXIST};
  if (at.trailing_slash) return Errno{ENOENT};
  if (at.parent->lookup) return Errno{EACCES};
  SYS_TRY(Writable(*at.parent));
  SYS_TRY(Permission(*at.parent, W_OK | X_OK, creds));
  if (node->nlink == 0 && node->kind() == NodeKind::kFile) return Errno{ENOENT};
  // protected_hardlinks, as fs/namei.c may_linkat: the owner, or a plain file
  // the caller may read and write.
  if (!creds.IsRoot() && creds.uid != node->attr().uid) {
    mode_t m = node->attr().mode;
    bool plain = S_ISREG(m) && !(m & S_ISUID) && !((m & S_ISGID) && (m & S_IXGRP));
    if (!plain || !Permission(*node, R_OK | W_OK, creds).ok()) return Errno{EPERM};
  }
  if (IsRwDir(*at.parent) || node->IsHostRw()) return RwLink(node, at);
  SYS_TRY(Charge(NameCost(at.name)));
  AddChild(at.parent, at.name, node);
  ++node->nlink;
  node->attr().ctime = Now();
  Touch(*at.parent);
  ShadowAdd(at.parent, at.name, *node);
  return {};
}

SysStatus Vfs::Unlink(const Resolved& at, const Creds& creds) {
  if (!at.node) return Errno{ENOENT};
  if (at.node->IsDir()) return Errno{EISDIR};
  if (!at.Creatable()) return Errno{EISDIR};
  if (at.trailing_slash) return Errno{ENOTDIR};
  SYS_TRY(Writable(*at.parent));
  SYS_TRY(MayDelete(*at.parent, *at.node, creds));
  if (IsRwDir(*at.parent)) return RwRemove(at, false);
  SYS_TRY(ChargeWhiteout(at.parent, at.name, *at.node));
  ShadowRemove(at.parent, at.name, *at.node);
  Detach(at.parent, at.name);
  ReleaseFile(*at.node);
  return {};
}

SysStatus Vfs::Rmdir(const Resolved& at, const Creds& creds) {
  if (!at.node) return Errno{ENOENT};
  if (at.name == ".") return Errno{EINVAL};
  if (at.name == ".." || at.name == "/") return Errno{at.name == "/" ? EBUSY : ENOTEMPTY};
  if (!at.node->IsDir()) return Errno{ENOTDIR};
  SYS_TRY(Writable(*at.parent));
  SYS_TRY(MayDelete(*at.parent, *at.node, creds));
  if (IsRwDir(*at.parent)) return RwRemove(at, true);  // the host says ENOTEMPTY
  if (IsRwDir(*at.node)) return Errno{EBUSY};          // a :rw mount point, as Linux's
  if (!IsEmptyDir(at.node)) return Errno{ENOTEMPTY};
  SYS_TRY(ChargeWhiteout(at.parent, at.name, *at.node));
  DropShadow(*at.node);
  ShadowRemove(at.parent, at.name, *at.node);
  Detach(at.parent, at.name);
  RefundNode(*at.node);
  at.node->removed = true;
  at.node->attr().ctime = Now();
  return {};
}

SysStatus Vfs::Rename(const Resolved& from, const Resolved& to, unsigned flags,
                      const Creds& creds) {
  if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE)) return Errno{EINVAL};
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) return Errno{EINVAL};
  // ".", ".." and "/" name no entry that could move: EBUSY, checked first.
  if (!from.Creatable() || !to.Creatable()) return Errno{EBUSY};
  if (!from.node) return Errno{ENOENT};
  const NodeRef& src = from.node;
  const NodeRef& dst = to.node;
  if ((from.trailing_slash || to.trailing_slash) && !src->IsDir()) return Errno{ENOTDIR};
  if (flags & RENAME_EXCHANGE) {
    if (!dst) return Errno{ENOENT};
  } else if (dst && (flags & RENAME_NOREPLACE)) {
    return Errno{EEXIST};
  }
  SYS_TRY(Writable(*from.parent));
  SYS_TRY(Writable(*to.parent));
  SYS_TRY(MayDelete(*from.parent, *src, creds));
  if (dst) {
    SYS_TRY(MayDelete(*to.parent, *dst, creds));
  } else {
    if (to.parent->lookup) return Errno{EACCES};
    SYS_TRY(Permission(*to.parent, W_OK | X_OK, creds));
  }
  if (IsRwDir(*from.parent) || IsRwDir(*to.parent) || src->IsHostRw() || (dst && dst->IsHostRw())) {
    return RwRename(from, to, flags);
  }
  if (src == dst) return {};  // same inode: nothing to do, as vfs_rename
  if (src->IsDir() && IsAncestor(src, to.parent)) return Errno{EINVAL};
  // The target an ancestor of the source: fs/namei.c says ENOTEMPTY, or EINVAL
  // for an exchange (which would make a directory its own ancestor).
  if (dst && dst->IsDir() && IsAncestor(dst, from.parent)) {
    return Errno{(flags & RENAME_EXCHANGE) ? EINVAL : ENOTEMPTY};
  }
  if (dst && !(flags & RENAME_EXCHANGE)) {
    if (src->IsDir() && !dst->IsDir()) return Errno{ENOTDIR};
    if (!src->IsDir() && dst->IsDir()) return Errno{EISDIR};
    if (dst->IsDir() && !IsEmptyDir(dst)) return Errno{ENOTEMPTY};
  }
  if (flags & RENAME_EXCHANGE) {
    int moved = (src->IsDir() ? 1 : 0) - (dst->IsDir() ? 1 : 0);
    from.parent->subdir_delta -= moved;
    to.parent->subdir_delta += moved;
    ShadowRename(from, to, flags);
    AddChild(from.parent, from.name, dst);
    AddChild(to.parent, to.name, src);
    Touch(*from.parent);
    Touch(*to.parent);
    src->attr().ctime = dst->attr().ctime = Now();
    return {};
  }
  // A rename onto a new name adds a name (the old one is refunded by Detach,
  // or kept by its whiteout).
  if (!dst) SYS_TRY(Charge(NameCost(to.name)));
  if (SysStatus s = ChargeWhiteout(from.parent, from.name, *src); !s.ok()) {
    if (!dst) Refund(NameCost(to.name));
    return s;
  }
  ShadowRename(from, to, flags);
  if (dst) {
    if (dst->IsDir()) {
      RefundNode(*dst);
      dst->removed = true;
      --to.parent->subdir_delta;  // replaced below by src, counted again
    } else {
      ReleaseFile(*dst);
    }
  }
  Detach(from.parent, from.name);
  AddChild(to.parent, to.name, src);
  if (src->IsDir()) ++to.parent->subdir_delta;
  Touch(*to.parent);
  src->attr().ctime = Now();
  return {};
}

}  // namespace sentry::vfs
