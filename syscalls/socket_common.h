// What connect, bind, sendto and sendmsg share: reading a guest socket
// address, checking the guest's socket, and turning a pathname AF_UNIX address
// into the store socket it names in the VFS (never a host path).
#ifndef SENTRY_SYSCALLS_SOCKET_COMMON_H_
#define SENTRY_SYSCALLS_SOCKET_COMMON_H_

#include <sys/socket.h>
#include <sys/un.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "syscalls/common.h"

namespace sentry::sys {

// The most one trapped send carries: more than a unix or UDP datagram can be
// by default (EMSGSIZE for a datagram past it); a stream send may be partial.
inline constexpr size_t kMaxSendBytes = 256 << 10;

struct SockAddr {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string store_name;  // set when the address is a store socket's (StoreAddrOf)
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&addr); }
  const sockaddr_un& un() const { return reinterpret_cast<const sockaddr_un&>(addr); }
  // The path of a pathname AF_UNIX address (not abstract, not autobind).
  std::optional<std::string> UnixPath() const;
};

// A guest socket address of len bytes (EINVAL past sockaddr_storage, as Linux).
SysResult<SockAddr> ReadSockAddr(SyscallContext& ctx, GuestAddr at, uint64_t len);

int SocketDomain(int sock);
int SocketType(int sock);

// Records the caller as the task connecting sock (inode sock_ino), a unix
// socket the sentry is about to connect for it: what the accepting side's
// SO_PEERCRED and SO_PEERPIDFD name (sys_peercred.cc). Stream and seqpacket
// only; a datagram's peer carries no credentials.
void RecordUnixConnect(SyscallContext& ctx, int sock, ino_t sock_ino);

// The guest's socket, checked to be one and to be the sandbox's.
SysResult<FdRef> GuestSocket(SyscallContext& ctx, int fd);
// The guest's socket, checked only to be one: for a send without an address,
// which goes where the socket is already connected, as a native write() does
// (a socket the caller handed in as stdio, or an egress connection the sentry
// made from the host side, lives outside the sandbox's network namespace).
SysResult<FdRef> GuestSocketForSend(SyscallContext& ctx, int fd);
// EACCES unless the sentry may aim sock at an address: a socket of the
// sandbox's own network namespace (and unix only, without one).
SysStatus MayAddress(SyscallContext& ctx, int sock);

// EACCES for an abstract unix name where the sandbox has no network
// namespace of its own (abstract names would be the host's).
SysStatus RefuseHostAbstractName(SyscallContext& ctx, const SockAddr& a);

// Where the sentry reaches the socket node a guest path names: its inode in
// the store (ENOENT, ECONNREFUSED, EACCES as connect(2) says).
SysResult<SockAddr> StoreAddrOf(SyscallContext& ctx, const std::string& path);

// The address a send on a socket of this domain and type really goes to:
// a pathname unix address becomes its store socket (datagrams) or an address
// the kernel refuses or ignores without resolving a path (stream, seqpacket,
// other families). Other addresses are returned as they are: the socket lives
// in the sandbox's network namespace, where only loopback is reachable.
SysResult<SockAddr> SendTarget(SyscallContext& ctx, int domain, int type, const SockAddr& a);

// A call finished later holds a store address through a directory fd of its
// own: the store's fd goes with the run.
struct LateTarget {
  std::shared_ptr<UniqueFd> dir;
  SockAddr addr;
};
LateTarget ForLater(const SockAddr& a);

// Finishes, on a fiber, a connect on a blocking socket that could not finish
// at once (first_err): a TCP handshake in progress (EINPROGRESS) is waited for
// until the socket is writable; a unix listener's full backlog (EAGAIN) is
// tried again as its queue drains, the kernel giving no event for that room.
// EINTR once the guest no longer waits (answer.Wanted()).
SysResult<uint64_t> FinishConnect(int sock, const SockAddr& a, int first_err, LateAnswer& answer);

// One send from the sentry's copy of the guest's socket: `send` is called
// with flags to add (MSG_DONTWAIT for the first try) and returns bytes sent
// or an errno. The sentry never takes a SIGPIPE meant for the guest (sends
// carry MSG_NOSIGNAL; EPIPE raises the signal in the guest thread unless its
// flags had MSG_NOSIGNAL). A send that would block, on a blocking socket
// without MSG_DONTWAIT, is finished on a fiber (ctx.later) that tries again
// as room comes, with `for_later` called first to rebase what the send
// holds; only then is sock moved from.
using SendFn = std::function<SysResult<uint64_t>(int sock, int extra_flags)>;
SysResult<uint64_t> SendFromSentry(SyscallContext& ctx, UniqueFd& sock, int guest_flags,
                                   SendFn send, std::function<SendFn()> for_later);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_SOCKET_COMMON_H_
