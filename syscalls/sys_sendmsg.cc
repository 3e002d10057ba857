// sendmsg and sendmmsg, trapped always. The address a message goes to lives in
// guest memory (msghdr.msg_name), where the seccomp filter cannot look, and the
// kernel would resolve a pathname unix address there in the guest's mount view,
// which holds host directories: a host socket under /usr could receive the
// guest's datagrams, whatever the network namespace. So the sentry reads each
// msghdr once (the data, the address, the control messages) and sends from its
// own copy of the guest's socket, as it does for sendto with an address; the
// kernel never reads the guest's msghdr.
//
// What the kernel would take from the sender (its pid and ids with
// SCM_CREDENTIALS) is the guest's: SCM_RIGHTS passes the guest's own fds, and
// credentials the guest names are checked against its own and translated to
// the host ids the kernel expects from the sentry. Partial: a receiver with
// SO_PASSCRED that is not sent explicit credentials sees the sentry's.
#include <limits.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "syscalls/common.h"
#include "syscalls/handlers.h"
#include "syscalls/netlink_route.h"
#include "syscalls/socket_common.h"

namespace sentry::sys {
namespace {

// The control data one message may carry: more than Linux lets a socket
// allocate for it by default (net.core.optmem_max, 20 KiB to 128 KiB), so a
// real program never meets this bound; ENOBUFS past it, as Linux says.
constexpr size_t kMaxControlBytes = 128 << 10;
// The most fds one SCM_RIGHTS message passes (SCM_MAX_FD in Linux).
constexpr size_t kMaxPassedFds = 253;
// What one sendmmsg carries in all: the messages past it are left for the
// guest's next call (sendmmsg may send fewer than it was given).
constexpr size_t kMaxBatchBytes = 1 << 20;

// One message, read once from the guest: what the sentry sends.
struct OutMessage {
  std::vector<char> data;
  std::vector<char> control;  // SCM_RIGHTS rewritten to the sentry's fds
  std::vector<UniqueFd> fds;  // the objects SCM_RIGHTS passes, held until sent
  std::optional<SockAddr> to;
};

// The host ids the kernel expects of the sentry for the guest's own ids.
SysResult<ucred> HostCreds(SyscallContext& ctx, const ucred& guest) {
  const KernelConfig& k = ctx.kernel.config();
  const vfs::Creds& c = ctx.creds();
  if (guest.pid != ctx.task.process->ns_pid || guest.uid != c.uid || guest.gid != c.gid) {
    return Errno{EPERM};  // the guest holds no capability to name others' ids
  }
  ucred host{ctx.task.process->tgid, k.user_host_uid, k.user_host_gid};
  if (k.namespaces && c.uid == 0) host.uid = k.host_id_base;
  if (k.namespaces && c.gid == 0) host.gid = k.host_id_base;
  return host;
}

// Checks the guest's control messages as Linux does (__scm_send: EINVAL for a
// malformed header) and puts in the sentry's own copies of what they pass.
SysStatus TakeControl(SyscallContext& ctx, std::vector<char>& control, OutMessage& out) {
  size_t at = 0;
  while (at + sizeof(cmsghdr) <= control.size()) {
    cmsghdr hdr;
    std::memcpy(&hdr, control.data() + at, sizeof(hdr));
    if (hdr.cmsg_len < sizeof(cmsghdr) || hdr.cmsg_len > control.size() - at) return Errno{EINVAL};
    char* payload = control.data() + at + CMSG_LEN(0);
    size_t payload_len = hdr.cmsg_len - CMSG_LEN(0);
    if (hdr.cmsg_level == SOL_SOCKET && hdr.cmsg_type == SCM_RIGHTS) {
      size_t n = payload_len / sizeof(int);
      if (n == 0 || n > kMaxPassedFds || out.fds.size() + n > kMaxPassedFds) return Errno{EINVAL};
      for (size_t i = 0; i < n; ++i) {
        int guest_fd;
        std::memcpy(&guest_fd, payload + i * sizeof(int), sizeof(int));
        SYS_ASSIGN_OR_RETURN(UniqueFd host, ctx.fds.Get(guest_fd));
        int host_fd = host.get();
        std::memcpy(payload + i * sizeof(int), &host_fd, sizeof(int));
        out.fds.push_back(std::move(host));
      }
    } else if (hdr.cmsg_level == SOL_SOCKET && hdr.cmsg_type == SCM_CREDENTIALS) {
      if (payload_len != sizeof(ucred)) return Errno{EINVAL};
      ucred guest;
      std::memcpy(&guest, payload, sizeof(guest));
      SYS_ASSIGN_OR_RETURN(ucred host, HostCreds(ctx, guest));
      std::memcpy(payload, &host, sizeof(host));
    }
    at += CMSG_ALIGN(hdr.cmsg_len);
  }
  return {};
}

// The sentry's copy of the guest's socket, and what a send on it depends on.
struct SendSocket {
  int fd, domain, type;
};

// Reads the message m describes, with at most `budget` bytes of data: more is
// EMSGSIZE for a datagram, a partial send for a stream (as a short write). A
// message that names an address needs a socket the sentry may aim (MayAddress).
SysResult<std::shared_ptr<OutMessage>> ReadMessage(SyscallContext& ctx, const msghdr& m,
                                                   const SendSocket& sock, size_t budget) {
  int type = sock.type;
  auto out = std::make_shared<OutMessage>();
  if (m.msg_iovlen > IOV_MAX) return Errno{EMSGSIZE};
  std::vector<iovec> iov(m.msg_iovlen);
  if (!iov.empty()) {
    SYS_TRY(ctx.mem.CopyIn(GuestAddr(reinterpret_cast<uint64_t>(m.msg_iov)), iov.data(),
                           iov.size() * sizeof(iovec)));
  }
  size_t total = 0;
  for (const iovec& v : iov) {
    if (static_cast<ssize_t>(v.iov_len) < 0 || __builtin_add_overflow(total, v.iov_len, &total)) {
      return Errno{EINVAL};
    }
  }
  if (total > budget) {
    if (type != SOCK_STREAM) return Errno{EMSGSIZE};
    total = budget;
  }
  out->data.resize(total);
  size_t filled = 0;
  for (const iovec& v : iov) {
    size_t n = std::min(v.iov_len, total - filled);
    if (n == 0) continue;
    SYS_TRY(ctx.mem.CopyIn(GuestAddr(reinterpret_cast<uint64_t>(v.iov_base)),
                           out->data.data() + filled, n));
    filled += n;
  }
  if (m.msg_name != nullptr && m.msg_namelen > 0) {
    SYS_TRY(MayAddress(ctx, sock.fd));
    SYS_ASSIGN_OR_RETURN(
        SockAddr a,
        ReadSockAddr(ctx, GuestAddr(reinterpret_cast<uint64_t>(m.msg_name)), m.msg_namelen));
    if (sock.domain == AF_NETLINK) {
      SYS_TRY(CheckNetlinkRouteSend(ctx, sock.fd, out->data.data(), out->data.size(), a));
    }
    SYS_ASSIGN_OR_RETURN(out->to, SendTarget(ctx, sock.domain, sock.type, a));
  }
  if (m.msg_controllen > 0) {
    if (m.msg_controllen > kMaxControlBytes) return Errno{ENOBUFS};
    out->control.resize(m.msg_controllen);
    SYS_TRY(ctx.mem.CopyIn(GuestAddr(reinterpret_cast<uint64_t>(m.msg_control)),
                           out->control.data(), out->control.size()));
    SYS_TRY(TakeControl(ctx, out->control, *out));
  }
  return out;
}

SysResult<uint64_t> SendOne(int sock, const OutMessage& msg, const SockAddr* to, int flags) {
  iovec v{const_cast<char*>(msg.data.data()), msg.data.size()};
  msghdr h{};
  h.msg_iov = &v;
  h.msg_iovlen = 1;
  if (to) {
    h.msg_name = const_cast<sockaddr*>(to->sa());
    h.msg_namelen = to->len;
  }
  if (!msg.control.empty()) {
    h.msg_control = const_cast<char*>(msg.control.data());
    h.msg_controllen = msg.control.size();
  }
  ssize_t n = sendmsg(sock, &h, flags | MSG_NOSIGNAL);
  if (n < 0) return Errno{errno};
  return static_cast<uint64_t>(n);
}

// A send of msg on the sentry's socket, with the guest's flags.
SendFn SendOf(std::shared_ptr<OutMessage> msg, int flags) {
  return [msg, flags](int sock, int extra) {
    return SendOne(sock, *msg, msg->to ? &*msg->to : nullptr, flags | extra);
  };
}

// The same send once the loop has moved on: a store address through a
// directory fd of its own (the store's may close with the run).
std::function<SendFn()> LaterSendOf(std::shared_ptr<OutMessage> msg, int flags) {
  return [msg, flags]() -> SendFn {
    if (!msg->to) return SendOf(msg, flags);
    auto late = std::make_shared<LateTarget>(ForLater(*msg->to));
    return [msg, flags, late](int sock, int extra) {
      return SendOne(sock, *msg, &late->addr, flags | extra);
    };
  };
}

}  // namespace

// sendmsg(fd, msg, flags).
SysResult<uint64_t> Sendmsg(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(msghdr m, ctx.mem.CopyIn<msghdr>(ctx.args.Ptr(1)));
  SYS_ASSIGN_OR_RETURN(FdRef ref, GuestSocketForSend(ctx, ctx.args.Int(0)));
  int sock = ref.host.get(), flags = ctx.args.Int(2);
  SYS_ASSIGN_OR_RETURN(
      auto msg, ReadMessage(ctx, m, {sock, SocketDomain(sock), SocketType(sock)}, kMaxSendBytes));
  return SendFromSentry(ctx, ref.host, flags, SendOf(msg, flags), LaterSendOf(msg, flags));
}

// sendmmsg(fd, msgvec, vlen, flags): the messages are sent in order until one
// fails or would block; the count sent is the answer, each one's msg_len
// written back, as Linux does. Only the first message may wait: a later one
// that would block ends the call early (sendmmsg may send fewer).
SysResult<uint64_t> Sendmmsg(SyscallContext& ctx) {
  GuestAddr vec = ctx.args.Ptr(1);
  size_t vlen = std::min<size_t>(ctx.args.Uint(2), IOV_MAX);
  int flags = ctx.args.Int(3);
  SYS_ASSIGN_OR_RETURN(FdRef ref, GuestSocketForSend(ctx, ctx.args.Int(0)));
  int sock = ref.host.get();
  SendSocket shape{sock, SocketDomain(sock), SocketType(sock)};
  size_t budget = kMaxBatchBytes, i = 0;
  for (; i < vlen && budget > 0; ++i) {
    SysResult<GuestAddr> at = vec.Offset(i * sizeof(mmsghdr));
    SysResult<mmsghdr> mm = at.ok() ? ctx.mem.CopyIn<mmsghdr>(*at) : Errno{at.error()};
    SysResult<std::shared_ptr<OutMessage>> msg =
        mm.ok() ? ReadMessage(ctx, mm->msg_hdr, shape, std::min(budget, kMaxSendBytes))
                : Errno{mm.error()};
    if (!msg.ok()) return i > 0 ? SysResult<uint64_t>(i) : Errno{msg.error()};
    budget -= std::min(budget, (*msg)->data.size());
    SYS_ASSIGN_OR_RETURN(GuestAddr len, at->Offset(offsetof(mmsghdr, msg_len)));
    // Each send answers one message; its byte count goes to msg_len.
    auto bytes = std::make_shared<uint64_t>(0);
    auto one = [bytes](SendFn send) -> SendFn {
      return [bytes, send](int s, int extra) -> SysResult<uint64_t> {
        SYS_ASSIGN_OR_RETURN(*bytes, send(s, extra));
        return 1;
      };
    };
    if (i > 0) {
      if (!one(SendOf(*msg, flags))(sock, MSG_DONTWAIT).ok()) break;
    } else {
      // A first message that must wait is sent whole on a thread of its own:
      // its msg_len is the length such a send reports, written now.
      SYS_TRY(ctx.mem.CopyOutValue(len, static_cast<unsigned>((*msg)->data.size())));
      SysResult<uint64_t> r =
          SendFromSentry(ctx, ref.host, flags, one(SendOf(*msg, flags)),
                         [one, later = LaterSendOf(*msg, flags)] { return one(later()); });
      if (!r.ok() || ctx.later) return r;
    }
    SYS_TRY(ctx.mem.CopyOutValue(len, static_cast<unsigned>(*bytes)));
  }
  return i;
}

}  // namespace sentry::sys
