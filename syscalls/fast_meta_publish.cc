#include "syscalls/fast_meta_publish.h"

#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "sentry/kernel/kernel.h"

namespace sentry::sys {
namespace {

// A node made by a host lookup of the read-only lower layer (or a lower root).
bool FromLowerLayer(const vfs::Node& n, bool top) {
  if (n.IsHostRw() || n.read_only) return false;
  // A lower symlink has no host object of its own: its host lookup marks it.
  if (!n.IsLower() && !(n.kind() == vfs::NodeKind::kSymlink && n.IsCached())) return false;
  if (!top && !n.IsCached()) return false;
  switch (n.kind()) {
    case vfs::NodeKind::kDir:
    case vfs::NodeKind::kFile:
    case vfs::NodeKind::kSymlink:
      return true;
    default:
      return false;
  }
}

// Whoever the caller is, the walk may search it (Vfs::Permission).
bool SearchableByAll(const vfs::Node& dir) {
  return dir.IsDir() && dir.host_dir && !dir.host_dir->read_write &&
         (dir.attr().mode & 0111) == 0111 && (dir.host_mode & 1);
}

// The access(2) modes every caller is granted (Vfs::Permission: owner, group
// or other bits, whichever apply, and the host's other bits).
uint32_t GrantedToAll(const vfs::Node& n) {
  uint32_t ok = 0;
  mode_t m = n.attr().mode;
  for (uint32_t bit : {R_OK, X_OK}) {
    bool all = (m & (bit << 6)) && (m & (bit << 3)) && (m & bit) && (n.host_mode & bit);
    if (all) ok |= bit;
  }
  return ok;
}

}  // namespace

void PublishLookup(SyscallContext& ctx, const std::string& path, bool follow,
                   const vfs::NodeRef& node, int err) {
  FastMeta* fm = ctx.kernel.fast_meta();
  if (!fm || (node == nullptr && err != ENOENT)) return;
  if (!sentry_fm_normal(path.data(), path.size())) return;
  vfs::Vfs& v = ctx.vfs();
  const auto& tops = ctx.kernel.fast_meta_tops();
  vfs::NodeRef dir = v.root();
  size_t start = 1;
  bool first = true;
  while (true) {
    size_t slash = path.find('/', start);
    bool last = slash == std::string::npos;
    std::string name = path.substr(start, last ? std::string::npos : slash - start);
    if (first ? !tops.count(name) : !SearchableByAll(*dir)) return;
    vfs::NodeRef child = v.Child(dir, name);
    if (!child) {
      if (last && !first && node == nullptr) fm->PublishAbsent(path, follow);
      return;
    }
    if (!FromLowerLayer(*child, first)) return;
    if (!last) {
      if (!child->IsDir()) return;
      dir = std::move(child);
      start = slash + 1;
      first = false;
      continue;
    }
    if (child != node) return;
    bool link = child->kind() == vfs::NodeKind::kSymlink;
    if (link && follow) return;
    struct stat st = v.Stat(*child);
    std::string_view target = child->target;
    fm->PublishStat(path, follow, st, link ? 0 : GrantedToAll(*child), link ? &target : nullptr);
    // A non-symlink answers stat and lstat alike.
    if (!link) fm->PublishStat(path, !follow, st, GrantedToAll(*child), nullptr);
    return;
  }
}

SysResult<vfs::NodeRef> NodeAtPublished(SyscallContext& ctx, int dirfd, const std::string& path,
                                        bool follow, bool empty_ok) {
  SysResult<vfs::NodeRef> r = NodeAtPath(ctx, dirfd, path, follow, empty_ok);
  if (ctx.kernel.fast_meta() && !path.empty() && path[0] == '/') {
    PublishLookup(ctx, path, follow, r.ok() ? r.value() : nullptr, r.ok() ? 0 : r.error());
  }
  return r;
}

}  // namespace sentry::sys
