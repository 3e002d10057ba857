// The lower-layer cache: what host lookups leave in the tree, kept within
// kLowerCacheBytes. Nodes, listings and absent names of the lower layer are
// all recomputable from the host, so past the budget the sentry drops what
// nobody holds, rather than failing the guest or growing without end.
#include <dirent.h>

#include <vector>

#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// Unchanged since the host lookup made it: no chmod, chown, utimes, link,
// rename or entry made or removed in it (each stamps ctime), no xattr, no
// copy-up, nothing below it.
bool Clean(const Node& node) {
  if (!node.IsCached() || !SameTime(node.attr().ctime, node.looked_up_ctime)) return false;
  if (!node.xattrs.empty()) return false;
  switch (node.kind()) {
    case NodeKind::kDir:
      return !node.removed && node.children.empty() && node.whiteouts.empty() &&
             node.subdir_delta == 0;
    case NodeKind::kFile:
      return node.IsLowerFile();
    case NodeKind::kSymlink:
      return true;
    default:
      return false;
  }
}

uint64_t ListingCost(const Node& dir) {
  uint64_t bytes = 0;
  for (const auto& [name, entry] : dir.host_unlooked) bytes += kHostEntryCost + name.size();
  return bytes;
}

}  // namespace

void Vfs::ShrinkCache() {
  // A dropped listing changes a directory's st_nlink (Stat): answers go.
  if (on_lower_change_) on_lower_change_();
  // Walked depth first with an explicit stack (a guest may nest directories
  // deeper than the sentry's own stack), children before their directory, so
  // a directory emptied of cached children can go too. Raw pointers: the
  // stack must not hold references, since a node that only its parent's map
  // holds (use_count 1) is one no task, fd, walk or fiber is using.
  struct Frame {
    Node* dir;
    std::map<std::string, NodeRef>::iterator next;
  };
  uint64_t kept = 0;
  auto open_dir = [](Node& dir) {
    dir.host_absent.clear();
    return Frame{&dir, dir.children.begin()};
  };
  // Settles the child at f.next, whose own subtree is done: drops it if it is
  // a clean cache entry nobody holds (its name goes back to the listing it
  // came from, if any), else keeps it and counts it.
  auto settle = [&kept](Frame& f) {
    Node& dir = *f.dir;
    const auto& [name, child] = *f.next;
    if (child.use_count() == 1 && dir.host_dir && Clean(*child)) {
      if (dir.host_listed) {
        dir.host_unlooked.emplace(
            name,
            HostEntry{child->attr().ino, static_cast<unsigned char>(IFTODT(child->attr().mode))});
      }
      f.next = dir.children.erase(f.next);
      return;
    }
    if (child->IsCached()) kept += kNodeCost + kNameCost + name.size();
    if (child->IsDir() && child->host_listed) {
      // Its listing can be read again if nothing in it changed since the host
      // was read, even while an fd holds the directory: getdents resumes by
      // name, and a listing read again is the same names in the same order.
      if (child->IsCached() && SameTime(child->attr().ctime, child->looked_up_ctime) &&
          child->whiteouts.empty() && child->subdir_delta == 0) {
        child->host_unlooked.clear();
        child->host_listed = false;
      } else {
        kept += ListingCost(*child);
      }
    }
    ++f.next;
  };
  std::vector<Frame> stack{open_dir(*root_)};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.dir->children.end()) {
      stack.pop_back();
      if (!stack.empty()) settle(stack.back());
      continue;
    }
    Node& child = *f.next->second;
    if (child.IsDir() && !child.lookup) {
      stack.push_back(open_dir(child));  // f is not used past this point
      continue;
    }
    settle(f);
  }
  if (root_->host_listed) kept += ListingCost(*root_);
  cache_bytes_ = kept;
  // What had to stay (held, or changed by the guest) must not make every walk
  // shrink again: the next shrink waits for half a budget of new entries.
  cache_next_ = std::max(cache_limit_, kept + cache_limit_ / 2);
}

}  // namespace sentry::vfs
