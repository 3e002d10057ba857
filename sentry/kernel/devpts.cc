#include "sentry/kernel/devpts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace sentry {
namespace {

using vfs::NodeKind;
using vfs::NodeRef;

NodeRef PtsEntry(Kernel& k, const std::shared_ptr<vfs::HostDir>& pts, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return nullptr;
  }
  struct stat st;
  if (fstatat(pts->fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISCHR(st.st_mode)) {
    return nullptr;
  }
  const KernelConfig& c = k.config();
  NodeRef n =
      k.vfs().NewNode(NodeKind::kDevice, st.st_mode, c.GuestUid(st.st_uid), c.GuestGid(st.st_gid));
  // The instance's own st_dev and st_ino, so that a stat by path matches an
  // fstat of a pty fd the guest made natively (TIOCGPTPEER): ttyname(3).
  n->attr().dev = st.st_dev;
  n->attr().ino = st.st_ino;
  n->attr().rdev = st.st_rdev;
  n->attr().atime = st.st_atim;
  n->attr().mtime = st.st_mtim;
  n->attr().ctime = st.st_ctim;
  n->device_parent = pts;
  n->device_name = name;
  return n;
}

std::vector<std::string> PtsNames(const vfs::HostDir& pts) {
  std::vector<std::string> names;
  int fd = openat(pts.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (DIR* d = fd >= 0 ? fdopendir(fd) : nullptr) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    closedir(d);
  } else if (fd >= 0) {
    close(fd);
  }
  return names;
}

}  // namespace

void MountDevpts(Kernel& kernel, const vfs::NodeRef& dev_dir, UniqueFd pts_dir) {
  if (!pts_dir || !dev_dir) return;
  vfs::NodeRef pts_node = kernel.vfs().Child(dev_dir, "pts");
  if (!pts_node || !pts_node->IsDir()) return;
  struct stat st;
  if (fstat(pts_dir.get(), &st) < 0) return;
  kernel.pts_dev = st.st_dev;
  auto pts = std::make_shared<vfs::HostDir>();
  pts->fd = std::move(pts_dir);
  pts->path = "/dev/pts";
  Kernel* k = &kernel;
  pts_node->lookup = [k, pts](const std::string& name) { return PtsEntry(*k, pts, name); };
  pts_node->names = [pts] { return PtsNames(*pts); };
  NodeRef ptmx = kernel.vfs().NewNode(NodeKind::kSymlink, S_IFLNK | 0777, 0, 0);
  ptmx->target = "pts/ptmx";
  kernel.vfs().AddChild(dev_dir, "ptmx", ptmx);
}

}  // namespace sentry
