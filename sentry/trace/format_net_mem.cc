// Sockets and memory calls, as strace prints them.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <string>

#include "absl/strings/str_format.h"
#include "sentry/trace/format_internal.h"

namespace sentry::trace::internal {
namespace {

std::string Protocol(int family, int proto) {
  if (family != AF_INET && family != AF_INET6) return absl::StrCat(proto);
  static constexpr Named kProtos[] = {
      {IPPROTO_IP, "IPPROTO_IP"},         {IPPROTO_ICMP, "IPPROTO_ICMP"},
      {IPPROTO_TCP, "IPPROTO_TCP"},       {IPPROTO_UDP, "IPPROTO_UDP"},
      {IPPROTO_ICMPV6, "IPPROTO_ICMPV6"}, {IPPROTO_RAW, "IPPROTO_RAW"},
      {IPPROTO_SCTP, "IPPROTO_SCTP"}};
  return Enum(proto, kProtos);
}

std::string SockLevel(int level) {
  static constexpr Named kLevels[] = {{SOL_SOCKET, "SOL_SOCKET"},
                                      {IPPROTO_IP, "SOL_IP"},
                                      {IPPROTO_TCP, "SOL_TCP"},
                                      {IPPROTO_UDP, "SOL_UDP"},
                                      {IPPROTO_IPV6, "SOL_IPV6"}};
  return Enum(level, kLevels);
}

std::string SockOpt(int level, int name) {
  static constexpr Named kSocket[] = {{SO_DEBUG, "SO_DEBUG"},
                                      {SO_REUSEADDR, "SO_REUSEADDR"},
                                      {SO_TYPE, "SO_TYPE"},
                                      {SO_ERROR, "SO_ERROR"},
                                      {SO_DONTROUTE, "SO_DONTROUTE"},
                                      {SO_BROADCAST, "SO_BROADCAST"},
                                      {SO_SNDBUF, "SO_SNDBUF"},
                                      {SO_RCVBUF, "SO_RCVBUF"},
                                      {SO_KEEPALIVE, "SO_KEEPALIVE"},
                                      {SO_OOBINLINE, "SO_OOBINLINE"},
                                      {SO_LINGER, "SO_LINGER"},
                                      {SO_REUSEPORT, "SO_REUSEPORT"},
                                      {SO_PASSCRED, "SO_PASSCRED"},
                                      {SO_PEERCRED, "SO_PEERCRED"},
                                      {SO_RCVLOWAT, "SO_RCVLOWAT"},
                                      {SO_SNDLOWAT, "SO_SNDLOWAT"},
                                      {SO_RCVTIMEO, "SO_RCVTIMEO"},
                                      {SO_SNDTIMEO, "SO_SNDTIMEO"},
                                      {SO_ACCEPTCONN, "SO_ACCEPTCONN"},
                                      {SO_PROTOCOL, "SO_PROTOCOL"},
                                      {SO_DOMAIN, "SO_DOMAIN"}};
  static constexpr Named kTcp[] = {{1, "TCP_NODELAY"},  {2, "TCP_MAXSEG"},    {3, "TCP_CORK"},
                                   {4, "TCP_KEEPIDLE"}, {5, "TCP_KEEPINTVL"}, {6, "TCP_KEEPCNT"}};
  if (level == SOL_SOCKET) return Enum(name, kSocket);
  if (level == IPPROTO_TCP) return Enum(name, kTcp);
  return absl::StrCat(name);
}

std::string IntAt(GuestMemory* m, uint64_t addr) {
  int v;
  if (!m || addr == 0 || !m->CopyIn(GuestAddr(addr), &v, sizeof(v)).ok()) return Addr(addr);
  return absl::StrCat("[", v, "]");
}

std::string OffsetHex(uint64_t v) { return v ? absl::StrFormat("%#x", v) : "0"; }

std::string SockAddrOut(ArgList& a, int addr_arg) {
  int len;
  GuestMemory* m = a.mem();
  if (!m || !m->CopyIn(GuestAddr(a.u(addr_arg + 1)), &len, sizeof(len)).ok())
    return Addr(a.u(addr_arg));
  return SockAddr(m, a.u(addr_arg), static_cast<uint64_t>(len));
}

}  // namespace

bool FormatNetMemCall(ArgList& a, int nr) {
  GuestMemory* m = a.mem();
  switch (nr) {
    case SYS_socket:
      a.Add(Family(a.u(0))).Add(SockType(a.u(1))).Add(Protocol(a.d(0), a.d(2)));
      return true;
    case SYS_socketpair:
      a.Add(Family(a.u(0))).Add(SockType(a.u(1))).Add(Protocol(a.d(0), a.d(2)));
      a.Out(3, [&] { return IntPair(m, a.u(3)); });
      return true;
    case SYS_connect:
    case SYS_bind:
      a.Fd(0).Add(SockAddr(m, a.u(1), a.u(2))).Unsigned(2);
      return true;
    case SYS_listen:
      a.Fd(0).Int(1);
      return true;
    case SYS_shutdown: {
      static constexpr Named kHow[] = {{0, "SHUT_RD"}, {1, "SHUT_WR"}, {2, "SHUT_RDWR"}};
      a.Fd(0).Add(Enum(a.d(1), kHow));
      return true;
    }
    case SYS_accept:
    case SYS_accept4:
    case SYS_getsockname:
    case SYS_getpeername:
      a.Fd(0).Out(1, [&] { return SockAddrOut(a, 1); });
      a.Add(a.u(2) ? IntAt(m, a.u(2)) : "NULL");
      if (nr == SYS_accept4) a.Add(a.u(3) ? SockType(a.u(3)).substr(2) : "0");  // no base type
      return true;
    case SYS_sendto:
      a.Fd(0).Add(Buffer(m, a.u(1), a.u(2))).Unsigned(2).Add(MsgFlags(a.u(3)));
      a.Add(a.u(4) ? SockAddr(m, a.u(4), a.u(5)) : "NULL").Unsigned(5);
      return true;
    case SYS_recvfrom:
      a.Fd(0).Out(1, [&] { return Buffer(m, a.u(1), static_cast<uint64_t>(a.ret())); });
      a.Unsigned(2).Add(MsgFlags(a.u(3))).Out(4, [&] { return SockAddrOut(a, 4); });
      a.Add(a.u(5) ? IntAt(m, a.u(5)) : "NULL");
      return true;
    case SYS_sendmsg:
      a.Fd(0).Add(Msghdr(m, a.u(1), -1)).Add(MsgFlags(a.u(2)));
      return true;
    case SYS_recvmsg:
      a.Fd(0).Out(1, [&] { return Msghdr(m, a.u(1), a.ret()); }).Add(MsgFlags(a.u(2)));
      return true;
    case SYS_sendmmsg:
      a.Fd(0).Add(Mmsghdrs(m, a.u(1), a.ok() ? static_cast<uint64_t>(a.ret()) : a.u(2)));
      a.Unsigned(2).Add(MsgFlags(a.u(3)));
      return true;
    case SYS_setsockopt:
      a.Fd(0).Add(SockLevel(a.d(1))).Add(SockOpt(a.d(1), a.d(2)));
      a.Add(a.u(4) == sizeof(int) ? IntAt(m, a.u(3)) : Addr(a.u(3))).Unsigned(4);
      return true;
    case SYS_getsockopt:
      a.Fd(0).Add(SockLevel(a.d(1))).Add(SockOpt(a.d(1), a.d(2)));
      a.Out(3, [&] { return IntAt(m, a.u(3)); }).Add(IntAt(m, a.u(4)));
      return true;
    case SYS_mmap:
      a.Ptr(0)
          .Unsigned(1)
          .Add(ProtFlags(a.u(2)))
          .Add(MapFlags(a.u(3)))
          .Fd(4)
          .Add(OffsetHex(a.u(5)));
      return true;
    case SYS_mprotect:
      a.Ptr(0).Unsigned(1).Add(ProtFlags(a.u(2)));
      return true;
    case SYS_munmap:
      a.Ptr(0).Unsigned(1);
      return true;
    case SYS_brk:
      a.Ptr(0);
      return true;
    case SYS_madvise:
      a.Ptr(0).Unsigned(1).Add(MadviseAdvice(a.d(2)));
      return true;
    case SYS_mremap: {
      static constexpr Named kFlags[] = {
          {1, "MREMAP_MAYMOVE"}, {2, "MREMAP_FIXED"}, {4, "MREMAP_DONTUNMAP"}};
      a.Ptr(0).Unsigned(1).Unsigned(2).Add(FlagSet(a.u(3), kFlags));
      if (a.u(3) & 2) a.Ptr(4);
      return true;
    }
    case SYS_getrandom: {
      static constexpr Named kFlags[] = {
          {1, "GRND_NONBLOCK"}, {2, "GRND_RANDOM"}, {4, "GRND_INSECURE"}};
      a.Out(0, [&] { return Buffer(m, a.u(0), static_cast<uint64_t>(a.ret())); });
      a.Unsigned(1).Add(FlagSet(a.u(2), kFlags));
      return true;
    }
    case SYS_memfd_create: {
      static constexpr Named kFlags[] = {{1, "MFD_CLOEXEC"},
                                         {2, "MFD_ALLOW_SEALING"},
                                         {4, "MFD_HUGETLB"},
                                         {8, "MFD_NOEXEC_SEAL"},
                                         {16, "MFD_EXEC"}};
      a.Str(0).Add(FlagSet(a.u(1), kFlags));
      return true;
    }
    case SYS_close_range: {
      static constexpr Named kFlags[] = {{2, "CLOSE_RANGE_UNSHARE"}, {4, "CLOSE_RANGE_CLOEXEC"}};
      a.Unsigned(0).Add(static_cast<uint32_t>(a.u(1)) == ~0u ? std::string("~0U")
                                                             : absl::StrCat(a.u(1)));
      a.Add(FlagSet(a.u(2), kFlags));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace sentry::trace::internal
