// File-system calls, as strace prints them.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "sentry/trace/format_internal.h"

namespace sentry::trace::internal {
namespace {

bool HasMode(uint64_t flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

std::string AccessAtFlags(uint64_t v) {
  static constexpr Named kFlags[] = {{AT_EACCESS, "AT_EACCESS"},
                                     {AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"},
                                     {AT_EMPTY_PATH, "AT_EMPTY_PATH"}};
  return FlagSet(v, kFlags);
}

std::string MknodMode(ArgList& a, int mode_arg) {
  std::string out = FileMode(a.u(mode_arg));
  uint64_t type = a.u(mode_arg) & S_IFMT;
  if (type == S_IFCHR || type == S_IFBLK) {
    uint64_t dev = a.u(mode_arg + 1);
    absl::StrAppend(&out, absl::StrFormat(", makedev(%#x, %#x)", major(dev), minor(dev)));
  }
  return out;
}

// getdents64's buffer as strace shows it without -v: its address and count.
std::string Dirents(ArgList& a, int i) {
  constexpr int64_t kMaxBytes = 1 << 16;
  int64_t len = a.ret();
  if (len <= 0 || len > kMaxBytes || !a.mem()) return Addr(a.u(i));
  std::string buf(static_cast<size_t>(len), '\0');
  if (!a.mem()->CopyIn(GuestAddr(a.u(i)), buf.data(), buf.size()).ok()) return Addr(a.u(i));
  int count = 0;
  for (size_t off = 0; off + 19 <= buf.size();) {
    uint16_t reclen;
    std::memcpy(&reclen, buf.data() + off + 16, sizeof(reclen));  // d_reclen
    if (reclen == 0) break;
    off += reclen;
    ++count;
  }
  return absl::StrFormat("%#x /* %d entr%s */", a.u(i), count, count == 1 ? "y" : "ies");
}

}  // namespace

bool FormatFileCall(ArgList& a, int nr) {
  GuestMemory* m = a.mem();
  auto stat_out = [&](int i) { return a.Out(i, [&] { return Stat(m, a.u(i)); }); };
  switch (nr) {
    case SYS_open:
      a.Path(0).Add(OpenFlags(a.u(1)));
      if (HasMode(a.u(1))) a.Mode(2);
      return true;
    case SYS_openat:
      a.Dirfd(0).Path(1).Add(OpenFlags(a.u(2)));
      if (HasMode(a.u(2))) a.Mode(3);
      return true;
    case SYS_openat2:
      a.Dirfd(0).Path(1).Add(OpenHow(m, a.u(2), a.u(3))).Unsigned(3);
      return true;
    case SYS_creat:
      a.Path(0).Mode(1);
      return true;
    case SYS_stat:
    case SYS_lstat:
      a.Path(0);
      stat_out(1);
      return true;
    case SYS_fstat:
      a.Fd(0);
      stat_out(1);
      return true;
    case SYS_newfstatat:
      a.Dirfd(0).Path(1);
      stat_out(2);
      a.Add(AtFlags(a.u(3)));
      return true;
    case SYS_statx:
      a.Dirfd(0).Path(1).Add(StatxFlags(a.u(2))).Add(StatxMask(a.u(3)));
      a.Out(4, [&] { return Statx(m, a.u(4)); });
      return true;
    case SYS_statfs:
      a.Path(0).Out(1, [&] { return Statfs(m, a.u(1)); });
      return true;
    case SYS_fstatfs:
      a.Fd(0).Out(1, [&] { return Statfs(m, a.u(1)); });
      return true;
    case SYS_access:
      a.Path(0).Add(AccessMode(a.u(1)));
      return true;
    case SYS_faccessat:
      a.Dirfd(0).Path(1).Add(AccessMode(a.u(2)));
      return true;
    case SYS_faccessat2:
      a.Dirfd(0).Path(1).Add(AccessMode(a.u(2))).Add(AccessAtFlags(a.u(3)));
      return true;
    case SYS_getdents64:
      a.Fd(0).Out(1, [&] { return Dirents(a, 1); }).Unsigned(2);
      return true;
    case SYS_getcwd:
      a.Out(0, [&] { return Path(m, a.u(0)); }).Unsigned(1);
      return true;
    case SYS_chdir:
    case SYS_rmdir:
    case SYS_unlink:
      a.Path(0);
      return true;
    case SYS_fchdir:
      a.Fd(0);
      return true;
    case SYS_mkdir:
    case SYS_chmod:
      a.Path(0).Mode(1);
      return true;
    case SYS_mkdirat:
      a.Dirfd(0).Path(1).Mode(2);
      return true;
    case SYS_fchmod:
      a.Fd(0).Mode(1);
      return true;
    case SYS_fchmodat:
      a.Dirfd(0).Path(1).Mode(2);
      return true;
    case 452:  // fchmodat2
      a.Dirfd(0).Path(1).Mode(2).Add(AtFlags(a.u(3)));
      return true;
    case SYS_unlinkat:
      a.Dirfd(0).Path(1).Add(AtFlags(a.u(2)));
      return true;
    case SYS_rename:
    case SYS_link:
    case SYS_symlink:
      a.Path(0).Path(1);
      return true;
    case SYS_renameat:
      a.Dirfd(0).Path(1).Dirfd(2).Path(3);
      return true;
    case SYS_renameat2:
      a.Dirfd(0).Path(1).Dirfd(2).Path(3).Add(RenameFlags(a.u(4)));
      return true;
    case SYS_linkat:
      a.Dirfd(0).Path(1).Dirfd(2).Path(3).Add(AtFlags(a.u(4)));
      return true;
    case SYS_symlinkat:
      a.Path(0).Dirfd(1).Path(2);
      return true;
    case SYS_readlink:
      a.Path(0).Out(1, [&] { return Buffer(m, a.u(1), static_cast<uint64_t>(a.ret())); });
      a.Unsigned(2);
      return true;
    case SYS_readlinkat:
      a.Dirfd(0).Path(1).Out(2, [&] { return Buffer(m, a.u(2), static_cast<uint64_t>(a.ret())); });
      a.Unsigned(3);
      return true;
    case SYS_chown:
    case SYS_lchown:
      a.Path(0).Int(1).Int(2);
      return true;
    case SYS_fchown:
      a.Fd(0).Int(1).Int(2);
      return true;
    case SYS_fchownat:
      a.Dirfd(0).Path(1).Int(2).Int(3).Add(AtFlags(a.u(4)));
      return true;
    case SYS_umask:
      a.Mode(0);
      return true;
    case SYS_truncate:
      a.Path(0).Long(1);
      return true;
    case SYS_ftruncate:
      a.Fd(0).Long(1);
      return true;
    case SYS_utime:
      a.Path(0).Add(a.u(1) ? Utimbuf(m, a.u(1)) : "NULL");
      return true;
    case SYS_utimes:
      a.Path(0).Add(a.u(1) ? TimevalPair(m, a.u(1)) : "NULL");
      return true;
    case SYS_futimesat:
      a.Dirfd(0).Path(1).Add(a.u(2) ? TimevalPair(m, a.u(2)) : "NULL");
      return true;
    case SYS_utimensat:
      a.Dirfd(0).Add(a.u(1) ? Path(m, a.u(1)) : "NULL");
      a.Add(a.u(2) ? TimespecPair(m, a.u(2)) : "NULL").Add(AtFlags(a.u(3)));
      return true;
    case SYS_mknod:
      a.Path(0).Add(MknodMode(a, 1));
      return true;
    case SYS_mknodat:
      a.Dirfd(0).Path(1).Add(MknodMode(a, 2));
      return true;
    case SYS_setxattr:
    case SYS_lsetxattr:
      a.Path(0).Str(1).Add(Buffer(m, a.u(2), a.u(3))).Unsigned(3).Add(XattrFlags(a.u(4)));
      return true;
    case SYS_fsetxattr:
      a.Fd(0).Str(1).Add(Buffer(m, a.u(2), a.u(3))).Unsigned(3).Add(XattrFlags(a.u(4)));
      return true;
    case SYS_getxattr:
    case SYS_lgetxattr:
    case SYS_fgetxattr:
      (nr == SYS_fgetxattr ? a.Fd(0) : a.Path(0)).Str(1);
      a.Out(2, [&] { return Buffer(m, a.u(2), static_cast<uint64_t>(a.ret())); }).Unsigned(3);
      return true;
    case SYS_listxattr:
    case SYS_llistxattr:
    case SYS_flistxattr:
      (nr == SYS_flistxattr ? a.Fd(0) : a.Path(0));
      a.Out(1, [&] { return XattrList(m, a.u(1), a.ret()); }).Unsigned(2);
      return true;
    case SYS_removexattr:
    case SYS_lremovexattr:
      a.Path(0).Str(1);
      return true;
    case SYS_fremovexattr:
      a.Fd(0).Str(1);
      return true;
    case SYS_close:
    case SYS_dup:
    case SYS_fsync:
    case SYS_fdatasync:
      a.Fd(0);
      return true;
    case SYS_dup2:
      a.Fd(0).Fd(1);
      return true;
    case SYS_dup3:
      a.Fd(0).Fd(1).Add(a.u(2) ? OpenFlags(a.u(2)).substr(9) : "0");  // "O_RDONLY|" dropped
      return true;
    case SYS_read:
      a.Fd(0).Out(1, [&] { return Buffer(m, a.u(1), static_cast<uint64_t>(a.ret())); }).Unsigned(2);
      return true;
    case SYS_write:
      a.Fd(0).Add(Buffer(m, a.u(1), a.u(2))).Unsigned(2);
      return true;
    case SYS_pread64:
      a.Fd(0).Out(1, [&] { return Buffer(m, a.u(1), static_cast<uint64_t>(a.ret())); });
      a.Unsigned(2).Long(3);
      return true;
    case SYS_pwrite64:
      a.Fd(0).Add(Buffer(m, a.u(1), a.u(2))).Unsigned(2).Long(3);
      return true;
    case SYS_readv:
      a.Fd(0).Out(1, [&] { return Iovecs(m, a.u(1), a.u(2), a.ret()); }).Int(2);
      return true;
    case SYS_writev:
      a.Fd(0).Add(Iovecs(m, a.u(1), a.u(2), -1)).Int(2);
      return true;
    case SYS_lseek:
      a.Fd(0).Long(1).Add(Whence(a.d(2)));
      return true;
    case SYS_fcntl: {
      int cmd = a.d(1);
      a.Fd(0).Add(FcntlCmd(cmd));
      switch (cmd) {
        case F_GETFD:
        case F_GETFL:
        case F_GETOWN:
        case F_GETSIG:
        case F_GETLEASE:
        case F_GETPIPE_SZ:
        case F_GET_SEALS:
          break;
        case F_SETFD:
          a.Add(a.u(2) & FD_CLOEXEC ? "FD_CLOEXEC" : absl::StrCat(a.u(2)));
          break;
        case F_SETFL:
          a.Add(OpenFlags(a.u(2)));
          break;
        case F_GETLK:
        case F_SETLK:
        case F_SETLKW:
        case F_OFD_GETLK:
        case F_OFD_SETLK:
        case F_OFD_SETLKW:
        case F_GETOWN_EX:
        case F_SETOWN_EX:
          a.Ptr(2);
          break;
        default:
          a.Int(2);
      }
      return true;
    }
    case SYS_ioctl:
      a.Fd(0).Add(IoctlCmd(a.u(1))).Ptr(2);
      return true;
    case SYS_pipe:
      a.Out(0, [&] { return IntPair(m, a.u(0)); });
      return true;
    case SYS_pipe2:
      a.Out(0, [&] { return IntPair(m, a.u(0)); });
      a.Add(a.u(1) ? OpenFlags(a.u(1)).substr(9) : "0");
      return true;
    default:
      return false;
  }
}

}  // namespace sentry::trace::internal
