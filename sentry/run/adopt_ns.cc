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
                         int user_parent, int user, int mnt, int uts, int net) {
  auto fail = [&](const std::string& what) {
    std::string msg = absl::StrCat("error: ", what, ": ", std::strerror(errno));
    SendWithFds(report, msg.data(), msg.size(), {});
    _exit(1);
  };
  // The sandbox's user namespace (the child's parent one): its maps are
  // written from there, mapping exactly the ids the sandbox maps.
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
  // Over the parent's store, where the child's view has it (uid 0: the
  // sandbox's root, who owns a store).
  std::string opts = absl::StrCat("mode=0755,size=", disk, ",uid=0,gid=0");
  if (mount("tmpfs", vfs::Store::kGuestPath, "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) < 0) {
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

absl::StatusOr<UniqueFd> PrepareChildNamespaces(pid_t child, const std::string& hostname,
                                                uint64_t disk_bytes) {
  UniqueFd user = OpenNs(child, "user"), mnt = OpenNs(child, "mnt"), uts = OpenNs(child, "uts"),
           net = OpenNs(child, "net");
  if (!user || !mnt || !uts || !net) {
    return absl::InternalError(
        absl::StrCat("cannot open the child's namespaces: ", std::strerror(errno)));
  }
  UniqueFd parent(ioctl(user.get(), NS_GET_PARENT));
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
    Helper(theirs.get(), child, hostname, disk_bytes, parent.get(), user.get(), mnt.get(),
           uts.get(), net.get());
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

bool HasRefusedSharedMapping(pid_t pid, const std::vector<dev_t>& lower_devs, std::string* what) {
  // maps, not smaps: smaps walks every page of every mapping to count them
  // (11-29 ms for a kernel holding a 100 MB DataFrame, on the fork's path).
  // What a shared mapping must not be is writable, or able to be made so
  // (VM_MAYWRITE): for a file mapping that is whether its file was opened for
  // writing (mm/mmap.c clears VM_MAYWRITE of a MAP_SHARED mapping of a file
  // without FMODE_WRITE), and map_files/RANGE's own mode says that (S_IWUSR
  // from the mapping's f_mode, fs/proc/base.c; lstat, not followed). Shared
  // anonymous, SysV and memfd memory is shmem opened for writing. The file
  // behind a mapping: map_files/RANGE followed (root's to read), its device
  // the file's own.
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
    struct stat link, st;
    bool may_write =
        perms[1] == 'w' || lstat(file.c_str(), &link) != 0 || (link.st_mode & S_IWUSR) != 0;
    bool lower = stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                 std::find(lower_devs.begin(), lower_devs.end(), st.st_dev) != lower_devs.end();
    if (may_write || !lower) {
      *what = absl::StrCat(line, may_write ? " (writable)" : " (not a lower-layer file)");
      return true;
    }
  }
  return false;
}

}  // namespace sentry::adopt
