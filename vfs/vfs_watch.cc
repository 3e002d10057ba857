// What an inotify watch is put on, and the shadows that keep directory
// watches in step with the sandbox's names.
//
// A directory's names live only in the VFS, so no host directory changes when
// the guest makes or removes one. A watched directory gets a shadow: a real
// store directory with one entry per name (a subdirectory for a directory, a
// hard link to the store file for an upper file, an empty file otherwise).
// Each change the guest makes to the directory is made to the shadow too, by
// the same kind of call (mkdir, mknod, link, unlink, rename), so the kernel
// itself reports it to every watch with the very names the guest sees, with
// IN_ISDIR and rename cookies as it makes them. An upper file opened by a name
// in a shadowed directory is opened through its link there (OpenData), so its
// opens, reads, writes and closes reach the directory's watches with its name.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/cleanup/cleanup.h"
#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

std::string LinkFrom(const Node& child) { return child.IsUpperFile() ? child.store_name : ""; }

}  // namespace

SysStatus Vfs::FillShadow(const NodeRef& dir, const std::string& shadow) {
  if (dir->lookup) return {};  // /proc and its like: generated, never changed by a call
  std::vector<DirEntry> entries = Listing(dir);
  if (shadow_entries_ + entries.size() > kMaxShadowEntries) return Errno{ENOSPC};
  std::vector<std::pair<std::string, bool>> made;
  for (const DirEntry& e : entries) {
    std::string path = shadow + "/" + std::string(e.name);
    std::string link;
    if (auto it = dir->children.find(std::string(e.name)); it != dir->children.end()) {
      link = LinkFrom(*it->second);
    }
    if (SysStatus s = store_->ShadowAdd(path, e.type == DT_DIR, link); !s.ok()) {
      for (const auto& [p, is_dir] : made) store_->ShadowRemove(p, is_dir);
      return s;
    }
    made.emplace_back(std::move(path), e.type == DT_DIR);
  }
  shadow_entries_ += made.size();
  return {};
}

SysResult<UniqueFd> Vfs::WatchObject(const NodeRef& node) {
  Node& n = *node;
  if (n.kind() == NodeKind::kFile && n.IsUpperFile()) return store_->OpenPath(n.store_name);
  if ((n.kind() == NodeKind::kFifo || n.kind() == NodeKind::kSocket) && !n.store_name.empty()) {
    return store_->OpenPath(n.store_name);
  }
  // A file of a -v :rw mount is watched on the host's file (its changes from
  // the host side are the point). A lower (system) file gets a token below
  // instead: a watch on the host's file would also report every open and
  // read of it by the host and by other sandboxes, a timing channel between
  // tenants. The lower layer does not change, so only the guest's own reads
  // of it go unreported.
  if (n.kind() == NodeKind::kFile && n.lower_parent && n.IsHostRw()) {
    int fd =
        openat(n.lower_parent->fd.get(), n.lower_name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      UniqueFd host(fd);
      struct stat st;
      // The very file the node was made for, not one put there since.
      if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
          (n.host_ino == 0 || (st.st_ino == n.host_ino && st.st_dev == n.host_dev))) {
        return host;
      }
    }
  }
  if (IsRwDir(n)) {
    // A write-through directory is the host's: its names are the guest's.
    int fd = fcntl(n.host_dir->fd.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Errno{errno};
    return UniqueFd(fd);
  }
  if (const std::string* shadow = ShadowOf(n)) return store_->OpenPath(*shadow);
  if (shadows_.size() >= kMaxShadows) return Errno{ENOSPC};
  SYS_ASSIGN_OR_RETURN(std::string shadow, store_->MakeShadow(n.IsDir()));
  if (n.IsDir()) {
    if (SysStatus s = FillShadow(node, shadow); !s.ok()) {
      store_->ShadowRemove(shadow, true);
      return Errno{s.error()};
    }
  } else {
    ++shadow_entries_;
  }
  Shadow& made = shadows_[&n] = Shadow{node, std::move(shadow)};
  return store_->OpenPath(made.path);
}

