// The child's namespaces, made whole by a helper process that joins them
// (see adopt.h). The helper is forked while S2 has one thread, so it may
// allocate; it reports one packet: "ok" with the store's fd, or "error: WHY".
#include <fcntl.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "sentry/base/fd_passing.h"
#include "sentry/run/adopt.h"
#include "vfs/store.h"

namespace sentry::adopt {
namespace {

bool WriteWhole(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// The identity over the ids a user namespace maps: its own map's first
// column and counts, read from inside it.
std::string IdentityOf(const std::string& own_map) {
  std::ifstream in(own_map);
  std::string out;
  unsigned long first, outside, count;
  while (in >> first >> outside >> count) out += absl::StrCat(first, " ", first, " ", count, "\n");
  return out;
}

[[noreturn]] void Helper(int report, pid_t child, const std::string& hostname, uint64_t disk,
                         bool as_root, int user_parent, int user, int mnt, int uts, int net) {
  auto fail = [&](const std::string& what) {
    std::string msg = absl::StrCat("error: ", what, ": ", std::strerror(errno));
    SendWithFds(report, msg.data(), msg.size(), {});
    _exit(1);
  };
  // The sandbox's user namespace (the child's parent one): its maps are
  // written from there, mapping exactly the ids the sandbox maps. Without
  // root too: the caller made that namespace, so it holds every capability
  // there (setns, and the map write's CAP_SETUID/SETGID over the parent);
  // a gid_map so written needs no setgroups "deny" (single-id mode's
  // sandbox has it, and the child inherits it: nobody can allow it again).
  if (setns(user_parent, CLONE_NEWUSER) < 0 && errno != EINVAL) fail("join the sandbox's userns");
  std::string uids = IdentityOf("/proc/self/uid_map"), gids = IdentityOf("/proc/self/gid_map");
  std::string base = absl::StrCat("/proc/", child);
  if (uids.empty() || !WriteWhole(base + "/uid_map", uids)) fail("write the child's uid_map");
  if (gids.empty() || !WriteWhole(base + "/gid_map", gids)) fail("write the child's gid_map");
  if (setns(user, CLONE_NEWUSER) < 0) fail("join the child's userns");
  if (setns(uts, CLONE_NEWUTS) < 0 || sethostname(hostname.data(), hostname.size()) < 0) {
    fail("set the child's hostname");
  }
  if (setns(net, CLONE_NEWNET) < 0) fail("join the child's netns");
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0) fail("read the child's lo");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) fail("bring the child's lo up");
  close(s);
  if (setns(mnt, CLONE_NEWNS) < 0 || chdir("/") < 0) fail("join the child's mount namespace");
  // Over the parent's store, where the child's view has it, owned as a
  // run's: by the sandbox's root (uid 0 there: root's block) or, without
  // root, by the caller, its mounter (the one id single-id mode maps).
  std::string opts = absl::StrCat("mode=0755,size=", disk, as_root ? ",uid=0,gid=0" : "");
  // noatime, as the parent's (vfs/store_writers.cc).
  if (mount("tmpfs", vfs::Store::kGuestPath, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOATIME,
            opts.c_str()) < 0) {
    fail("mount the child's store over the parent's");
  }
  int dir = open(vfs::Store::kGuestPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) fail("open the child's store");
  int fds[1] = {dir};
  SendWithFds(report, "ok", 2, fds);
  _exit(0);
}

UniqueFd OpenNs(pid_t pid, const char* name) {
  return UniqueFd(open(absl::StrCat("/proc/", pid, "/ns/", name).c_str(), O_RDONLY | O_CLOEXEC));
}

}  // namespace

UniqueFd SandboxUserns(pid_t child) {
  UniqueFd user = OpenNs(child, "user");
  if (!user) return {};
  return UniqueFd(ioctl(user.get(), NS_GET_PARENT));
}

ChildRange RangeOfChild(pid_t child) {
  // "INSIDE HOST COUNT" lines: a range's two ("0 CALLER 1", "1 START N");
  // single-id mode's one line may start at 1 too (--uid 1), and is none.
  auto second = [&](const char* name, uint32_t* host, uint32_t* count) {
    std::ifstream in(absl::StrCat("/proc/", child, "/", name));
    unsigned long inside, outside, n;
    int lines = 0;
    uint32_t h = 0, c = 0;
    while (in >> inside >> outside >> n) {
      ++lines;
      if (inside == 1) {
        h = static_cast<uint32_t>(outside);
        c = static_cast<uint32_t>(n);
      }
    }
    if (lines == 2) {
      *host = h;
      *count = c;
    }
  };
  ChildRange r;
  uint32_t uids = 0, gids = 0;
  second("uid_map", &r.uid, &uids);
  second("gid_map", &r.gid, &gids);
  r.count = std::min(uids, gids);
  return r;
}

