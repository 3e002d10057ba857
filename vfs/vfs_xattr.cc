// Extended attributes: user.* held on the node, in memory, for every layer.
#include <sys/xattr.h>

#include <cerrno>

#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

constexpr size_t kXattrNameMax = 255;
constexpr size_t kXattrSizeMax = 65536;

bool HasPrefix(const std::string& name, const char* prefix) { return name.rfind(prefix, 0) == 0; }

uint64_t XattrCost(const std::string& name, const std::string& value) {
  return 128 + name.size() + value.size();  // a map slot and two strings
}

}  // namespace

SysStatus Vfs::XattrPermission(const Node& node, const std::string& name, int may,
                               const Creds& creds) const {
  if (name.empty() || name.size() > kXattrNameMax) return Errno{ERANGE};
  bool write = may & W_OK;
  if (HasPrefix(name, "security.") || HasPrefix(name, "system.")) return Errno{EOPNOTSUPP};
  if (HasPrefix(name, "trusted.")) return Errno{write ? EPERM : ENODATA};
  if (HasPrefix(name, "user.")) {
    mode_t type = node.attr().mode & S_IFMT;
    if (type != S_IFREG && type != S_IFDIR) return Errno{write ? EPERM : ENODATA};
    if (type == S_IFDIR && (node.attr().mode & S_ISVTX) && write && !creds.IsRoot() &&
        creds.uid != node.attr().uid) {
      return Errno{EPERM};
    }
  }
  SYS_TRY(Permission(node, may, creds));
  if (!HasPrefix(name, "user.")) return Errno{EOPNOTSUPP};
  // Generated and device nodes hold none (as procfs and devtmpfs refuse them).
  if (node.kind() == NodeKind::kSynthetic || node.kind() == NodeKind::kDevice || node.names) {
    return Errno{write ? EPERM : ENODATA};
  }
  return {};
}

SysStatus Vfs::SetXattr(Node& node, const std::string& name, std::string value, int flags,
                        const Creds& creds) {
  LowerChanged(node);
  if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return Errno{EINVAL};
  if (value.size() > kXattrSizeMax) return Errno{E2BIG};
  SYS_TRY(Writable(node));
  SYS_TRY(XattrPermission(node, name, W_OK, creds));
  auto it = node.xattrs.find(name);
  if (it != node.xattrs.end() && (flags & XATTR_CREATE)) return Errno{EEXIST};
  if (it == node.xattrs.end() && (flags & XATTR_REPLACE)) return Errno{ENODATA};
  // No more than the node still has charged (RefundNode zeroes it).
  uint64_t old_cost =
      it == node.xattrs.end() ? 0 : std::min(XattrCost(name, it->second), node.xattr_bytes);
  uint64_t new_cost = XattrCost(name, value);
  if (new_cost > old_cost) SYS_TRY(Charge(new_cost - old_cost));
  Refund(old_cost > new_cost ? old_cost - new_cost : 0);
  node.xattr_bytes = node.xattr_bytes - old_cost + new_cost;
  node.xattrs[name] = std::move(value);
  node.attr().ctime = Now();
  return {};
}

SysResult<std::string> Vfs::GetXattr(const Node& node, const std::string& name,
                                     const Creds& creds) {
  SYS_TRY(XattrPermission(node, name, R_OK, creds));
  auto it = node.xattrs.find(name);
  if (it == node.xattrs.end()) return Errno{ENODATA};
  return it->second;
}

std::string Vfs::ListXattr(const Node& node) const {
  std::string out;
  for (const auto& [name, value] : node.xattrs) {
    out += name;
    out.push_back('\0');
  }
  return out;
}

SysStatus Vfs::RemoveXattr(Node& node, const std::string& name, const Creds& creds) {
  LowerChanged(node);
  SYS_TRY(Writable(node));
  SYS_TRY(XattrPermission(node, name, W_OK, creds));
  auto it = node.xattrs.find(name);
  if (it == node.xattrs.end()) return Errno{ENODATA};
  uint64_t cost = std::min(XattrCost(name, it->second), node.xattr_bytes);
  Refund(cost);
  node.xattr_bytes -= cost;
  node.xattrs.erase(it);
  node.attr().ctime = Now();
  return {};
}

}  // namespace sentry::vfs