// A directory's shadow: null for a node that is no directory or not watched.
const std::string* Vfs::DirShadow(const Node& dir) const {
  return dir.IsDir() ? ShadowOf(dir) : nullptr;
}

void Vfs::ShadowAdd(const NodeRef& dir, const std::string& name, const Node& child) {
  const std::string* shadow = DirShadow(*dir);
  if (!shadow || shadow_entries_ >= kMaxShadowEntries) return;
  if (store_->ShadowAdd(*shadow + "/" + name, child.IsDir(), LinkFrom(child)).ok()) {
    ++shadow_entries_;
  }
}

void Vfs::ShadowRemove(const NodeRef& dir, const std::string& name, const Node& child) {
  const std::string* shadow = DirShadow(*dir);
  if (!shadow) return;
  store_->ShadowRemove(*shadow + "/" + name, child.IsDir());
  if (shadow_entries_) --shadow_entries_;
}

void Vfs::DropShadow(Node& dir) {
  if (!DirShadow(dir)) return;
  auto it = shadows_.find(&dir);
  store_->ShadowRemove(it->second.path, true);  // IN_DELETE_SELF, IN_IGNORED
  shadows_.erase(it);                           // (dir is the caller's: it holds a reference)
}

// Called once a rename is sure to happen, before the tree changes.
void Vfs::ShadowRename(const Resolved& from, const Resolved& to, unsigned flags) {
  const NodeRef& src = from.node;
  const NodeRef& dst = to.node;
  const std::string* from_shadow = DirShadow(*from.parent);
  const std::string* to_shadow = DirShadow(*to.parent);
  bool fs = from_shadow != nullptr, ts = to_shadow != nullptr;
  if (dst && dst->IsDir() && !(flags & RENAME_EXCHANGE)) DropShadow(*dst);
  // A watched directory that moves: its own watches see IN_MOVE_SELF, after
  // the entries' events, as fs/namei.c's vfs_rename sends them.
  absl::Cleanup move_self = [&] {
    for (const NodeRef& moved : {src, dst}) {
      if (!moved || !DirShadow(*moved) || (moved == dst && !(flags & RENAME_EXCHANGE))) continue;
      std::string& path = shadows_.find(moved.get())->second.path;
      if (auto name = store_->ShadowMoved(path); name.ok()) path = *name;
    }
  };
  if (!fs && !ts) return;
  if (flags & RENAME_EXCHANGE) {
    if (fs && ts &&
        store_
            ->ShadowRename(*from_shadow + "/" + from.name, *to_shadow + "/" + to.name,
                           RENAME_EXCHANGE)
            .ok()) {
      return;
    }
    // One side shadowed: its entry now names the other node.
    ShadowRemove(from.parent, from.name, *src);
    ShadowAdd(from.parent, from.name, *dst);
    ShadowRemove(to.parent, to.name, *dst);
    ShadowAdd(to.parent, to.name, *src);
    return;
  }
  // An entry leaving a watched directory goes to the scratch directory and
  // one arriving comes from there: the watch sees IN_MOVED_FROM or
  // IN_MOVED_TO, as for a rename to or from an unwatched directory.
  std::string a = fs ? *from_shadow + "/" + from.name : store_->ShadowScratch();
  std::string b = ts ? *to_shadow + "/" + to.name : store_->ShadowScratch();
  if (a.empty() || b.empty()) return;
  if (!fs && !store_->ShadowAdd(a, src->IsDir(), LinkFrom(*src)).ok()) return;
  if (!store_->ShadowRename(a, b, 0).ok()) {
    store_->ShadowRemove(a, src->IsDir());
    if (fs && shadow_entries_) --shadow_entries_;
    if (ts && dst) ShadowRemove(to.parent, to.name, *dst);
    if (ts) ShadowAdd(to.parent, to.name, *src);
    return;
  }
  if (!ts) store_->ShadowRemove(b, src->IsDir());
  if (fs && (!ts || dst) && shadow_entries_) --shadow_entries_;
  if (!fs && ts && !dst) ++shadow_entries_;
}

}  // namespace sentry::vfs
