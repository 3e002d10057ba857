#include "sentry/kernel/guest_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sentry/base/fs_identity.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace sentry {
namespace {

// What the sentry asks of the helper.
constexpr int32_t kOpenBeneath = 1;  // the fd: a /proc/PID directory; name beneath it
constexpr int32_t kReopenFifo = 2;   // the fd: a pipe or FIFO, opened anew (flags: access)
constexpr int32_t kOpenPts = 3;      // the fd: a devpts directory; an entry as uid/gid

struct OpenRequest {
  int32_t ask = kOpenBeneath;
  int32_t flags = 0;
  uint32_t uid = 0, gid = 0;  // kOpenPts: ids of the sandbox's namespace
  char name[GuestProcOpener::kMaxName + 1] = {};
};

struct OpenReply {
  int32_t err = 0;  // 0: the opened file comes with it
};

constexpr int32_t kAllowedFlags = O_DIRECTORY;
constexpr time_t kAnswerSeconds = 5;
constexpr int32_t kFifoFlags = O_ACCMODE | O_NONBLOCK;
constexpr int32_t kPtsFlags = O_ACCMODE | O_NONBLOCK | O_NOCTTY | O_APPEND;

bool NameIsPlain(const char* name) {
  size_t n = strnlen(name, GuestProcOpener::kMaxName + 1);
  if (n == 0 || n > GuestProcOpener::kMaxName || name[0] == '/' || name[n - 1] == '/') return false;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '/';
    if (!ok || (c == '/' && name[i + 1] == '/')) return false;
  }
  return true;  // no '.' at all: no ".." either
}

