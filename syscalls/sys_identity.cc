// The guest's ids and host name, answered by the sentry when the sandbox has
// no user or uts namespace of its own (the seccomp-only table): the guest
// processes then run as a host uid unique to the run, which the guest must
// not see, and the host's real name must not show.
//
// The answers are those an unprivileged process gets inside a namespaced
// sandbox: its ids are the sandbox's (1000, or 0 with --root), it holds no
// capability, so it may "change" an id only to the value it already has.
#include <sys/utsname.h>

#include <cerrno>
#include <cstring>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

constexpr uint32_t kUnchanged = static_cast<uint32_t>(-1);

// Whether an unprivileged process whose ids are all `id` may set each of
// `wanted` (kUnchanged leaves an id as it is).
SysResult<uint64_t> SetIds(uint32_t id, std::initializer_list<uint32_t> wanted) {
  for (uint32_t w : wanted) {
    if (w != kUnchanged && w != id) return Errno{EPERM};
  }
  return 0;
}

SysResult<uint64_t> CopyOutIds(SyscallContext& ctx, uint32_t id) {
  for (int i = 0; i < 3; ++i) SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(i), id));
  return 0;
}

}  // namespace

SysResult<uint64_t> Getuid(SyscallContext& ctx) { return ctx.creds().uid; }
SysResult<uint64_t> Getgid(SyscallContext& ctx) { return ctx.creds().gid; }
SysResult<uint64_t> Getresuid(SyscallContext& ctx) { return CopyOutIds(ctx, ctx.creds().uid); }
SysResult<uint64_t> Getresgid(SyscallContext& ctx) { return CopyOutIds(ctx, ctx.creds().gid); }

// The sandbox's processes belong to no supplementary group.
SysResult<uint64_t> Getgroups(SyscallContext& ctx) {
  if (ctx.args.Int(0) < 0) return Errno{EINVAL};
  return 0;
}

SysResult<uint64_t> Setuid(SyscallContext& ctx) {
  if (ctx.args.Uint(0) == kUnchanged) return Errno{EINVAL};
  return SetIds(ctx.creds().uid, {ctx.args.Uint(0)});
}
SysResult<uint64_t> Setgid(SyscallContext& ctx) {
  if (ctx.args.Uint(0) == kUnchanged) return Errno{EINVAL};
  return SetIds(ctx.creds().gid, {ctx.args.Uint(0)});
}
SysResult<uint64_t> Setreuid(SyscallContext& ctx) {
  return SetIds(ctx.creds().uid, {ctx.args.Uint(0), ctx.args.Uint(1)});
}
SysResult<uint64_t> Setregid(SyscallContext& ctx) {
  return SetIds(ctx.creds().gid, {ctx.args.Uint(0), ctx.args.Uint(1)});
}
SysResult<uint64_t> Setresuid(SyscallContext& ctx) {
  return SetIds(ctx.creds().uid, {ctx.args.Uint(0), ctx.args.Uint(1), ctx.args.Uint(2)});
}
SysResult<uint64_t> Setresgid(SyscallContext& ctx) {
  return SetIds(ctx.creds().gid, {ctx.args.Uint(0), ctx.args.Uint(1), ctx.args.Uint(2)});
}
// setfsuid and setfsgid return the former id, whether or not they changed it.
SysResult<uint64_t> Setfsuid(SyscallContext& ctx) { return ctx.creds().uid; }
SysResult<uint64_t> Setfsgid(SyscallContext& ctx) { return ctx.creds().gid; }
// Needs CAP_SETGID, which no guest process has.
SysResult<uint64_t> Setgroups(SyscallContext&) { return Errno{EPERM}; }

// The host's system name, release and machine; the sandbox's host name.
SysResult<uint64_t> Uname(SyscallContext& ctx) {
  struct utsname u;
  if (uname(&u) < 0) return Errno{errno};
  std::memset(u.nodename, 0, sizeof(u.nodename));
  const std::string& name = ctx.kernel.config().hostname;
  std::memcpy(u.nodename, name.data(), std::min(name.size(), sizeof(u.nodename) - 1));
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(0), u));
  return 0;
}

}  // namespace sentry::sys
