// connect, bind, sendto with an address: the address is read once by the
// sentry and the operation done on a copy of the guest's socket, which lives
// in the sandbox's network namespace (loopback only; abstract unix names are
// scoped to it too).
//
// A pathname AF_UNIX address names a VFS path, never a host one. bind makes
// a socket node whose inode lives in the store (Store::BindSocket keeps the
// guest's own path as the name the kernel reports); connect and sendto
// resolve the path in the VFS, check it is a socket the caller may write, and
// reach its inode through the store.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sentry/net/egress.h"
#include "syscalls/common.h"
#include "syscalls/handlers.h"
#include "syscalls/netlink_route.h"
#include "syscalls/socket_common.h"

namespace sentry::sys {
namespace {

// A connect in the sandbox waits only on the guest itself (a unix listener's
// full backlog, a TCP handshake with a full accept queue): it is tried at once
// without blocking and only then finished on a thread of its own. The loop
// answers every trapped call under the kernel lock, which the supervisor
// needs too: a wait there would hold up the whole sandbox, its timeout
// included.
SysResult<uint64_t> ConnectNoWait(SyscallContext& ctx, UniqueFd sock, const SockAddr& target) {
  int fl = fcntl(sock.get(), F_GETFL);
  if (fl & O_NONBLOCK) {
    if (connect(sock.get(), target.sa(), target.len) < 0) return Errno{errno};
    return 0;
  }
  fcntl(sock.get(), F_SETFL, fl | O_NONBLOCK);
  int rc = connect(sock.get(), target.sa(), target.len);
  int err = errno;
  fcntl(sock.get(), F_SETFL, fl);
  if (rc == 0) return 0;
  if (err != EAGAIN && err != EINPROGRESS) return Errno{err};
  // A loopback handshake is usually over by now: then the blocking connect
  // again returns at once (connected, or the peer's refusal), here.
  pollfd ready{sock.get(), POLLOUT, 0};
  if (err == EINPROGRESS && poll(&ready, 1, 0) == 1) {
    if (connect(sock.get(), target.sa(), target.len) < 0) return Errno{errno};
    return 0;
  }
  // The rest waits on a fiber: the handshake in progress (TCP), or room in
  // the listener's backlog (unix).
  auto held = std::make_shared<UniqueFd>(std::move(sock));
  ctx.later = [held, late = ForLater(target), err](LateAnswer& answer) {
    SysResult<uint64_t> r = FinishConnect(held->get(), late.addr, err, answer);
    if (answer.Wanted()) answer.Answer(r);
  };
  return 0;
}

SysResult<uint64_t> BindUnixPath(SyscallContext& ctx, int sock, const SockAddr& a,
                                 const std::string& path) {
  vfs::ResolveOpts opts;
  opts.follow_final = false;  // bind(2) makes the name; an existing symlink is EADDRINUSE
  SYS_ASSIGN_OR_RETURN(vfs::Resolved at, WalkAt(ctx, AT_FDCWD, path, opts));
  auto bind_in_store = [&]() -> SysResult<std::string> {
    return ctx.vfs().store().BindSocket(sock, a.un(), a.len);
  };
  SYS_TRY(ctx.vfs().CreateSocket(at, ApplyUmask(ctx, 0777), ctx.creds(), bind_in_store));
  return 0;
}

// Addresses that stay in the sandbox: its own loopback (and the unspecified
// address, which connect takes as loopback).
bool SandboxLocal(const net::IpAddr& a) {
  static const net::IpAddr kV6Loopback = *net::IpAddr::Parse("::1");
  static const net::IpAddr kV6Any = *net::IpAddr::Parse("::");
  if (a.family == AF_INET)
    return a.bytes[0] == 127 || (a.bytes[0] | a.bytes[1] | a.bytes[2] | a.bytes[3]) == 0;
  return a == kV6Loopback || a == kV6Any;
}

// Whether the guest's fd has FD_CLOEXEC: its fdinfo's flags (octal) hold O_CLOEXEC.
bool GuestFdCloexec(Kernel& k, pid_t tid, int fd) {
  UniqueFd f = k.proc_opener().Open(tid, "fdinfo/" + std::to_string(fd));
  char buf[512];
  ssize_t n = f ? read(f.get(), buf, sizeof(buf) - 1) : -1;
  if (n <= 0) return false;
  buf[n] = 0;
  const char* flags = strstr(buf, "flags:");
  return flags && (strtoul(flags + 6, nullptr, 8) & O_CLOEXEC) != 0;
}

// A connect to a --secret host's address: to the credentials proxy on the
// sandbox's loopback, which learns from the client's port which host it is.
SysResult<uint64_t> ConnectToProxy(SyscallContext& ctx, UniqueFd owned, const net::SecretRule& rule,
                                   uint16_t port) {
  int sock = owned.get();
  net::HttpProxy* proxy = ctx.kernel.egress->proxy();
  if (port != 80 || !proxy) {
    ctx.hint = rule.host +
               " takes plain http:// (port 80) in this sandbox: its proxy adds the credentials "
               "and makes the TLS connection";
    return Errno{ECONNREFUSED};
  }
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (getsockname(sock, reinterpret_cast<sockaddr*>(&local), &len) < 0) return Errno{errno};
  if (local.sin_family != AF_INET) return Errno{EAFNOSUPPORT};
  if (local.sin_port == 0) {
    local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(sock, reinterpret_cast<sockaddr*>(&local), sizeof(local)) < 0) return Errno{errno};
    len = sizeof(local);
    getsockname(sock, reinterpret_cast<sockaddr*>(&local), &len);
  }
  proxy->Expect(ntohs(local.sin_port), &rule);
  SockAddr to;
  auto& in = reinterpret_cast<sockaddr_in&>(to.addr);
  in.sin_family = AF_INET;
  in.sin_port = htons(proxy->port());
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.len = sizeof(sockaddr_in);
  return ConnectNoWait(ctx, std::move(owned), to);
}

// A connect to an address outside the sandbox, with --allow-net: refused
// with the policy's reason, or made by the sentry on a socket of its own
// that then takes the guest socket's place (see net/egress.h).
SysResult<uint64_t> ConnectOut(SyscallContext& ctx, int sock, const SockAddr& a,
                               const net::IpAddr& ip, uint16_t port) {
  net::Verdict v = ctx.kernel.egress->policy().MayConnect(ip, port);
  if (!v.allowed) {
    ctx.hint = v.why;
    return Errno{ENETUNREACH};
  }
  net::SocketShape shape = net::SocketShape::Of(sock);
  if (shape.type != SOCK_STREAM) {
    ctx.hint = "only TCP connections leave the sandbox; UDP stays on its loopback";
    return Errno{ENETUNREACH};
  }
  int guest_fd = ctx.args.Int(0);
  bool cloexec = GuestFdCloexec(ctx.kernel, ctx.task.tid, guest_fd);
  ctx.later = [egress = ctx.kernel.egress, shape, a, guest_fd, cloexec](LateAnswer& answer) {
    constexpr int kConnectTimeoutMs = 20000;
    SysResult<UniqueFd> fd = egress->Connect(shape, a.sa(), a.len, kConnectTimeoutMs);
    if (!fd.ok()) return answer.Answer(Errno{fd.error()});
    if (SysStatus st = answer.InstallAt(fd->get(), guest_fd, cloexec); !st.ok()) {
      return answer.Answer(Errno{st.error()});
    }
    answer.Answer(0);
  };
  return 0;
}

SysResult<uint64_t> SocketAddrOp(SyscallContext& ctx, bool is_connect) {
  SYS_ASSIGN_OR_RETURN(SockAddr a, ReadSockAddr(ctx, ctx.args.Ptr(1), ctx.args.Uint(2)));
  SYS_ASSIGN_OR_RETURN(FdRef ref, GuestSocket(ctx, ctx.args.Int(0)));
  SYS_TRY(RefuseHostAbstractName(ctx, a));
  int sock = ref.host.get();
  if (SocketDomain(sock) == AF_NETLINK) SYS_TRY(CheckNetlinkAddrOp(sock, a, is_connect));
  if (is_connect && SocketDomain(sock) == AF_UNIX) RecordUnixConnect(ctx, sock, ref.host_st.st_ino);
  std::optional<std::string> path = a.UnixPath();
  if (path && SocketDomain(sock) == AF_UNIX) {
    if (!is_connect) return BindUnixPath(ctx, sock, a, *path);
    SYS_ASSIGN_OR_RETURN(SockAddr target, StoreAddrOf(ctx, *path));
    return ConnectNoWait(ctx, std::move(ref.host), target);
  }
  if (is_connect && ctx.kernel.egress && ctx.kernel.egress->policy().egress_enabled() &&
      (a.addr.ss_family == AF_INET || a.addr.ss_family == AF_INET6)) {
    uint16_t port = 0;
    std::optional<net::IpAddr> ip = net::IpAddr::FromSockaddr(a.sa(), a.len, &port);
    // The sandbox's own loopback stays inside, unless the operator let this
    // very address out (a host service, with --unsafe-allow-private-address).
    if (ip) {
      if (const net::SecretRule* rule = ctx.kernel.egress->policy().SecretAt(*ip)) {
        return ConnectToProxy(ctx, std::move(ref.host), *rule, port);
      }
    }
    if (ip && (!SandboxLocal(*ip) || ctx.kernel.egress->policy().MayConnect(*ip, port).allowed)) {
      return ConnectOut(ctx, sock, a, *ip, port);
    }
  }
  if (path) {
    // A pathname address on another family's socket: the kernel's own error
    // (EINVAL, EAFNOSUPPORT), without letting it resolve the path.
    a.len = offsetof(sockaddr_un, sun_path);
  }
  if (is_connect) return ConnectNoWait(ctx, std::move(ref.host), a);
  if (bind(sock, a.sa(), a.len) < 0) return Errno{errno};
  return 0;
}

}  // namespace

