// connect, bind: the address is read once by the sentry and the operation done
// on a copy of the guest's socket, which lives in the sandbox's network namespace
// (loopback only). Pathname AF_UNIX addresses would be resolved by the host
// kernel in the sentry's mount namespace, so they are refused until the VFS
// serves them (the network issue).
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// Whether a socket lives in the sandbox's network namespace. A socket the
// guest did not make (one the caller handed it as stdio) may live in the
// host's, where the sentry must not connect or bind it.
bool InSandboxNetns(SyscallContext& ctx, int sock) {
  int ns = ioctl(sock, SIOCGSKNS);
  if (ns < 0) return false;
  struct stat st;
  bool same = fstat(ns, &st) == 0 && st.st_ino == ctx.kernel.config().net_ns_ino;
  close(ns);
  return same;
}

SysResult<uint64_t> SocketAddrOp(SyscallContext& ctx, bool is_connect) {
  size_t len = ctx.args.Uint(2);
  if (len > sizeof(sockaddr_storage)) return Errno{EINVAL};
  sockaddr_storage addr{};
  if (len > 0) SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(1), &addr, len));
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, ctx.args.Int(0)));
  if (!S_ISSOCK(ref.host_st.st_mode)) return Errno{ENOTSOCK};
  if (!InSandboxNetns(ctx, ref.host.get())) return Errno{EACCES};
  if (len >= sizeof(sa_family_t) && addr.ss_family == AF_UNIX &&
      len > offsetof(sockaddr_un, sun_path)) {
    const auto& un = reinterpret_cast<const sockaddr_un&>(addr);
    if (un.sun_path[0] != '\0') return Errno{is_connect ? ENOENT : EACCES};
  }
  auto* sa = reinterpret_cast<const sockaddr*>(&addr);
  int rc = is_connect ? connect(ref.host.get(), sa, static_cast<socklen_t>(len))
                      : bind(ref.host.get(), sa, static_cast<socklen_t>(len));
  if (rc < 0) return Errno{errno};
  return 0;
}

}  // namespace

SysResult<uint64_t> Connect(SyscallContext& ctx) { return SocketAddrOp(ctx, true); }
SysResult<uint64_t> Bind(SyscallContext& ctx) { return SocketAddrOp(ctx, false); }

}  // namespace sentry::sys
