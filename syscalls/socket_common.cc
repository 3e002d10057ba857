#include "syscalls/socket_common.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sentry/base/fiber_loop.h"

namespace sentry::sys {
namespace {

// Whether a socket lives in the sandbox's network namespace. A socket the
// guest did not make (one the caller handed it as stdio) may live in the
// host's, where the sentry must not connect, bind or send on it.
bool InSandboxNetns(SyscallContext& ctx, int sock) {
  int ns = ioctl(sock, SIOCGSKNS);
  if (ns < 0) return false;
  struct stat st;
  bool same = fstat(ns, &st) == 0 && st.st_ino == ctx.kernel.config().net_ns_ino;
  close(ns);
  return same;
}

// The address of a store socket, through the store directory's fd.
SysResult<SockAddr> StoreSocketAddr(int dir_fd, const std::string& store_name) {
  SockAddr a;
  auto& un = reinterpret_cast<sockaddr_un&>(a.addr);
  un.sun_family = AF_UNIX;
  int n = std::snprintf(un.sun_path, sizeof(un.sun_path), "/proc/self/fd/%d/%s", dir_fd,
                        store_name.c_str());
  if (n < 0 || static_cast<size_t>(n) >= sizeof(un.sun_path)) return Errno{ENAMETOOLONG};
  a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + 1);
  a.store_name = store_name;
  return a;
}

int SockOpt(int sock, int opt) {
  int v = -1;
  socklen_t n = sizeof(v);
  getsockopt(sock, SOL_SOCKET, opt, &v, &n);
  return v;
}

}  // namespace

std::optional<std::string> SockAddr::UnixPath() const {
  if (len <= offsetof(sockaddr_un, sun_path) || addr.ss_family != AF_UNIX) return std::nullopt;
  if (un().sun_path[0] == '\0') return std::nullopt;
  size_t max = std::min<size_t>(len - offsetof(sockaddr_un, sun_path), sizeof(un().sun_path));
  return std::string(un().sun_path, strnlen(un().sun_path, max));
}

SysResult<SockAddr> ReadSockAddr(SyscallContext& ctx, GuestAddr at, uint64_t len) {
  if (len > sizeof(sockaddr_storage)) return Errno{EINVAL};
  SockAddr a;
  a.len = static_cast<socklen_t>(len);
  if (len > 0) SYS_TRY(ctx.mem.CopyIn(at, &a.addr, len));
  return a;
}

int SocketDomain(int sock) { return SockOpt(sock, SO_DOMAIN); }
int SocketType(int sock) { return SockOpt(sock, SO_TYPE); }

SysResult<FdRef> GuestSocketForSend(SyscallContext& ctx, int fd) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, fd));
  if (!S_ISSOCK(ref.host_st.st_mode)) return Errno{ENOTSOCK};
  return ref;
}

SysStatus MayAddress(SyscallContext& ctx, int sock) {
  if (!InSandboxNetns(ctx, sock)) return Errno{EACCES};
  // Without a network namespace of its own the sandbox's "netns" is the host's:
  // only unix sockets (the only ones the filter lets the guest make) are its.
  if (!ctx.kernel.config().namespaces && SocketDomain(sock) != AF_UNIX) return Errno{EACCES};
  return {};
}

SysResult<FdRef> GuestSocket(SyscallContext& ctx, int fd) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GuestSocketForSend(ctx, fd));
  SYS_TRY(MayAddress(ctx, ref.host.get()));
  return ref;
}

SysStatus RefuseHostAbstractName(SyscallContext& ctx, const SockAddr& a) {
  bool abstract = a.addr.ss_family == AF_UNIX && a.len > offsetof(sockaddr_un, sun_path) &&
                  a.un().sun_path[0] == '\0';
  if (!abstract || ctx.kernel.config().namespaces) return {};
  ctx.hint =
      "abstract unix socket names are the host's in this sandbox (the host gives it no "
      "network namespace): use a path under /tmp";
  return Errno{EACCES};
}

// ENOENT when nothing is there, ECONNREFUSED for a name that is not a bound
// socket (a file, a lower-layer socket of the host), EACCES without write
// permission (checked first, as Linux does).
SysResult<SockAddr> StoreAddrOf(SyscallContext& ctx, const std::string& path) {
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, NodeAtPath(ctx, AT_FDCWD, path, true, false));
  SYS_TRY(ctx.vfs().Permission(*node, W_OK, ctx.creds()));
  if (node->kind() != vfs::NodeKind::kSocket || node->store_name.empty()) {
    return Errno{ECONNREFUSED};
  }
  return StoreSocketAddr(ctx.vfs().store().dir_fd(), node->store_name);
}