SysResult<uint64_t> Connect(SyscallContext& ctx) { return SocketAddrOp(ctx, true); }
SysResult<uint64_t> Bind(SyscallContext& ctx) { return SocketAddrOp(ctx, false); }

// sendto(fd, buf, len, flags, dest_addr, addrlen) with a non-NULL dest_addr
// (without one the call is native). The data is read once and sent from the
// sentry's copy of the socket.
SysResult<uint64_t> Sendto(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(SockAddr a, ReadSockAddr(ctx, ctx.args.Ptr(4), ctx.args.Uint(5)));
  SYS_ASSIGN_OR_RETURN(FdRef ref, GuestSocket(ctx, ctx.args.Int(0)));
  int sock = ref.host.get();
  int flags = ctx.args.Int(3);
  size_t len = ctx.args.Ulong(2);
  int type = SocketType(sock);
  if (len > kMaxSendBytes) {
    if (type != SOCK_STREAM) return Errno{EMSGSIZE};
    len = kMaxSendBytes;
  }
  auto data = std::make_shared<std::vector<char>>(len);
  if (len > 0) SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(1), data->data(), len));
  if (SocketDomain(sock) == AF_NETLINK) {
    SYS_TRY(CheckNetlinkRouteSend(ctx, sock, data->data(), data->size(), a));
  }
  SYS_ASSIGN_OR_RETURN(SockAddr dest, SendTarget(ctx, SocketDomain(sock), type, a));
  auto send_to = [data, flags](const SockAddr& to) -> SendFn {
    return [data, flags, to](int fd, int extra) -> SysResult<uint64_t> {
      ssize_t n =
          sendto(fd, data->data(), data->size(), flags | extra | MSG_NOSIGNAL, to.sa(), to.len);
      if (n < 0) return Errno{errno};
      return static_cast<uint64_t>(n);
    };
  };
  return SendFromSentry(ctx, ref.host, flags, send_to(dest), [send_to, dest] {
    LateTarget late = ForLater(dest);
    SendFn send = send_to(late.addr);
    return [send, dir = late.dir](int fd, int extra) { return send(fd, extra); };
  });
}

}  // namespace sentry::sys
