// Path resolution and lazy population of host-backed directories.
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <memory>
#include <optional>

#include "vfs/mount_fs_identity.h"
#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

std::deque<std::string> SplitPath(std::string_view path) {
  std::deque<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

// Opens a host directory beneath its parent. One plain name, no symlinks, no
// magic links: nothing here can lead outside the lower layer.
// struct linux_dirent64, as getdents64 fills it.
struct HostDirent {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// Set by Walk while it looks up a name it will walk through: a directory
// that lookup makes is opened at once, as it is about to be used (checking
// it by an fstat later, as a lazy one is, would cost one call more). Per
// thread: the kernel mutex serialises walks, and nothing in a lookup yields.
thread_local bool t_walking_through = false;

// ext4's EOF cookie for a 64-bit caller (EXT4_HTREE_EOF_64BIT): node.h
// HostDir::list_end.
constexpr int64_t kExt4Eof = 0x7fffffffffffffff;

// Whether host's listings end at ext4's cookie: asked once per directory
// whose parent's device differs or was never listed (a lower root, a
// mount on the host beneath one), then inherited by its subdirectories.
void ProbeListEnd(HostDir& host, int fd) {
  struct statfs sf;
  struct stat st;
  if (host.dev == 0 && fstat(fd, &st) == 0) host.dev = st.st_dev;
  bool ext4 = host.dev != 0 && fstatfs(fd, &sf) == 0 && sf.f_type == EXT4_SUPER_MAGIC;
  host.list_end = ext4 ? HostDir::ListEnd::kExt4Cookie : HostDir::ListEnd::kReadToZero;
}

int OpenHostChildDir(int parent_fd, const std::string& name) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(syscall(SYS_openat2, parent_fd, name.c_str(), &how, sizeof(how)));
}

}  // namespace

timespec Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

bool Creds::InGroup(gid_t g) const {
  if (g == gid) return true;
  for (gid_t x : groups)
    if (x == g) return true;
  return false;
}

Vfs::Vfs(NodeRef root, std::unique_ptr<Store> store)
    : root_(std::move(root)), store_(std::move(store)) {}

NodeRef Vfs::NewNode(NodeKind kind, mode_t mode, uid_t uid, gid_t gid) {
  Attr a;
  a.mode = mode;
  a.uid = uid;
  a.gid = gid;
  a.ino = next_ino_++;
  a.atime = a.mtime = a.ctime = Now();
  return std::make_shared<Node>(kind, a);
}

void Vfs::AddChild(const NodeRef& dir, const std::string& name, const NodeRef& child) {
  dir->children[name] = child;
  if (!dir->host_unlooked.empty()) dir->host_unlooked.erase(name);
  if (child->IsDir()) {
    child->parent = dir;
    child->name = name;
  }
}

NodeRef Vfs::MakeLowerNode(const std::shared_ptr<HostDir>& host_parent, const std::string& name,
                           const struct stat& st) {
  Attr a = Attr::OfHost(st);
  if (host_parent->owner_view) g_host_owner_view.Apply(a.uid, a.gid);
  NodeRef node;
  auto lower = [&st, &host_parent](NodeRef n) {
    n->host_mode = st.st_mode;
    n->read_only = host_parent->read_only;
    return n;
  };
  switch (st.st_mode & S_IFMT) {
    case S_IFDIR: {
      // A write-through directory is opened now, under the mount's identity
      // (RwChild), and so is one a walk goes through next; any other lower
      // one when something first walks through it or lists it
      // (host_dir_fd.h): a listing's fill makes many never used.
      HostDirFd fd;
      if (host_parent->read_write || t_walking_through) {
        int opened = OpenHostChildDir(host_parent->fd.get(), name);
        if (opened < 0) return nullptr;
        fd = UniqueFd(opened);
      } else {
        fd = HostDirFd::Lazy(host_parent, name, st.st_dev, st.st_ino);
      }
      node = std::make_shared<Node>(NodeKind::kDir, a);
      node->host_dir = std::make_shared<HostDir>(HostDir{
          std::move(fd), host_parent->path == "/" ? "/" + name : host_parent->path + "/" + name,
          host_parent->read_only, host_parent->filter, host_parent->read_write,
          host_parent->mount_id, host_parent->as_uid, host_parent->as_gid,
          host_parent->owner_view});
      node->host_dir->dev = st.st_dev;
      if (host_parent->dev == st.st_dev) node->host_dir->list_end = host_parent->list_end;
      node->nlink = st.st_nlink;
      lower(node);
      break;
    }
    case S_IFREG:
      node = std::make_shared<Node>(NodeKind::kFile, a);
      node->lower_parent = host_parent;
      node->lower_name = name;
      node->host_dev = st.st_dev;
      node->host_ino = st.st_ino;
      node->lower_size = st.st_size;
      node->nlink = st.st_nlink;
      lower(node);
      break;
    case S_IFLNK: {
      char buf[kPathMax];
      ssize_t n = readlinkat(host_parent->fd.get(), name.c_str(), buf, sizeof(buf));
      if (n < 0 || n >= static_cast<ssize_t>(sizeof(buf))) return nullptr;
      node = std::make_shared<Node>(NodeKind::kSymlink, a);
      node->target.assign(buf, n);
      node->read_only = host_parent->read_only;
      if (host_parent->read_write) {  // a hard link or rename names it by place
        node->lower_parent = host_parent;
        node->lower_name = name;
      }
      break;
    }
    default:
      return nullptr;  // host fifos, sockets and devices are not shown
  }
  return node;
}

