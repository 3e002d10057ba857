#include "sentry/run/sandbox_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sentry/base/status_macros.h"
#include "sentry/run/etc_view.h"

namespace sentry {
namespace {

using vfs::NodeKind;
using vfs::NodeRef;

// Shows host_parent/name at dir/name, if the host has it.
void AddLower(vfs::Vfs& v, const NodeRef& dir, const std::shared_ptr<vfs::HostDir>& host_parent,
              const std::string& name) {
  struct stat st;
  if (fstatat(host_parent->fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return;
  NodeRef node = v.MakeLowerNode(host_parent, name, st);
  if (!node) return;
  // A lower root that is a symlink (merged /usr: /bin -> usr/bin) has no
  // host object of its own, as a symlink a host lookup found: marked as
  // such, a change to it invalidates the lower answers (vfs.h
  // set_on_lower_change), and the fast-metadata region may publish it
  // (fast_meta_publish.cc FromLowerLayer). The root is never shrunk
  // (vfs_cache.cc: no host directory), so it stays.
  if (node->kind() == NodeKind::kSymlink) node->looked_up_ctime = node->attr().ctime;
  v.AddChild(dir, name, node);
}

NodeRef AddDir(vfs::Vfs& v, const NodeRef& parent, const std::string& name, mode_t mode,
               uid_t uid = 0, gid_t gid = 0) {
  NodeRef d = v.NewNode(NodeKind::kDir, S_IFDIR | mode, uid, gid);
  v.AddChild(parent, name, d);
  return d;
}

void AddText(vfs::Vfs& v, const NodeRef& dir, const std::string& name, std::string text) {
  NodeRef f = v.NewNode(NodeKind::kSynthetic, S_IFREG | 0644, 0, 0);
  f->generate = [text = std::move(text)] { return text; };
  v.AddChild(dir, name, f);
}

void AddSymlink(vfs::Vfs& v, const NodeRef& dir, const std::string& name,
                const std::string& target) {
  NodeRef l = v.NewNode(NodeKind::kSymlink, S_IFLNK | 0777, 0, 0);
  l->target = target;
  v.AddChild(dir, name, l);
}

void AddDevice(vfs::Vfs& v, const NodeRef& dir, const std::string& name) {
  std::string path = "/dev/" + name;
  struct stat st;
  if (stat(path.c_str(), &st) < 0 || !S_ISCHR(st.st_mode)) return;
  NodeRef d = v.NewNode(NodeKind::kDevice, S_IFCHR | 0666, 0, 0);
  d->attr().rdev = st.st_rdev;
  d->device_path = path;
  v.AddChild(dir, name, d);
}

// The names of a host directory's entries, "." and ".." left out.
std::vector<std::string> ListNames(int dir_fd) {
  std::vector<std::string> names;
  int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return names;
  }
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(d);
  return names;
}

// A directory beneath parent_fd, never through a symlink.
std::shared_ptr<vfs::HostDir> OpenHostDir(int parent_fd, const std::string& name,
                                          const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, parent_fd, name.c_str(), &how, sizeof(how)));
  if (fd < 0) return nullptr;
  return std::make_shared<vfs::HostDir>(vfs::HostDir{UniqueFd(fd), path});
}

// The /etc entries the sandbox writes itself, whatever the rootfs holds: they
// describe the sandbox (its name, its loopback, sentry's DNS server).
bool SandboxOwnEtc(const std::string& name) {
  return name == "hostname" || name == "hosts" || name == "resolv.conf";
}

void BuildUsers(vfs::Vfs& v, const TreeConfig& c, const NodeRef& etc) {
  AddText(v, etc, "passwd",
          absl::StrCat("root:x:0:0:root:/root:/bin/sh\n", c.user, ":x:", c.uid, ":", c.gid, ":",
                       c.user, ":", c.home,
                       ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"));
  AddText(v, etc, "group",
          absl::StrCat("root:x:0:\n", c.user, ":x:", c.gid, ":\nnogroup:x:65534:\n"));
}

// The host's /etc as installed packages ship it (etc_view.h), or a bundle's
// etc/ in full (its passwd and group name its users) but for the sandbox's
// own files.
void BuildEtc(vfs::Vfs& v, const TreeConfig& c, const std::shared_ptr<vfs::HostDir>& host_root) {
  NodeRef etc;
  bool own_users = true;
  if (!c.rootfs.empty()) {
    etc = AddDir(v, v.root(), "etc", 0755);
    if (auto rootfs_etc = OpenHostDir(host_root->fd.get(), "etc", "/etc")) {
      for (const std::string& name : ListNames(rootfs_etc->fd.get())) {
        if (!SandboxOwnEtc(name)) AddLower(v, etc, rootfs_etc, name);
      }
      own_users = !v.Child(etc, "passwd");
    }
  } else {
    etc = AddHostEtc(v, host_root, c.etc_view ? c.etc_view : EtcView::ForHost());
    if (!etc) etc = AddDir(v, v.root(), "etc", 0755);
  }
  if (own_users) BuildUsers(v, c, etc);
  AddText(v, etc, "hostname", c.hostname + "\n");
  AddText(v, etc, "hosts",
          absl::StrCat("127.0.0.1\tlocalhost\n127.0.1.1\t", c.hostname,
                       "\n::1\tlocalhost ip6-localhost ip6-loopback\n"));
  // The sentry's DNS server, on the sandbox's own loopback (sandbox_net.h).
  AddText(v, etc, "resolv.conf", "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n");
}

// The top-level names a rootfs does not give the sandbox: its own synthetic
// trees (and /sys, which it does not show).
bool SandboxOwnTop(const std::string& name) {
  return name == "etc" || name == "dev" || name == "proc" || name == "sys";
}

void BuildDev(vfs::Vfs& v) {
  NodeRef dev = AddDir(v, v.root(), "dev", 0755);
  for (const char* name : {"null", "zero", "full", "random", "urandom"}) AddDevice(v, dev, name);
  AddSymlink(v, dev, "fd", "/proc/self/fd");
  AddSymlink(v, dev, "stdin", "/proc/self/fd/0");
  AddSymlink(v, dev, "stdout", "/proc/self/fd/1");
  AddSymlink(v, dev, "stderr", "/proc/self/fd/2");
  AddDir(v, dev, "shm", 01777);
  AddDir(v, dev, "pts", 0755);
}

// What a copy makes belongs to the guest, wherever the operator put it.
NodeRef GiveTo(NodeRef node, const vfs::Creds& owner) {
  node->attr().uid = owner.uid;
  node->attr().gid = owner.gid;
  return node;
}

vfs::Creds Operator() {
  vfs::Creds root;
  root.uid = 0;
  root.gid = 0;
  return root;
}

absl::Status CopyFile(vfs::Vfs& v, const vfs::Resolved& at, const vfs::Creds& creds,
                      const std::string& host_path, mode_t mode) {
  int src = open(host_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (src < 0) return ErrnoStatus(absl::StrCat("cannot read ", host_path));
  UniqueFd src_fd(src);
  auto node = v.Create(at, NodeKind::kFile, mode & 07777, Operator());
  if (node.ok()) GiveTo(*node, creds);
  if (!node.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", at.name, " in the sandbox: ", strerror(node.error())));
  }
  auto dst = v.OpenData(**node, O_WRONLY);
  if (!dst.ok()) return absl::InternalError("cannot open the sandbox copy");
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(src, buf, sizeof(buf));
    if (n < 0) return ErrnoStatus(absl::StrCat("cannot read ", host_path));
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(dst->get(), buf + off, n - off);
      if (w <= 0) return ErrnoStatus("cannot write the sandbox copy (is --disk too small?)");
      off += w;
    }
  }
  return absl::OkStatus();
}

// -v HOST:GUEST[:ro|:rw]: the host directory becomes a lower directory at
// GUEST, over whatever the tree had there. It is opened from the host's root
// with no symlink on the way (the caller's path, resolved when the flags were
// read, cannot be swapped for a link since); everything beneath it is then
// reached from that fd, as the rest of the lower layer is. A :rw mount's
// changes are made on the host beneath that fd (vfs/vfs_host_rw.cc), as the
// guest's uid and gid (c.uid, c.gid).
absl::Status AddBindMount(vfs::Vfs& v, int host_root, const BindMount& m, const TreeConfig& c) {
  if (m.host_path.empty() || m.host_path[0] != '/' || m.guest_path.size() < 2 ||
      m.guest_path[0] != '/') {
    return absl::InvalidArgumentError("a bind mount needs absolute HOST and GUEST paths");
  }
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  std::string rel = m.host_path == "/" ? "." : m.host_path.substr(1);
  int fd = static_cast<int>(syscall(SYS_openat2, host_root, rel.c_str(), &how, sizeof(how)));
  if (fd < 0) return ErrnoStatus(absl::StrCat("-v ", m.host_path));
  UniqueFd dir_fd(fd);
  struct stat st;
  if (fstat(fd, &st) < 0) return ErrnoStatus(absl::StrCat("-v ", m.host_path));

  size_t slash = m.guest_path.rfind('/');
  std::string leaf = m.guest_path.substr(slash + 1);
  ASSIGN_OR_RETURN(
      NodeRef parent,
      MakeSandboxDirs(v, Operator(), slash == 0 ? "/" : m.guest_path.substr(0, slash)));
  vfs::Attr a = vfs::Attr::OfHost(st);
  vfs::g_host_owner_view.Apply(a.uid, a.gid);
  auto node = std::make_shared<vfs::Node>(NodeKind::kDir, a);
  bool rw = m.mode == BindMount::Mode::kReadWrite;
  node->host_dir = std::make_shared<vfs::HostDir>(vfs::HostDir{
      std::move(dir_fd), m.host_path, m.mode == BindMount::Mode::kReadOnly, nullptr, rw,
      rw ? v.NewMountId() : 0, c.rw_uid == static_cast<uid_t>(-1) ? c.uid : c.rw_uid,
      c.rw_gid == static_cast<gid_t>(-1) ? c.gid : c.rw_gid, vfs::g_host_owner_view.on});
  node->host_mode = st.st_mode;
  node->nlink = static_cast<uint32_t>(st.st_nlink);
  node->read_only = node->host_dir->read_only;
  // Over what the tree showed there (a lower entry's name stays hidden).
  parent->whiteouts.erase(leaf);
  v.AddChild(parent, leaf, node);
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> RootfsLowerRoots(const std::string& rootfs) {
  std::vector<std::string> roots;
  int fd = open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return roots;
  UniqueFd dir(fd);
  for (const std::string& name : ListNames(dir.get())) {
    if (!SandboxOwnTop(name)) roots.push_back("/" + name);
  }
  return roots;
}

absl::StatusOr<std::unique_ptr<vfs::Vfs>> BuildSandboxTree(const TreeConfig& c,
                                                           std::unique_ptr<vfs::Store> store) {
  // The lower layer's host root: the host's / or a bundle's rootfs, opened
  // once; everything below it is reached beneath this fd, never by host path
  // (a symlink in a rootfs names a path of the rootfs, never of the host).
  std::string host_root_path = c.rootfs.empty() ? "/" : c.rootfs;
  int root_fd = open(host_root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoStatus(absl::StrCat("open ", host_root_path));
  UniqueFd host_root(root_fd);
  auto host_root_dir = std::make_shared<vfs::HostDir>(vfs::HostDir{UniqueFd(dup(root_fd)), ""});

  auto root = std::make_shared<vfs::Node>(NodeKind::kDir, vfs::Attr{S_IFDIR | 0755});
  auto v = std::make_unique<vfs::Vfs>(root, std::move(store));
  root->attr().ino = 2;
  root->attr().atime = root->attr().mtime = root->attr().ctime = vfs::Now();

  std::vector<std::string> lower_roots =
      c.rootfs.empty() ? c.lower_roots : RootfsLowerRoots(c.rootfs);
  for (const std::string& r : lower_roots) {
    std::string name = r.substr(1);
    if (name.empty() || name.find('/') != std::string::npos) continue;
    AddLower(*v, root, host_root_dir, name);
  }
  BuildEtc(*v, c, host_root_dir);
  BuildDev(*v);
  AddDir(*v, root, "proc", 0555);
  AddDir(*v, root, "sys", 0555);
  // What a rootfs lacks of the usual tree, the sandbox makes (in memory).
  auto add_missing = [&](const NodeRef& dir, const std::string& name, mode_t mode, uid_t uid = 0,
                         gid_t gid = 0) {
    if (NodeRef there = v->Child(dir, name)) return there;
    return AddDir(*v, dir, name, mode, uid, gid);
  };
  add_missing(root, "tmp", 01777);
  NodeRef var = add_missing(root, "var", 0755);
  if (var->IsDir()) add_missing(var, "tmp", 01777);
  add_missing(root, "run", 0755);
  add_missing(root, "root", 0700);
  if (c.rootfs.empty()) {
    NodeRef home = AddDir(*v, root, "home", 0755);
    std::string home_name = c.home.substr(c.home.rfind('/') + 1);
    AddDir(*v, home, home_name, 0755, c.uid, c.gid);
  }
  // A bind mount names a host path (the operator's), even over a rootfs.
  if (!c.mounts.empty()) {
    UniqueFd host_slash(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (host_slash.get() < 0) return ErrnoStatus("open /");
    // A :rw mount's tree is the host's: a mount beneath it would need its
    // missing directories made on the host, and would hide host entries.
    for (const BindMount& rw : c.mounts) {
      if (rw.mode != BindMount::Mode::kReadWrite) continue;
      for (const BindMount& m : c.mounts) {
        if (m.guest_path.size() > rw.guest_path.size() &&
            m.guest_path.compare(0, rw.guest_path.size() + 1, rw.guest_path + "/") == 0) {
          return absl::InvalidArgumentError(absl::StrCat("-v ", m.host_path, ":", m.guest_path,
                                                         ": no mount inside the :rw mount at ",
                                                         rw.guest_path));
        }
      }
    }
    for (const BindMount& m : c.mounts) RETURN_IF_ERROR(AddBindMount(*v, host_slash.get(), m, c));
  }
  return v;
}

absl::StatusOr<NodeRef> MakeSandboxDirs(vfs::Vfs& v, const vfs::Creds& creds,
                                        const std::string& guest_path) {
  if (guest_path.empty() || guest_path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("the sandbox path must be absolute: ", guest_path));
  }
  // Made as the guest would with mkdir -p, whoever may write where.
  vfs::Creds root_creds = Operator();
  NodeRef dir = v.root();
  for (const std::string& part :
       std::vector<std::string>(absl::StrSplit(guest_path, '/', absl::SkipEmpty()))) {
    auto r = v.Walk(dir, part, {}, root_creds);
    if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat("bad sandbox path ", guest_path));
    if (!r->node) {
      auto made = v.Create(*r, NodeKind::kDir, 0755, root_creds);
      if (!made.ok()) return absl::InternalError(absl::StrCat("cannot make ", part));
      dir = GiveTo(*made, creds);
    } else if (!r->node->IsDir()) {
      return absl::InvalidArgumentError(absl::StrCat(part, " is not a directory in the sandbox"));
    } else {
      dir = r->node;
    }
  }
  return dir;
}

absl::Status CopyIntoSandbox(vfs::Vfs& v, const vfs::Creds& creds, const std::string& host_path,
                             const std::string& guest_path, bool top) {
  if (guest_path.empty() || guest_path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("the sandbox path must be absolute: ", guest_path));
  }
  struct stat st;
  if ((top ? stat(host_path.c_str(), &st) : lstat(host_path.c_str(), &st)) < 0) {
    return ErrnoStatus(absl::StrCat("cannot copy ", host_path));
  }
  vfs::Creds root_creds = Operator();
  std::vector<std::string> parts = absl::StrSplit(guest_path, '/', absl::SkipEmpty());
  if (parts.empty()) return absl::InvalidArgumentError("cannot copy over /");
  std::string leaf = parts.back();
  parts.pop_back();
  ASSIGN_OR_RETURN(NodeRef dir, MakeSandboxDirs(v, creds, "/" + absl::StrJoin(parts, "/")));
  auto at = v.Walk(dir, leaf, {}, root_creds);
  if (!at.ok() || at->node) {
    return absl::AlreadyExistsError(absl::StrCat(guest_path, " already exists in the sandbox"));
  }
  if (S_ISREG(st.st_mode)) return CopyFile(v, *at, creds, host_path, st.st_mode);
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlink(host_path.c_str(), target, sizeof(target) - 1);
    if (n < 0) return ErrnoStatus(absl::StrCat("cannot read link ", host_path));
    auto made = v.Symlink(*at, std::string(target, n), root_creds);
    if (!made.ok()) return absl::InternalError(absl::StrCat("cannot make link ", guest_path));
    GiveTo(*made, creds);
    return absl::OkStatus();
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(host_path, " is not a file or directory"));
  }
  auto made = v.Create(*at, NodeKind::kDir, st.st_mode & 07777, root_creds);
  if (!made.ok()) return absl::InternalError(absl::StrCat("cannot make ", guest_path));
  GiveTo(*made, creds);
  DIR* d = opendir(host_path.c_str());
  if (!d) return ErrnoStatus(absl::StrCat("cannot list ", host_path));
  absl::Status status;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    status = CopyIntoSandbox(v, creds, host_path + "/" + name, guest_path + "/" + name, false);
    if (!status.ok()) break;
  }
  closedir(d);
  return status;
}

