#include "sentry/kernel/devpts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sentry/kernel/task.h"

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
  // A guest on a subordinate range: its ptys are its own (the sentry would
  // make them the namespace root's) and closed to the sentry, so they open
  // through the helper, as the guest.
  if (k.proc_opener().enabled()) {
    Kernel* kp = &k;
    n->reopen = [kp, pts, name](int flags) -> SysResult<UniqueFd> {
      vfs::Creds who = kp->current ? kp->current->process->creds : vfs::Creds{};
      return kp->proc_opener().OpenPts(pts->fd.get(), name, flags, who.uid, who.gid);
    };
  }
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

// The controlling terminal of host task tid, from /proc/TID/stat's tty_nr
// (0: none), as the kernel encodes a dev_t there.
dev_t ControllingTerminal(pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  size_t end = line.rfind(')');  // the command may hold spaces and ')'
  if (end == std::string::npos) return 0;
  std::istringstream rest(line.substr(end + 1));
  std::string state;
  long ppid, pgrp, session, tty_nr = 0;
  if (!(rest >> state >> ppid >> pgrp >> session >> tty_nr)) return 0;
  unsigned long v = static_cast<unsigned long>(tty_nr);
  return makedev((v >> 8) & 0xfff, (v & 0xff) | ((v >> 12) & 0xfff00));
}

// /dev/tty: the caller's controlling terminal opened anew, as drivers/tty's
// tty_open does for 5:0; ENXIO without one. A guest's can only be a pty of
// the sandbox's devpts (it never holds another terminal: see
// sentry/run/terminal.h), so it is opened there by its number, and checked.
SysResult<UniqueFd> OpenControllingTerminal(Kernel& k, const vfs::HostDir& pts, int flags) {
  Task* t = k.current;
  dev_t tty = t ? ControllingTerminal(t->tid) : 0;
  constexpr unsigned kPtsMajor = 136, kPtsMajors = 8;  // UNIX98_PTY_SLAVE_MAJOR
  if (tty == 0 || major(tty) < kPtsMajor || major(tty) >= kPtsMajor + kPtsMajors) {
    return Errno{ENXIO};
  }
  unsigned index = (major(tty) - kPtsMajor) * 256 + minor(tty);
  int keep = flags & (O_ACCMODE | O_NONBLOCK | O_APPEND);
  int fd =
      openat(pts.fd.get(), std::to_string(index).c_str(), keep | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == EACCES && k.proc_opener().enabled()) {
    // A range's guest's pty: as the namespace's root (tty_open asks no
    // permission of /dev/tty's opener).
    auto got = k.proc_opener().OpenPts(pts.fd.get(), std::to_string(index), keep, 0, 0);
    fd = got.ok() ? got->Release() : -1;
    if (!got.ok()) errno = got.error();
  }
  if (fd < 0) return Errno{errno == ENOENT ? ENXIO : errno};
  UniqueFd out(fd);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != tty || st.st_dev != k.pts_dev) {
    return Errno{ENXIO};
  }
  return out;
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
  NodeRef tty = kernel.vfs().NewNode(NodeKind::kDevice, S_IFCHR | 0666, 0, 0);
  tty->attr().rdev = makedev(5, 0);
  tty->reopen = [k, pts](int flags) { return OpenControllingTerminal(*k, *pts, flags); };
  kernel.vfs().AddChild(dev_dir, "tty", tty);
}

}  // namespace sentry
