// Reading a VFS snapshot into a fresh Vfs (vfs_snapshot.h; the stream:
// snapshot_wire.h). The stream is untrusted: each length is bounded, every
// node is counted against kSnapshotMaxTreeBytes and what the guest made
// against the new Vfs's metadata budget as it is read, and directories nest
// on an explicit stack.
//
// The new tree's own nodes are kept where the stream names the same thing at
// the same place (its /tmp, its lower roots, its /dev/null); a lower node
// anywhere else is made from its host directory, found beneath the new
// tree's own lower directories (never by a host path from the stream: the
// rest of the path is opened beneath one, one name at a time, with no
// symlink, as host lookups are).
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vfs/snapshot_wire.h"
#include "vfs/store_owner.h"
#include "vfs/vfs_snapshot.h"

namespace sentry::vfs {
namespace {

std::string SnapReadHostJoin(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

uint8_t SnapReadHostFlags(const HostDir& h) {
  return (h.read_only ? snapshot::kHostReadOnly : 0) | (h.filter ? snapshot::kHostFiltered : 0) |
         (h.owner_view ? snapshot::kHostOwnerView : 0);
}

bool SnapValidName(const std::string& name) {
  return !name.empty() && name.size() <= kNameMax && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

std::string SnapMiB(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20); }

bool IsKeptNode(const Node& n) {
  if (n.IsDir()) return n.lookup || n.names || (n.host_dir && n.host_dir->read_write);
  return n.kind() == NodeKind::kSynthetic || (n.kind() == NodeKind::kDevice && n.device_parent);
}

bool IsMemoryDir(const Node& n) { return n.IsDir() && !n.host_dir && !n.lookup && !n.names; }

// The devices the tree shows (sentry/run/sandbox_tree.cc BuildDev).
bool SnapKnownDevice(const std::string& path) {
  for (const char* d : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
    if (path == d) return true;
  }
  return false;
}

struct NodeHead {
  Attr attr;
  timespec looked_up{};
  uint32_t nlink = 1;
  uint8_t flags = 0;
  std::map<std::string, std::string> xattrs;
  uint64_t xattr_bytes = 0;
};

}  // namespace

class SnapshotReader final {
 public:
  SnapshotReader(Vfs& v, int fd, const SnapshotReadOptions& opts) : v_(v), in_(fd), opts_(opts) {}
  SnapshotResult Run();

 private:
  struct Frame {
    NodeRef dir;  // null: a directory whose host object is gone, read and dropped
    std::map<std::string, NodeRef> old;
  };

  bool Fail(std::string why) {
    in_.Fail(std::move(why));
    return false;
  }
  bool Count(uint64_t bytes);
  bool ChargeMeta(uint64_t bytes);
  bool ReadHead(NodeHead* h, mode_t type);
  void Apply(Node& n, const NodeHead& h);
  std::string ReadName();
  void CollectHostDirs();
  void Register(const std::shared_ptr<HostDir>& h) {
    if (h && !h->read_write) hosts_.emplace(h->path + '\0' + char(SnapReadHostFlags(*h)), h);
  }
  std::shared_ptr<HostDir> ResolveHost(const std::string& path, uint8_t flags);
  bool ReadHostRef(std::shared_ptr<HostDir>* h);
  bool Attach(Frame& f, const std::string& name, const NodeRef& node, bool charged_name);
  bool ReadDir(const std::string& name, bool root);
  bool ReadEntry(uint8_t tag, Frame& f);
  NodeRef TakeOld(Frame& f, const std::string& name) {
    auto it = f.old.find(name);
    if (it == f.old.end()) return nullptr;
    NodeRef n = std::move(it->second);
    f.old.erase(it);
    return n;
  }