absl::Status WriteIntoSandbox(vfs::Vfs& v, const vfs::Creds& creds, std::string_view data,
                              mode_t mode, const std::string& guest_path) {
  size_t slash = guest_path.rfind('/');
  if (guest_path.empty() || guest_path[0] != '/' || slash + 1 == guest_path.size()) {
    return absl::InvalidArgumentError(absl::StrCat("not a sandbox file path: ", guest_path));
  }
  ASSIGN_OR_RETURN(NodeRef dir, MakeSandboxDirs(v, creds, guest_path.substr(0, slash + 1)));
  auto at = v.Walk(dir, guest_path.substr(slash + 1), {}, Operator());
  if (!at.ok() || at->node) {
    return absl::AlreadyExistsError(absl::StrCat(guest_path, " already exists in the sandbox"));
  }
  auto node = v.Create(*at, NodeKind::kFile, mode & 0777, Operator());
  if (!node.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", guest_path, " in the sandbox: ", strerror(node.error())));
  }
  GiveTo(*node, creds);
  auto dst = v.OpenData(**node, O_WRONLY);
  if (!dst.ok()) return absl::InternalError("cannot open the sandbox copy");
  for (size_t off = 0; off < data.size();) {
    ssize_t w = write(dst->get(), data.data() + off, data.size() - off);
    if (w <= 0) return ErrnoStatus("cannot write the sandbox copy (is --disk too small?)");
    off += static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status ReplaceInSandbox(vfs::Vfs& v, const vfs::Creds& creds, std::string_view data,
                              const std::string& guest_path) {
  size_t slash = guest_path.rfind('/');
  if (guest_path.empty() || guest_path[0] != '/' || slash + 1 == guest_path.size()) {
    return absl::InvalidArgumentError(absl::StrCat("not a sandbox file path: ", guest_path));
  }
  ASSIGN_OR_RETURN(NodeRef dir, MakeSandboxDirs(v, creds, guest_path.substr(0, slash + 1)));
  auto at = v.Walk(dir, guest_path.substr(slash + 1), {}, Operator());
  if (at.ok() && at->node) {
    if (at->node->IsDir()) {
      return absl::InvalidArgumentError(absl::StrCat(guest_path, " is a directory in the sandbox"));
    }
    if (!v.Unlink(*at, Operator()).ok()) {
      return absl::InternalError(absl::StrCat("cannot replace ", guest_path));
    }
  }
  return WriteIntoSandbox(v, creds, data, 0644, guest_path);
}

}  // namespace sentry