NodeRef Vfs::Child(const NodeRef& dir, const std::string& name) {
  if (dir->lookup) {
    NodeRef child = dir->lookup(name);
    if (child && child->IsDir()) {
      child->parent = dir;
      child->pinned_parent = dir;  // generated on demand: nothing else holds it
      child->name = name;
    }
    return child;
  }
  if (dir->host_dir && dir->host_dir->read_write) return RwChild(dir, name);
  if (auto it = dir->children.find(name); it != dir->children.end()) return it->second;
  if (!dir->host_dir || dir->whiteouts.count(name)) return nullptr;
  if (dir->host_listed) {
    // Listed: only a name readdir gave can be on the host. Whatever the
    // lookup finds, the name leaves host_unlooked (for children, or for good).
    auto it = dir->host_unlooked.find(name);
    if (it == dir->host_unlooked.end()) return nullptr;
    std::string key = name;  // name may be the map's own key
    dir->host_unlooked.erase(it);
    return LookUpHost(dir, key);
  }
  if (dir->host_absent.count(name)) return nullptr;
  NodeRef node = LookUpHost(dir, name);
  if (!node && dir->host_absent.insert(name).second) cache_bytes_ += kAbsentCost + name.size();
  return node;
}

NodeRef Vfs::LookUpHost(const NodeRef& dir, const std::string& name) {
  struct stat st;
  if (fstatat(dir->host_dir->fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return nullptr;
  const HostDir& host = *dir->host_dir;
  if (host.filter && !host.filter->Shows(host.path, name, st)) return nullptr;
  NodeRef node = MakeLowerNode(dir->host_dir, name, st);
  if (!node) return nullptr;
  // A cache entry (vfs_cache.cc), unlike the lower nodes setup places.
  node->looked_up_ctime = node->attr().ctime;
  cache_bytes_ += kNodeCost + kNameCost + name.size();
  AddChild(dir, name, node);
  return node;
}

void Vfs::ListHost(const NodeRef& dir) {
  if (dir->host_dir && dir->host_dir->read_write) {
    // A write-through directory is listed fresh each time: the host may
    // change it too. Its children are only a cache of host lookups.
    dir->children.clear();
    dir->host_unlooked.clear();
    dir->host_listed = false;
  }
  if (!dir->host_dir || dir->host_listed) return;
  std::optional<MountFsIdentity> as_mount;
  if (dir->host_dir->read_write) as_mount.emplace(*dir->host_dir);
  // getdents64 itself rather than opendir/readdir, which add an fstat and
  // two fcntls to every listing (a find over /usr lists thousands).
  // A directory not opened yet is opened once, to read (host_dir_fd.h).
  // One batch of getdents64 records into host_unlooked; the d_off of its
  // last record.
  auto parse = [&](const char* buf, long n) {
    int64_t last_d_off = 0;
    for (long off = 0; off < n;) {
      const auto* e = reinterpret_cast<const HostDirent*>(buf + off);
      off += e->d_reclen;
      last_d_off = e->d_off;
      std::string name = e->d_name;
      // Known already: made, removed by the guest, or looked up and not shown.
      if (name == "." || name == ".." || dir->children.count(name) || dir->whiteouts.count(name) ||
          dir->host_absent.count(name)) {
        continue;
      }
      unsigned char type = e->d_type;
      const HostDir& host = *dir->host_dir;
      if (type == DT_UNKNOWN || host.filter) {  // no d_type, or the filter needs the stat
        struct stat st;
        if (fstatat(host.fd.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (host.filter && !host.filter->Shows(host.path, name, st)) continue;
        type = IFTODT(st.st_mode);
      }
      // Host fifos, sockets and devices are not shown (see MakeLowerNode).
      if (type != DT_DIR && type != DT_REG && type != DT_LNK) continue;
      cache_bytes_ += kHostEntryCost + name.size();
      dir->host_unlooked.emplace(std::move(name), HostEntry{e->d_ino, type});
    }
    return last_d_off;
  };
  // Read ahead on another CPU (listing_ahead.h): the same open, the same
  // records, read a little earlier.
  std::optional<ListingAhead::Listing> ahead;
  if (ahead_ && !dir->host_dir->read_write) ahead = ahead_->Take(dir->host_dir.get());
  if (ahead) {
    // Asked there if not known here: for its subdirectories to inherit.
    if (dir->host_dir->list_end == HostDir::ListEnd::kUnknown) {
      dir->host_dir->list_end = static_cast<HostDir::ListEnd>(ahead->list_end);
    }
    parse(ahead->records.data(), static_cast<long>(ahead->records.size()));
  } else {
    UniqueFd owned;
    bool unchecked = false;
    int fd = dir->host_dir->fd.OpenToRead(&owned, &unchecked);
    // On the heap: walks may run on a fiber's small stack.
    constexpr size_t kBufSize = 32768;
    std::unique_ptr<char[]> buf(new char[kBufSize]);
    long n;
    while (fd >= 0 && (n = syscall(SYS_getdents64, fd, buf.get(), kBufSize)) > 0) {
      if (unchecked) {
        // Its first open: the directory's "." (in the first batch: ext4
        // lists a small directory in hash order) proves it is still the
        // inode looked up; if not (Keep's fstat decides when "." was not
        // seen), it reads as empty.
        uint64_t dot = 0;
        for (long off = 0; off < n && dot == 0;) {
          const auto* e = reinterpret_cast<const HostDirent*>(buf.get() + off);
          off += e->d_reclen;
          if (e->d_name[0] == '.' && e->d_name[1] == '\0') dot = e->d_ino;
        }
        if (!dir->host_dir->fd.Keep(&owned, dot)) break;
        unchecked = false;
      }
      if (dir->host_dir->list_end == HostDir::ListEnd::kUnknown) ProbeListEnd(*dir->host_dir, fd);
      int64_t last_d_off = parse(buf.get(), n);
      if (dir->host_dir->list_end == HostDir::ListEnd::kExt4Cookie && last_d_off == kExt4Eof) break;
    }
  }
  // Stat counts a listed directory's links from the listing, an unlisted
  // one's from the host's: where they differ (a filter, whiteouts, a file
  // system without link counts), an answer already given changed.
  nlink_t before = static_cast<nlink_t>(static_cast<int>(dir->nlink) + dir->subdir_delta);
  dir->host_listed = true;
  dir->host_absent.clear();
  if (on_lower_change_ && !dir->host_dir->read_write && Stat(*dir).st_nlink != before) {
    on_lower_change_();
  }
}

std::vector<std::pair<std::string, NodeRef>> Vfs::List(const NodeRef& dir) {
  std::vector<std::pair<std::string, NodeRef>> out;
  if (dir->names) {
    for (const std::string& name : dir->names()) {
      if (NodeRef child = Child(dir, name)) out.emplace_back(name, child);
    }
    return out;
  }
  ListHost(dir);
  while (!dir->host_unlooked.empty()) Child(dir, dir->host_unlooked.begin()->first);
  return {dir->children.begin(), dir->children.end()};
}

void Vfs::VisitListing(const NodeRef& dir, std::string_view after, bool relist,
                       const std::function<bool(const DirEntry&)>& visit) {
  if (relist || !dir->host_listed) ListHost(dir);
  // Two sorted maps with no name in common, merged from the first name
  // after `after` (found by each map's own search, not by a walk).
  auto c = after.empty() ? dir->children.begin() : dir->children.upper_bound(std::string(after));
  auto h = after.empty() ? dir->host_unlooked.begin()
                         : dir->host_unlooked.upper_bound(std::string(after));
  while (c != dir->children.end() || h != dir->host_unlooked.end()) {
    if (h == dir->host_unlooked.end() || (c != dir->children.end() && c->first < h->first)) {
      if (!visit({c->first, c->second->attr().ino,
                  static_cast<unsigned char>(IFTODT(c->second->attr().mode))})) {
        return;
      }
      ++c;
    } else {
      if (!visit({h->first, h->second.ino, h->second.type})) return;
      ++h;
    }
  }
}

std::vector<Vfs::DirEntry> Vfs::Listing(const NodeRef& dir) {
  std::vector<DirEntry> out;
  VisitListing(dir, {}, /*relist=*/true, [&](const DirEntry& e) {
    out.push_back(e);
    return true;
  });
  return out;
}

bool Vfs::IsEmptyDir(const NodeRef& dir) {
  if (dir->names) return List(dir).empty();
  ListHost(dir);
  return dir->children.empty() && dir->host_unlooked.empty();
}

SysResult<std::string> Vfs::PathOf(const NodeRef& dir) {
  std::string path;
  NodeRef cur = dir;
  while (cur != root_) {
    if (cur->removed) return Errno{ENOENT};
    NodeRef up = cur->parent.lock();
    if (!up) return Errno{ENOENT};
    path = "/" + cur->name + path;
    cur = up;
  }
  return path.empty() ? "/" : path;
}

SysResult<Resolved> Vfs::Walk(const NodeRef& start, std::string_view path, const ResolveOpts& opts,
                              const Creds& creds) {
  if (path.empty()) return Errno{ENOENT};
  if (path.size() >= kPathMax) return Errno{ENAMETOOLONG};
  // Before this walk takes any reference; held by the copy meanwhile, start
  // stays whatever it is (a reference into a map slot included).
  NodeRef start_ref = start;
  MaybeShrinkCache();
  const NodeRef& top = opts.in_root ? start_ref : root_;
  NodeRef cur = start_ref;
  if (path[0] == '/') {
    if (opts.beneath) return Errno{EXDEV};
    cur = top;
  }
  std::deque<std::string> comps = SplitPath(path);
  bool trailing = path.back() == '/';
  int links = 0;
  Resolved out;
  out.trailing_slash = trailing;
  while (!comps.empty()) {
    std::string name = std::move(comps.front());
    comps.pop_front();
    bool last = comps.empty();
    if (name.size() > kNameMax) return Errno{ENAMETOOLONG};
    if (!cur->IsDir()) return Errno{ENOTDIR};
    SYS_TRY(Permission(*cur, X_OK, creds));
    if (name == "." || name == "..") {
      if (name == "..") {
        if (opts.beneath && cur == start_ref) return Errno{EXDEV};
        if (cur != top) {
          NodeRef up = cur->parent.lock();
          if (up) cur = up;
        }
      }
      if (last) {
        out.name = name;
        out.node = cur;
        return out;
      }
      continue;
    }
    t_walking_through = !last;
    NodeRef child = Child(cur, name);
    t_walking_through = false;
    if (!child) {
      if (!last) return Errno{ENOENT};
      out.parent = cur->removed ? nullptr : cur;
      out.name = name;
      if (cur->removed) return Errno{ENOENT};
      return out;
    }
    if (child->kind() == NodeKind::kSymlink && (!last || opts.follow_final || trailing)) {
      if (opts.no_symlinks || (opts.no_magiclinks && child->magic)) return Errno{ELOOP};
      if (++links > kMaxSymlinks) return Errno{ELOOP};
      if (child->object) {
        if (!last) return Errno{ENOTDIR};
        out.name = name;
        out.node = child->object;
        return out;
      }
      if (child->target.empty()) return Errno{ENOENT};
      std::deque<std::string> more = SplitPath(child->target);
      comps.insert(comps.begin(), more.begin(), more.end());
      if (child->target[0] == '/') {
        if (opts.beneath) return Errno{EXDEV};
        cur = top;
      }
      if (comps.empty()) {  // the link pointed at "/"
        out.name = "/";
        out.node = cur;
        return out;
      }
      continue;
    }
    if (last) {
      out.parent = cur;
      out.name = name;
      out.node = child;
      return out;
    }
    cur = child;
  }
  out.name = "/";
  out.node = cur;
  return out;
}

SysResult<NodeRef> Vfs::Lookup(const NodeRef& start, std::string_view path, const ResolveOpts& opts,
                               const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(Resolved r, Walk(start, path, opts, creds));
  if (!r.node) return Errno{ENOENT};
  if (r.trailing_slash && !r.node->IsDir()) return Errno{ENOTDIR};
  return r.node;
}

}  // namespace sentry::vfs