absl::StatusOr<UniqueFd> PrepareChildNamespaces(pid_t child, const std::string& hostname,
                                                uint64_t disk_bytes) {
  UniqueFd user = OpenNs(child, "user"), mnt = OpenNs(child, "mnt"), uts = OpenNs(child, "uts"),
           net = OpenNs(child, "net");
  if (!user || !mnt || !uts || !net) {
    return absl::InternalError(
        absl::StrCat("cannot open the child's namespaces: ", std::strerror(errno)));
  }
  UniqueFd parent = SandboxUserns(child);
  if (!parent) {
    return absl::InternalError(
        absl::StrCat("the child's userns has no parent in reach: ", std::strerror(errno)));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    return absl::InternalError("socketpair for the namespace helper");
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork the namespace helper");
  if (pid == 0) {
    Helper(theirs.get(), child, hostname, disk_bytes, geteuid() == 0, parent.get(), user.get(),
           mnt.get(), uts.get(), net.get());
  }
  theirs.Reset();
  char msg[512];
  std::array<UniqueFd, 1> got;
  Received r{};
  pollfd p{ours.get(), POLLIN, 0};
  if (poll(&p, 1, 10000) > 0) r = ReceiveWithFds(ours.get(), msg, sizeof(msg), got);
  int status = 0;
  if (r.bytes <= 0) kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (r.bytes == 2 && std::memcmp(msg, "ok", 2) == 0 && got[0]) return std::move(got[0]);
  if (r.bytes > 0) return absl::InternalError(std::string(msg, static_cast<size_t>(r.bytes)));
  return absl::InternalError("the namespace helper did not answer");
}

namespace {

// A mapping's device, from its maps line ("START-END PERMS OFFSET MAJ:MIN
// INODE PATH": the file's device and inode as stat gives them); false for
// anonymous, SysV and memfd memory (inode 0 or the kernel's internal mounts
// are on no lower device anyway).
bool OnLowerDevice(const std::string& line, const std::vector<dev_t>& lower_devs) {
  std::istringstream fields(line);
  std::string range, perms, offset, dev;
  unsigned long long inode = 0;
  fields >> range >> perms >> offset >> dev >> inode;
  unsigned major = 0, minor = 0;
  char colon = 0;
  std::istringstream d(dev);
  d >> std::hex >> major >> colon >> minor;
  return !d.fail() && colon == ':' && inode != 0 &&
         std::find(lower_devs.begin(), lower_devs.end(), makedev(major, minor)) != lower_devs.end();
}

// As root: maps, not smaps (smaps walks every page of every mapping to count
// them: 11-29 ms for a kernel holding a 100 MB DataFrame, on the fork's
// path). What a shared mapping must not be is writable, or able to be made so
// (VM_MAYWRITE): for a file mapping that is whether its file was opened for
// writing (mm/mmap.c clears VM_MAYWRITE of a MAP_SHARED mapping of a file
// without FMODE_WRITE), and map_files/RANGE's own mode says that (S_IWUSR from
// the mapping's f_mode, fs/proc/base.c; lstat, not followed; its lookup needs
// CAP_CHECKPOINT_RESTORE in the initial namespace). Shared anonymous, SysV and
// memfd memory is shmem opened for writing.
bool RefusedByMapFiles(pid_t pid, const std::vector<dev_t>& lower_devs, std::string* what) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/maps"));
  if (!maps) {
    *what = "its /proc/PID/maps cannot be read";
    return true;
  }
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms;
    fields >> range >> perms;
    if (perms.size() != 4 || perms[3] != 's') continue;
    std::string file = absl::StrCat("/proc/", pid, "/map_files/", range);
    struct stat link;
    bool may_write =
        perms[1] == 'w' || lstat(file.c_str(), &link) != 0 || (link.st_mode & S_IWUSR) != 0;
    bool lower = OnLowerDevice(line, lower_devs);
    if (may_write || !lower) {
      *what = absl::StrCat(line, may_write ? " (writable)" : " (not a lower-layer file)");
      return true;
    }
  }
  return false;
}

// Without root map_files cannot be looked up: smaps' "VmFlags: rd mr mw me
// sh" says it ("mw": may be made writable), at smaps' cost.
bool RefusedBySmaps(pid_t pid, const std::vector<dev_t>& lower_devs, std::string* what) {
  std::ifstream maps(absl::StrCat("/proc/", pid, "/smaps"));
  if (!maps) {
    *what = "its /proc/PID/smaps cannot be read";
    return true;
  }
  std::string line, mapping;
  bool shared = false, lower = false;
  while (std::getline(maps, line)) {
    if (line.rfind("VmFlags:", 0) == 0) {
      if (!shared) continue;
      std::istringstream flags(line.substr(8));
      std::string f;
      bool may_write = false;
      while (flags >> f) may_write = may_write || f == "mw" || f == "wr";
      if (may_write || !lower) {
        *what = absl::StrCat(mapping, may_write ? " (writable)" : " (not a lower-layer file)");
        return true;
      }
      continue;
    }
    std::istringstream fields(line);
    std::string r, perms;
    fields >> r >> perms;
    if (r.find('-') == std::string::npos || perms.size() != 4 || r.back() == ':') continue;
    mapping = line;
    shared = perms[3] == 's';
    lower = OnLowerDevice(line, lower_devs);
  }
  return false;
}

}  // namespace

bool HasRefusedSharedMapping(pid_t pid, const std::vector<dev_t>& lower_devs, std::string* what) {
  return geteuid() == 0 ? RefusedByMapFiles(pid, lower_devs, what)
                        : RefusedBySmaps(pid, lower_devs, what);
}

}  // namespace sentry::adopt
