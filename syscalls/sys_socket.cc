// connect, bind: the address is read once by the sentry and the operation done
// on a copy of the guest's socket, which lives in the sandbox's network namespace
// (loopback only). Pathname AF_UNIX addresses would be resolved by the host
// kernel in the sentry's mount namespace, so they are refused until the VFS
// serves them (the network issue).
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

SysResult<uint64_t> SocketAddrOp(SyscallContext& ctx, bool is_connect) {
  size_t len = ctx.args.Uint(2);
  if (len > sizeof(sockaddr_storage)) return Errno{EINVAL};
  sockaddr_storage addr{};
  if (len > 0) SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(1), &addr, len));
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, ctx.args.Int(0)));
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
