// The xattr family: the path or fd resolves as usual (ENOENT, ENOTDIR,
// EBADF...), then the VFS answers user.* attributes from the node (see
// Vfs::SetXattr for Linux's rules). Name, value and list sizes are bounded
// before anything is read.
#include <fcntl.h>
#include <sys/xattr.h>

#include <algorithm>
#include <cerrno>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

constexpr size_t kXattrNameMax = 255;
constexpr size_t kXattrSizeMax = 65536;
constexpr size_t kXattrListMax = 65536;

enum class Target { kPath, kLink, kFd };

// The node the call names; a pipe or socket (no node) is nullptr.
SysResult<vfs::NodeRef> XattrNode(SyscallContext& ctx, Target target) {
  if (target == Target::kFd) {
    SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, ctx.args.Int(0)));
    if (!ref.object) return vfs::NodeRef();
    return ref.node();
  }
  return NodeAt(ctx, AT_FDCWD, ctx.args.Ptr(0), target == Target::kPath, false);
}

// setxattr(2)'s name rule: 1..255 bytes, ERANGE otherwise.
SysResult<std::string> XattrName(SyscallContext& ctx, GuestAddr addr) {
  auto name = ctx.mem.CopyInString(addr, kXattrNameMax);
  if (!name.ok()) return Errno{name.error() == ENAMETOOLONG ? ERANGE : name.error()};
  if (name->empty()) return Errno{ERANGE};
  return name;
}

// What a pipe or socket answers: user.* belongs to files and directories only.
Errno NoNode(const std::string& name, bool write) {
  if (name.rfind("user.", 0) == 0) return Errno{write ? EPERM : ENODATA};
  return Errno{EOPNOTSUPP};
}

SysResult<uint64_t> Set(SyscallContext& ctx, Target target) {
  SYS_ASSIGN_OR_RETURN(std::string name, XattrName(ctx, ctx.args.Ptr(1)));
  size_t size = ctx.args.Ulong(3);
  int flags = ctx.args.Int(4);
  if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return Errno{EINVAL};
  if (size > kXattrSizeMax) return Errno{E2BIG};
  std::string value(size, '\0');
  if (size > 0) SYS_TRY(ctx.mem.CopyIn(ctx.args.Ptr(2), value.data(), size));
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, XattrNode(ctx, target));
  if (!node) return NoNode(name, true);
  SYS_TRY(ctx.vfs().SetXattr(*node, name, std::move(value), flags, ctx.creds()));
  return 0;
}

SysResult<uint64_t> Get(SyscallContext& ctx, Target target) {
  SYS_ASSIGN_OR_RETURN(std::string name, XattrName(ctx, ctx.args.Ptr(1)));
  size_t size = std::min<size_t>(ctx.args.Ulong(3), kXattrSizeMax);
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, XattrNode(ctx, target));
  if (!node) return NoNode(name, false);
  SYS_ASSIGN_OR_RETURN(std::string value, ctx.vfs().GetXattr(*node, name, ctx.creds()));
  if (size == 0) return value.size();
  if (size < value.size()) return Errno{ERANGE};
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(2), value.data(), value.size()));
  return value.size();
}

SysResult<uint64_t> List(SyscallContext& ctx, Target target) {
  size_t size = std::min<size_t>(ctx.args.Ulong(2), kXattrListMax);
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, XattrNode(ctx, target));
  std::string list = node ? ctx.vfs().ListXattr(*node) : std::string();
  if (size == 0) return list.size();
  if (size < list.size()) return Errno{ERANGE};
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(1), list.data(), list.size()));
  return list.size();
}

SysResult<uint64_t> Remove(SyscallContext& ctx, Target target) {
  SYS_ASSIGN_OR_RETURN(std::string name, XattrName(ctx, ctx.args.Ptr(1)));
  SYS_ASSIGN_OR_RETURN(vfs::NodeRef node, XattrNode(ctx, target));
  if (!node) return NoNode(name, true);
  SYS_TRY(ctx.vfs().RemoveXattr(*node, name, ctx.creds()));
  return 0;
}

}  // namespace

SysResult<uint64_t> Setxattr(SyscallContext& ctx) { return Set(ctx, Target::kPath); }
SysResult<uint64_t> Lsetxattr(SyscallContext& ctx) { return Set(ctx, Target::kLink); }
SysResult<uint64_t> Fsetxattr(SyscallContext& ctx) { return Set(ctx, Target::kFd); }
SysResult<uint64_t> Getxattr(SyscallContext& ctx) { return Get(ctx, Target::kPath); }
SysResult<uint64_t> Lgetxattr(SyscallContext& ctx) { return Get(ctx, Target::kLink); }
SysResult<uint64_t> Fgetxattr(SyscallContext& ctx) { return Get(ctx, Target::kFd); }
SysResult<uint64_t> Listxattr(SyscallContext& ctx) { return List(ctx, Target::kPath); }
SysResult<uint64_t> Llistxattr(SyscallContext& ctx) { return List(ctx, Target::kLink); }
SysResult<uint64_t> Flistxattr(SyscallContext& ctx) { return List(ctx, Target::kFd); }
SysResult<uint64_t> Removexattr(SyscallContext& ctx) { return Remove(ctx, Target::kPath); }
SysResult<uint64_t> Lremovexattr(SyscallContext& ctx) { return Remove(ctx, Target::kLink); }
SysResult<uint64_t> Fremovexattr(SyscallContext& ctx) { return Remove(ctx, Target::kFd); }

}  // namespace sentry::sys