SysResult<SockAddr> SendTarget(SyscallContext& ctx, int domain, int type, const SockAddr& a) {
  SYS_TRY(RefuseHostAbstractName(ctx, a));
  std::optional<std::string> path = a.UnixPath();
  if (!path) return a;
  // Only a unix datagram socket goes to the address; stream and seqpacket
  // sockets refuse or ignore it, and other families fail on its family
  // (EINVAL, EAFNOSUPPORT): the kernel's own errors, from an address with
  // no path left in it for the kernel to resolve.
  if (domain == AF_UNIX && type == SOCK_DGRAM) return StoreAddrOf(ctx, *path);
  SockAddr stub = a;
  stub.len = offsetof(sockaddr_un, sun_path) + (domain == AF_UNIX ? 1 : 0);
  return stub;
}

LateTarget ForLater(const SockAddr& a) {
  LateTarget t{nullptr, a};
  if (a.store_name.empty()) return t;
  int dir_fd = 0;
  std::sscanf(a.un().sun_path, "/proc/self/fd/%d/", &dir_fd);
  t.dir = std::make_shared<UniqueFd>(fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (t.dir->get() < 0) return t;
  if (SysResult<SockAddr> rebased = StoreSocketAddr(t.dir->get(), a.store_name); rebased.ok()) {
    t.addr = *rebased;
  }
  return t;
}

namespace {

// How long a late call waits before it looks again whether the guest still
// waits for it, and the longest pause between tries where no event says
// when to try (a full unix backlog, a datagram receiver's full queue).
constexpr int kLateSliceMs = 100;
constexpr int kMaxRetryPauseMs = 20;

// Sends once room comes; a datagram socket's POLLOUT says nothing of the
// receiver's queue, so EAGAIN after it backs off and tries again.
SysResult<uint64_t> SendWhenRoom(int sock, const SendFn& send, LateAnswer& answer) {
  int pause_ms = 1;
  while (answer.Wanted()) {
    pollfd p{sock, POLLOUT, 0};
    int ready = WaitPoll(&p, 1, kLateSliceMs);
    if (ready < 0) return Errno{errno};
    if (ready == 0) continue;
    SysResult<uint64_t> r = send(sock, MSG_DONTWAIT);
    if (r.ok() || r.error() != EAGAIN) return r;
    WaitMs(pause_ms);
    pause_ms = std::min(pause_ms * 2, kMaxRetryPauseMs);
  }
  return Errno{EINTR};
}

}  // namespace

SysResult<uint64_t> FinishConnect(int sock, const SockAddr& a, int first_err, LateAnswer& answer) {
  if (first_err == EINPROGRESS) {
    while (answer.Wanted()) {
      pollfd p{sock, POLLOUT, 0};
      int ready = WaitPoll(&p, 1, kLateSliceMs);
      if (ready < 0) return Errno{errno};
      if (ready == 0) continue;
      int err = 0;
      socklen_t n = sizeof(err);
      if (getsockopt(sock, SOL_SOCKET, SO_ERROR, &err, &n) < 0) return Errno{errno};
      if (err) return Errno{err};
      return 0;
    }
    return Errno{EINTR};
  }
  int pause_ms = 1;
  while (answer.Wanted()) {
    WaitMs(pause_ms);
    pause_ms = std::min(pause_ms * 2, kMaxRetryPauseMs);
    // Non-blocking for this one try, as ConnectNoWait's first.
    int fl = fcntl(sock, F_GETFL);
    fcntl(sock, F_SETFL, fl | O_NONBLOCK);
    int rc = connect(sock, a.sa(), a.len);
    int err = errno;
    fcntl(sock, F_SETFL, fl);
    if (rc == 0) return 0;
    if (err != EAGAIN) return Errno{err};
  }
  return Errno{EINTR};
}

SysResult<uint64_t> SendFromSentry(SyscallContext& ctx, UniqueFd& sock, int guest_flags,
                                   SendFn send, std::function<SendFn()> for_later) {
  pid_t tgid = ctx.task.process->tgid, tid = ctx.task.tid;
  auto raise_sigpipe = [tgid, tid, guest_flags](SysResult<uint64_t> r) {
    if (!r.ok() && r.error() == EPIPE && !(guest_flags & MSG_NOSIGNAL)) {
      syscall(SYS_tgkill, tgid, tid, SIGPIPE);
    }
    return r;
  };
  bool may_wait = !(guest_flags & MSG_DONTWAIT) && !(fcntl(sock.get(), F_GETFL) & O_NONBLOCK);
  SysResult<uint64_t> sent = send(sock.get(), may_wait ? MSG_DONTWAIT : 0);
  if (sent.ok() || sent.error() != EAGAIN || !may_wait) return raise_sigpipe(sent);
  auto held = std::make_shared<UniqueFd>(std::move(sock));
  ctx.later = [held, raise_sigpipe, late_send = for_later()](LateAnswer& answer) {
    SysResult<uint64_t> r = SendWhenRoom(held->get(), late_send, answer);
    if (answer.Wanted()) answer.Answer(raise_sigpipe(r));
  };
  return 0;
}

}  // namespace sentry::sys