// The helper's side of one message: raw syscalls only (it is a copy of a
// multi-threaded process, made with a bare clone: no library lock is safe).
long SendFd(int sock, const void* data, size_t len, int fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  long n;
  do {
    n = syscall(SYS_sendmsg, sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

// Receives len bytes and at most one fd (*fd, -1 if none; any more closed).
long ReceiveFd(int sock, void* data, size_t len, int* fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  iovec iov{data, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  *fd = -1;
  long n;
  do {
    n = syscall(SYS_recvmsg, sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got;
      memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (*fd < 0) {
        *fd = got;
      } else {
        syscall(SYS_close, got);
      }
    }
  }
  if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) {
    if (*fd >= 0) syscall(SYS_close, *fd);
    *fd = -1;
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

// The pipe or FIFO `fifo` opened anew through the helper's own
// /proc/self/fd (a new open file description, as fs/pipe.c's fifo_open
// gives), or -1 with *err. Nothing but a FIFO: the check is made on the
// object held, so no other file can take its place.
int ReopenFifo(int fifo, int32_t flags, int32_t* err) {
  *err = EINVAL;
  struct stat st;
  if ((flags & ~kFifoFlags) != 0 || (flags & O_ACCMODE) == O_ACCMODE ||
      syscall(SYS_fstat, fifo, &st) < 0 || !S_ISFIFO(st.st_mode)) {
    return -1;
  }
  char path[32] = "/proc/self/fd/";
  char digits[12];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(fifo); n == 0 || v != 0; v /= 10)
    digits[n++] = '0' + v % 10;
  size_t at = strlen(path);
  while (n > 0) path[at++] = digits[--n];
  path[at] = 0;
  // Never blocking: a FIFO's other end may never come.
  long fd = syscall(SYS_openat, AT_FDCWD, path, flags | O_NONBLOCK | O_CLOEXEC);
  *err = fd < 0 ? errno : 0;
  return static_cast<int>(fd);
}

// An entry of the sandbox's devpts instance (ptmx, or a pty by its number)
// opened with the file-system ids uid/gid: a pty that ptmx makes is theirs
// (devpts_pty_new takes current_fsuid()), and a pty opens for them as it
// would for the guest itself. Or -1 with *err.
bool PtsName(const char* name) {
  if (strcmp(name, "ptmx") == 0) return true;
  size_t n = strnlen(name, 11);
  if (n == 0 || n > 10) return false;
  for (size_t i = 0; i < n; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

int OpenPts(int dir, const OpenRequest& r, int32_t* err) {
  *err = EINVAL;
  struct statfs fs;
  if ((r.flags & ~kPtsFlags) != 0 || (r.flags & O_ACCMODE) == O_ACCMODE ||
      r.name[GuestProcOpener::kMaxName] != 0 || !PtsName(r.name) ||
      syscall(SYS_fstatfs, dir, &fs) < 0 || fs.f_type != DEVPTS_SUPER_MAGIC) {
    return -1;
  }
  // setfsuid says the old id; it took the new one if asking again says so.
  syscall(SYS_setfsgid, r.gid);
  syscall(SYS_setfsuid, r.uid);
  long fd = -1;
  if (syscall(SYS_setfsuid, -1) == static_cast<long>(r.uid) &&
      syscall(SYS_setfsgid, -1) == static_cast<long>(r.gid)) {
    fd = syscall(SYS_openat, dir, r.name, r.flags | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    *err = fd < 0 ? errno : 0;
  }
  syscall(SYS_setfsuid, 0);
  syscall(SYS_setfsgid, 0);
  struct stat st;
  if (fd >= 0 && (syscall(SYS_fstat, fd, &st) < 0 || !S_ISCHR(st.st_mode))) {
    syscall(SYS_close, fd);
    fd = -1;
    *err = EINVAL;
  }
  return static_cast<int>(fd);
}

// The file r names beneath dir, or -1 with *err.
int OpenFor(int dir, const OpenRequest& r, int32_t* err) {
  *err = EINVAL;
  if (r.ask == kReopenFifo) return ReopenFifo(dir, r.flags, err);
  if (r.ask == kOpenPts) return OpenPts(dir, r, err);
  if (r.ask != kOpenBeneath || (r.flags & ~kAllowedFlags) != 0 ||
      r.name[GuestProcOpener::kMaxName] != 0 || !NameIsPlain(r.name)) {
    return -1;
  }
  struct statfs fs;
  if (syscall(SYS_fstatfs, dir, &fs) < 0 || fs.f_type != PROC_SUPER_MAGIC) return -1;
  open_how how{};
  how.flags = static_cast<uint64_t>(r.flags | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = syscall(SYS_openat2, dir, r.name, &how, sizeof(how));
  *err = fd < 0 ? errno : 0;
  return static_cast<int>(fd);
}

[[noreturn]] void HelperMain(int sock, int userns) {
  OpenReply hello;
  if (syscall(SYS_setns, userns, CLONE_NEWUSER) < 0) hello.err = errno;
  // Of the namespace's full set, what /proc asks of a reader: search and
  // read past the owner's modes, ptrace read access to the task; write
  // past them (a pipe opened anew for writing); and the guest's fsuid and
  // fsgid (a pty made as the guest).
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  caps[0].effective = caps[0].permitted = (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_DAC_OVERRIDE) |
                                          (1u << CAP_SYS_PTRACE) | (1u << CAP_SETUID) |
                                          (1u << CAP_SETGID);
  if (hello.err == 0 && (syscall(SYS_capset, &hdr, caps) < 0 ||
                         syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)) {
    hello.err = errno;
  }
  // Nothing of the sentry's but its socket.
  if (sock > 0) syscall(SYS_close_range, 0, sock - 1, 0);
  syscall(SYS_close_range, sock + 1, ~0U, 0);
  if (SendFd(sock, &hello, sizeof(hello), -1) != sizeof(hello) || hello.err != 0) {
    syscall(SYS_exit_group, 1);
  }
  while (true) {
    OpenRequest r;
    int dir;
    long n = ReceiveFd(sock, &r, sizeof(r), &dir);
    if (n == 0 || (n < 0 && errno != EMSGSIZE)) syscall(SYS_exit_group, 0);  // the sentry is gone
    OpenReply reply;
    int opened = -1;
    if (n != sizeof(r) || dir < 0) {
      reply.err = EINVAL;
    } else {
      opened = OpenFor(dir, r, &reply.err);
    }
    if (dir >= 0) syscall(SYS_close, dir);
    long sent = SendFd(sock, &reply, sizeof(reply), opened);
    if (opened >= 0) syscall(SYS_close, opened);
    if (sent != sizeof(reply)) syscall(SYS_exit_group, 0);
  }
}

}  // namespace

GuestProcOpener::~GuestProcOpener() {
  std::lock_guard<std::mutex> lock(mu_);
  StopHelperLocked();
}

void GuestProcOpener::set_namespace_pid(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  StopHelperLocked();
  ns_pid_ = pid;
  userns_.Reset();
  broken_ = false;
}

void GuestProcOpener::set_namespace(UniqueFd userns) {
  std::lock_guard<std::mutex> lock(mu_);
  StopHelperLocked();
  ns_pid_ = 0;
  userns_ = std::move(userns);
  broken_ = false;
}

UniqueFd GuestProcOpener::OpenAt(int dir, const std::string& name, int flags) {
  {
    SentryFsIdentity as_sentry;
    UniqueFd f(openat(dir, name.c_str(), flags | O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (f || errno != EACCES) return f;
  }
  if ((flags & ~kAllowedFlags) != 0) {
    errno = EACCES;
    return {};
  }
  return Request(kOpenBeneath, flags, name, dir);
}

UniqueFd GuestProcOpener::Open(pid_t host_tid, const std::string& name, int flags) {
  std::string path = "/proc/" + std::to_string(host_tid);
  UniqueFd dir;
  {
    SentryFsIdentity as_sentry;
    dir = UniqueFd(open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!dir) return {};
  return OpenAt(dir.get(), name, flags);
}

UniqueFd GuestProcOpener::ReopenFifo(int fifo, int flags) {
  {
    SentryFsIdentity as_sentry;
    std::string self = "/proc/self/fd/" + std::to_string(fifo);
    UniqueFd f(open(self.c_str(), (flags & kFifoFlags) | O_CLOEXEC));
    if (f || errno != EACCES) return f;
  }
  return Request(kReopenFifo, flags & kFifoFlags, "", fifo);
}

SysResult<UniqueFd> GuestProcOpener::OpenPts(int pts_dir, const std::string& name, int flags,
                                             uid_t uid, gid_t gid) {
  UniqueFd f = Request(kOpenPts, flags & kPtsFlags, name, pts_dir, uid, gid);
  if (!f) return Errno{errno};
  return f;
}

UniqueFd GuestProcOpener::Request(int32_t ask, int32_t flags, const std::string& name, int fd_sent,
                                  uid_t uid, gid_t gid) {
  OpenRequest r;
  r.ask = ask;
  r.flags = flags;
  r.uid = uid;
  r.gid = gid;
  if (name.size() > kMaxName) {
    errno = EACCES;
    return {};
  }
  memcpy(r.name, name.data(), name.size());
  std::lock_guard<std::mutex> lock(mu_);
  // A helper that died (killed from outside) is made again, once per call.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!sock_ && (broken_ || (ns_pid_ == 0 && !userns_) || !StartHelperLocked())) break;
    OpenReply reply;
    int fd = -1;
    if (SendFd(sock_.get(), &r, sizeof(r), fd_sent) == sizeof(r) &&
        ReceiveFd(sock_.get(), &reply, sizeof(reply), &fd) == sizeof(reply)) {
      if (reply.err != 0 || fd < 0) {
        if (fd >= 0) close(fd);
        errno = reply.err != 0 ? reply.err : EIO;
        return {};
      }
      return UniqueFd(fd);
    }
    if (fd >= 0) close(fd);
    StopHelperLocked();
  }
  errno = EACCES;
  return {};
}

bool GuestProcOpener::StartHelperLocked() {
  std::string ns_path = "/proc/" + std::to_string(ns_pid_) + "/ns/user";
  UniqueFd userns(userns_ ? fcntl(userns_.get(), F_DUPFD_CLOEXEC, 0)
                          : open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  int sv[2];
  if (!userns || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    broken_ = true;
    return false;
  }
  UniqueFd mine(sv[0]), theirs(sv[1]);
  int pidfd = -1;
  // A bare clone (no exit signal: no SIGCHLD, and no waitpid(-1) of the
  // sentry's reaps it), with a pidfd to reap it by.
  long pid = syscall(SYS_clone, CLONE_PIDFD, nullptr, &pidfd, nullptr, nullptr);
  if (pid == 0) HelperMain(theirs.get(), userns.get());
  if (pid < 0) {
    broken_ = true;
    return false;
  }
  ++started_;
  pidfd_ = UniqueFd(pidfd);
  sock_ = std::move(mine);
  theirs.Reset();
  // Every answer is one open: a helper that gives none in seconds is stuck
  // and is ended, not waited for (the caller holds the kernel's lock).
  timeval limit{kAnswerSeconds, 0};
  setsockopt(sock_.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  OpenReply hello;
  int none = -1;
  if (ReceiveFd(sock_.get(), &hello, sizeof(hello), &none) != sizeof(hello) || hello.err != 0) {
    if (none >= 0) close(none);
    StopHelperLocked();
    broken_ = true;
    return false;
  }
  return true;
}

void GuestProcOpener::StopHelperLocked() {
  sock_.Reset();
  if (!pidfd_) return;
  syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  siginfo_t info;
  while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                WEXITED | __WALL) < 0 &&
         errno == EINTR) {
  }
  pidfd_.Reset();
}

std::optional<std::vector<int>> GuestFdNumbers(GuestProcOpener& opener, pid_t pid, int max) {
  UniqueFd dir = opener.Open(pid, "fd", O_DIRECTORY);
  DIR* d = dir ? fdopendir(dir.get()) : nullptr;
  if (!d) return std::nullopt;
  dir.Release();  // the DIR's now
  std::vector<int> out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || e->d_name[0] == '\0' || fd < 0 || fd >= max) continue;
    out.push_back(static_cast<int>(fd));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

UniqueFd GuestFdCopy(int task_pidfd, int fd) {
  if (fd < 0) {
    errno = EBADF;
    return {};
  }
  return UniqueFd(static_cast<int>(syscall(SYS_pidfd_getfd, task_pidfd, fd, 0)));
}

}  // namespace sentry