  Vfs& v_;
  snapshot::In in_;
  SnapshotReadOptions opts_;
  std::vector<Frame> stack_;
  std::unordered_map<std::string, std::shared_ptr<HostDir>> hosts_;
  std::vector<NodeRef> numbered_;                 // non-directory records, in order (null: dropped)
  std::unordered_set<const Node*> name_counted_;  // nlink counts the names attached
  uint64_t tree_bytes_ = 0;
  uint64_t meta_ = 0;
  uint64_t records_ = 0;
  uint64_t data_left_ = 0;  // of what the header declared
  uint64_t max_ino_ = 0;
  SnapshotStats stats_;
};

bool SnapshotReader::Count(uint64_t bytes) {
  tree_bytes_ += bytes;
  if (tree_bytes_ > kSnapshotMaxTreeBytes) {
    return Fail("the snapshot's tree is larger than any sandbox's (" +
                SnapMiB(kSnapshotMaxTreeBytes) + " MiB of nodes)");
  }
  return true;
}

bool SnapshotReader::ChargeMeta(uint64_t bytes) {
  meta_ += bytes;
  if (meta_ > v_.meta_limit_) {
    return Fail("the parent's names and nodes need more than the child's metadata budget (" +
                SnapMiB(v_.meta_limit_) + " MiB, --disk/8)");
  }
  return true;
}

std::string SnapshotReader::ReadName() {
  std::string name = in_.Str(kNameMax);
  if (!in_.failed() && !SnapValidName(name)) Fail("a name in the snapshot is not a file name");
  return name;
}

bool SnapshotReader::ReadHead(NodeHead* h, mode_t type) {
  Attr& a = h->attr;
  a.mode = in_.U32();
  a.uid = in_.U32();
  a.gid = in_.U32();
  a.rdev = in_.U64();
  a.ino = in_.U64();
  a.dev = in_.U64();
  a.atime = in_.Time();
  a.mtime = in_.Time();
  a.ctime = in_.Time();
  h->looked_up = in_.Time();
  h->nlink = in_.U32();
  h->flags = in_.U8();
  uint32_t count = in_.U32();
  if (in_.failed()) return false;
  if ((a.mode & S_IFMT) != type || (a.mode & ~(S_IFMT | 07777))) {
    return Fail("a node's mode in the snapshot does not match its kind");
  }
  for (uint32_t i = 0; i < count && !in_.failed(); ++i) {
    std::string name = in_.Str(kNameMax);
    std::string value = in_.Str(kSnapshotMaxXattrValue);
    if (in_.failed()) return false;
    if (name.rfind("user.", 0) != 0 || name.size() <= 5) {
      return Fail("an xattr in the snapshot is not a user.* name");
    }
    uint64_t cost = 128 + name.size() + value.size();  // as vfs_xattr.cc's XattrCost
    if (!Count(cost)) return false;
    h->xattr_bytes += cost;
    if (!h->xattrs.emplace(std::move(name), std::move(value)).second) {
      return Fail("an xattr appears twice on one node of the snapshot");
    }
  }
  if (!ChargeMeta(h->xattr_bytes)) return false;
  max_ino_ = std::max<uint64_t>(max_ino_, a.ino);
  return !in_.failed();
}

void SnapshotReader::Apply(Node& n, const NodeHead& h) {
  n.attr() = h.attr;
  n.nlink = h.nlink;
  n.xattrs = h.xattrs;
  n.xattr_bytes = h.xattr_bytes;
  // Only a node of the lower layer may be a cache entry (one dropped and
  // looked up again when unchanged).
  bool lower = n.IsLowerFile() || (n.IsDir() && n.host_dir) || n.kind() == NodeKind::kSymlink;
  n.looked_up_ctime = (h.flags & snapshot::kCached) && lower ? h.looked_up : timespec{};
  if (n.IsCached()) v_.cache_bytes_ += kNodeCost + kNameCost;
}

void SnapshotReader::CollectHostDirs() {
  std::vector<Node*> dirs{v_.root_.get()};
  while (!dirs.empty()) {
    Node* d = dirs.back();
    dirs.pop_back();
    Register(d->host_dir);
    for (auto& [name, child] : d->children) {
      if (child->IsDir() && !IsKeptNode(*child)) dirs.push_back(child.get());
      if (child->IsLowerFile()) Register(child->lower_parent);
    }
  }
}

// The host directory at path (a HostDir::path of the parent's tree) with
// those flags: one the new tree has, or made beneath the nearest one it has.
std::shared_ptr<HostDir> SnapshotReader::ResolveHost(const std::string& path, uint8_t flags) {
  auto key = [flags](const std::string& p) { return p + '\0' + char(flags); };
  if (auto it = hosts_.find(key(path)); it != hosts_.end()) return it->second;
  if (path.empty() || path[0] != '/') return nullptr;
  // The nearest registered ancestor; "" is the lower layer's own root.
  std::string base = path;
  std::shared_ptr<HostDir> h;
  while (!h) {
    size_t cut = base.rfind('/');
    if (cut == std::string::npos) return nullptr;
    base.resize(cut);
    if (auto it = hosts_.find(key(base)); it != hosts_.end()) h = it->second;
    if (!h && base.empty()) {
      if (auto it = hosts_.find(key("/")); it != hosts_.end()) h = it->second;
    }
  }
  size_t pos = base.size();
  while (pos < path.size()) {
    size_t start = pos + 1;
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string name = path.substr(start, end - start);
    pos = end;
    if (!SnapValidName(name)) return nullptr;
    struct stat st;
    if (fstatat(h->fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
      return nullptr;
    }
    if (h->filter && !h->filter->Shows(h->path, name, st)) return nullptr;
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = static_cast<int>(syscall(SYS_openat2, h->fd.get(), name.c_str(), &how, sizeof(how)));
    if (fd < 0) return nullptr;
    auto next = std::make_shared<HostDir>(HostDir{UniqueFd(fd), SnapReadHostJoin(h->path, name),
                                                  h->read_only, h->filter, false, 0, h->as_uid,
                                                  h->as_gid, h->owner_view});
    Register(next);
    h = std::move(next);
  }
  return SnapReadHostFlags(*h) == flags ? h : nullptr;
}

bool SnapshotReader::ReadHostRef(std::shared_ptr<HostDir>* h) {
  std::string path = in_.Str(kPathMax - 1);
  uint8_t flags = in_.U8();
  if (in_.failed()) return false;
  if (flags & ~(snapshot::kHostReadOnly | snapshot::kHostFiltered | snapshot::kHostOwnerView)) {
    return Fail("a host directory's flags in the snapshot are unknown");
  }
  *h = ResolveHost(path, flags);
  return true;
}

bool SnapshotReader::Attach(Frame& f, const std::string& name, const NodeRef& node,
                            bool charged_name) {
  if (!Count(kNameCost + name.size())) return false;
  if (charged_name && !ChargeMeta(kNameCost + name.size())) return false;
  if (!f.dir) return true;
  if (f.dir->children.count(name)) return Fail("a name appears twice in one directory");
  v_.AddChild(f.dir, name, node);
  if (name_counted_.count(node.get())) ++node->nlink;
  return true;
}

bool SnapshotReader::ReadDir(const std::string& name, bool root) {
  NodeHead h;
  if (!ReadHead(&h, S_IFDIR) || !Count(kNodeCost)) return false;
  uint8_t klass = in_.U8();
  std::shared_ptr<HostDir> host;
  bool lower = klass == 1;
  if (klass > 1 || (root && lower)) return Fail("a directory's class in the snapshot is unknown");
  if (lower && !ReadHostRef(&host)) return false;
  uint32_t whiteouts = in_.U32();
  std::set<std::string> wo;
  for (uint32_t i = 0; i < whiteouts && !in_.failed(); ++i) {
    std::string w = ReadName();
    if (in_.failed() || !Count(kNameCost + w.size()) || !ChargeMeta(kNameCost + w.size())) {
      return false;
    }
    wo.insert(std::move(w));
  }
  auto delta = static_cast<int32_t>(in_.U32());
  if (in_.failed()) return false;
  if (delta < -(1 << 24) || delta > (1 << 24))
    return Fail("a directory's link count is out of range");
  if ((h.flags & snapshot::kGuestMade) && !ChargeMeta(kNodeCost)) return false;

  Frame* parent = root ? nullptr : &stack_.back();
  NodeRef dir;
  if (root) {
    dir = v_.root_;
  } else if (!parent->dir || (lower && !host)) {
    ++stats_.dropped;  // read, then dropped with its entries
  } else {
    NodeRef old = TakeOld(*parent, name);
    if (!lower && old && IsMemoryDir(*old)) {
      dir = old;
    } else if (lower && old && old->IsDir() && old->host_dir && !IsKeptNode(*old) &&
               old->host_dir->path == host->path &&
               SnapReadHostFlags(*old->host_dir) == SnapReadHostFlags(*host)) {
      dir = old;
    } else {
      dir = std::make_shared<Node>(NodeKind::kDir, h.attr);
      if (lower) {
        struct stat st;
        if (fstat(host->fd.get(), &st) < 0) return Fail("cannot stat a lower directory");
        dir->host_dir = host;
        dir->host_mode = st.st_mode;
        dir->read_only = host->read_only;
      }
    }
    Register(dir->host_dir);
  }
  if (dir) {
    Apply(*dir, h);
    dir->charged = (h.flags & snapshot::kGuestMade) ? kNodeCost : 0;
    dir->whiteouts = std::move(wo);
    dir->subdir_delta = delta;
    dir->host_unlooked.clear();
    dir->host_absent.clear();
    dir->host_listed = false;
  }
  if (parent && dir && !Attach(*parent, name, dir, h.flags & snapshot::kGuestMade)) return false;
  Frame f{dir, {}};
  if (dir) {
    f.old = std::move(dir->children);
    dir->children.clear();
  }
  stack_.push_back(std::move(f));
  return true;
}

bool SnapshotReader::ReadEntry(uint8_t tag, Frame& f) {
  std::string name = ReadName();
  if (in_.failed()) return false;
  if (tag == 'k') {
    NodeRef old = TakeOld(f, name);
    if (!old || !IsKeptNode(*old)) {
      ++stats_.dropped;
      return Count(kNameCost + name.size());
    }
    return Attach(f, name, old, false);
  }
  if (tag == 'H') {
    uint64_t n = in_.U64();
    if (in_.failed()) return false;
    if (n >= numbered_.size()) return Fail("a hard link in the snapshot names no node before it");
    if (!numbered_[n]) {
      ++stats_.dropped;
      return true;
    }
    return Attach(f, name, numbered_[n], true);
  }
  mode_t type = tag == 'F' || tag == 'L' ? S_IFREG
                : tag == 'S'             ? S_IFLNK
                : tag == 'P'             ? S_IFIFO
                : tag == 'K'             ? S_IFSOCK
                : tag == 'V'             ? S_IFCHR
                                         : 0;
  if (!type) return Fail("a record of the snapshot has an unknown tag");
  NodeHead h;
  if (!ReadHead(&h, type) || !Count(kNodeCost)) return false;
  bool guest_made = h.flags & snapshot::kGuestMade;
  NodeRef node;
  Store& store = *v_.store_;
  switch (tag) {
    case 'F': {
      timespec times[2] = {in_.Time(), in_.Time()};
      uint64_t size = in_.U64();
      if (in_.failed()) return false;
      uint64_t pages = (size + 4095) / 4096 * 4096;
      if (size > data_left_ || pages > data_left_) {
        return Fail("the snapshot's files hold more data than its header said");
      }
      data_left_ -= pages;
      SysResult<std::string> made = store.Create(h.attr.mode & 07777);
      if (!made.ok())
        return Fail(std::string("cannot make a store file: ") + strerror(made.error()));
      SysResult<UniqueFd> fd = store.Open(*made, O_WRONLY);
      if (!fd.ok()) {
        store.Remove(*made);
        return Fail(std::string("cannot open a store file: ") + strerror(fd.error()));
      }
      in_.FileData(fd->get(), size);
      if (in_.failed()) {
        store.Remove(*made);
        return false;
      }
      (void)store.SetTimes(fd->get(), times);
      node = std::make_shared<Node>(NodeKind::kFile, h.attr);
      node->store_name = *made;
      ++stats_.upper_files;
      stats_.data_bytes += size;
      break;
    }
    case 'L': {
      std::shared_ptr<HostDir> host;
      if (!ReadHostRef(&host)) return false;
      std::string host_name = ReadName();
      if (in_.failed()) return false;
      NodeRef old = TakeOld(f, name);
      struct stat st;
      if (old && old->IsLowerFile() && host && old->lower_parent->path == host->path &&
          SnapReadHostFlags(*old->lower_parent) == SnapReadHostFlags(*host) &&
          old->lower_name == host_name) {
        node = old;
      } else if (host &&
                 fstatat(host->fd.get(), host_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISREG(st.st_mode) &&
                 (!host->filter || host->filter->Shows(host->path, host_name, st))) {
        node = std::make_shared<Node>(NodeKind::kFile, h.attr);
        node->lower_parent = host;
        node->lower_name = host_name;
        node->host_dev = st.st_dev;
        node->host_ino = st.st_ino;
        node->lower_size = st.st_size;
        node->host_mode = st.st_mode;
        node->read_only = host->read_only;
      }
      break;
    }
    case 'S': {
      std::string target = in_.Str(kPathMax - 1);
      if (in_.failed()) return false;
      if (target.empty() || target.find('\0') != std::string::npos) {
        return Fail("a symlink's target in the snapshot is empty or holds a NUL");
      }
      if (!Count(target.size()) || (guest_made && !ChargeMeta(target.size()))) return false;
      node = std::make_shared<Node>(NodeKind::kSymlink, h.attr);
      node->target = std::move(target);
      if (f.dir && f.dir->host_dir) node->read_only = f.dir->host_dir->read_only;
      break;
    }
    case 'P': {
      SysResult<std::string> made = store.Create(h.attr.mode & 07777);
      if (made.ok()) {
        store.Remove(*made);
        if (SysStatus s = store.MakeFifo(*made); !s.ok()) made = Errno{s.error()};
      }
      if (!made.ok()) return Fail(std::string("cannot make a FIFO: ") + strerror(made.error()));
      node = std::make_shared<Node>(NodeKind::kFifo, h.attr);
      node->store_name = *made;
      break;
    }
    case 'K':
      // A dead name: no store socket behind it, so connect finds ECONNREFUSED.
      node = std::make_shared<Node>(NodeKind::kSocket, h.attr);
      break;
    case 'V': {
      std::string path = in_.Str(kPathMax - 1);
      if (in_.failed()) return false;
      NodeRef old = TakeOld(f, name);
      struct stat st;
      if (old && old->kind() == NodeKind::kDevice && old->device_path == path) {
        node = old;
        h.attr.rdev = old->attr().rdev;
      } else if (SnapKnownDevice(path) && stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
        node = std::make_shared<Node>(NodeKind::kDevice, h.attr);
        node->device_path = path;
        h.attr.rdev = st.st_rdev;  // the host's device, not the stream's number
      }
      break;
    }
  }
  if (in_.failed()) return false;
  numbered_.push_back(node);
  if (!Count(8)) return false;
  if (!node) {
    ++stats_.dropped;
    return true;
  }
  Apply(*node, h);
  if (tag != 'L' && tag != 'V') {
    // A node of the copy's own: its link count is its names here, so that
    // the last unlink, and only it, releases its store file.
    node->nlink = 0;
    name_counted_.insert(node.get());
  }
  if (guest_made) {
    node->charged = kNodeCost + (tag == 'S' ? node->target.size() : 0);
    if (!ChargeMeta(kNodeCost)) return false;
  }
  return Attach(f, name, node, guest_made);
}

SnapshotResult SnapshotReader::Run() {
  SnapshotResult r;
  uint64_t magic = in_.U64();
  uint32_t version = in_.U32();
  uint64_t data = in_.U64();
  if (!in_.failed() && (magic != kSnapshotMagic || version != snapshot::kVersion)) {
    Fail("not a VFS snapshot of this sentry's version");
  }
  if (!in_.failed()) {
    uint64_t room = opts_.disk_bytes ? opts_.disk_bytes : UINT64_MAX;
    struct statvfs sv;
    if (fstatvfs(v_.store_->dir_fd(), &sv) == 0) {
      room = std::min<uint64_t>(room, static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize);
    }
    if (data > room) {
      Fail("the parent's files need " + SnapMiB(data) + " MiB in the child's store, which has " +
           SnapMiB(room) + " MiB free (--disk)");
    }
    data_left_ = data;
  }
  meta_ = v_.meta_bytes_;
  if (!in_.failed()) CollectHostDirs();
  if (!in_.failed() && in_.U8() == 'D' && !in_.failed()) {
    std::string name = in_.Str(0);
    ++records_;
    ReadDir(name, true);
  } else {
    Fail("the snapshot does not start with the root directory");
  }
  while (!in_.failed() && !stack_.empty()) {
    uint8_t tag = in_.U8();
    if (in_.failed()) break;
    if (tag == 'E') {
      stack_.pop_back();  // what the new tree had there and the parent no longer has goes
      continue;
    }
    ++records_;
    ++stats_.entries;
    if (tag == 'D') {
      std::string name = ReadName();
      if (!in_.failed()) ReadDir(name, false);
    } else {
      ReadEntry(tag, stack_.back());
    }
  }
  if (!in_.failed()) {
    uint8_t tag = in_.U8();
    uint64_t records = in_.U64();
    uint64_t sent = in_.U64();
    if (!in_.failed() && (tag != 'Z' || records != records_ || sent != stats_.data_bytes)) {
      Fail("the snapshot's end does not match what it held");
    }
  }
  if (in_.failed()) {
    r.error = in_.error();
    return r;
  }
  v_.meta_bytes_ = meta_;
  if (max_ino_ < UINT64_MAX) v_.next_ino_ = std::max(v_.next_ino_, max_ino_ + 1);
  stats_.stream_bytes = in_.received();
  r.stats = stats_;
  return r;
}

SnapshotResult ReadSnapshot(Vfs& v, int fd, const SnapshotReadOptions& opts) {
  // The store owner's ids for the whole read, not for each file made: a
  // change of ids costs 3-4 us (store_owner.h), four of them a file. Its
  // host lookups are then made as that unprivileged owner, as the
  // sentry's guest-facing threads make theirs (run.cc's DropFsIdentity):
  // the lower layer shows only what "other" may read anyway.
  HeldFsIds before = t_held_fs_ids;
  uid_t uid = v.store().owner_uid();
  gid_t gid = v.store().owner_gid();
  bool hold = !(before.held && before.uid == uid && before.gid == gid);
  int old_gid = 0, old_uid = 0;
  if (hold) {
    old_gid = setfsgid(gid);
    old_uid = setfsuid(uid);
    t_held_fs_ids = {true, uid, gid};
  }
  SnapshotResult r = SnapshotReader(v, fd, opts).Run();
  if (hold) {
    setfsuid(old_uid);
    setfsgid(old_gid);
    t_held_fs_ids = before;
  }
  return r;
}

}  // namespace sentry::vfs
