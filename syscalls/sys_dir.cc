// getdents64, mkdir, mkdirat, rmdir.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "syscalls/common.h"
#include "syscalls/dir_listing.h"
#include "syscalls/fast_meta_publish.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

unsigned char DirentType(const vfs::Node& node) {
  switch (node.attr().mode & S_IFMT) {
    case S_IFDIR:
      return DT_DIR;
    case S_IFREG:
      return DT_REG;
    case S_IFLNK:
      return DT_LNK;
    case S_IFIFO:
      return DT_FIFO;
    case S_IFCHR:
      return DT_CHR;
    case S_IFSOCK:
      return DT_SOCK;
    default:
      return DT_UNKNOWN;
  }
}

bool IsNumber(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Generated directories (/proc, /proc/PID/fd) list names first, then numbers
// in numeric order, as Linux's procfs does.
bool GeneratedOrder(std::string_view a, std::string_view b) {
  bool na = IsNumber(a), nb = IsNumber(b);
  if (na != nb) return nb;
  if (na && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

// The bytes of the records of out that lie wholly within its first landed bytes.
size_t WholeRecords(const std::vector<char>& out, size_t landed) {
  size_t at = 0;
  while (at + sizeof(linux_dirent64_header) <= out.size()) {
    linux_dirent64_header h;
    std::memcpy(&h, out.data() + at, sizeof(h));
    if (h.d_reclen == 0 || at + h.d_reclen > landed) break;
    at += h.d_reclen;
  }
  return at;
}

// Where the last record of out (non-empty, whole records) starts.
size_t LastRecordAt(const std::vector<char>& out) {
  size_t at = 0;
  for (;;) {
    linux_dirent64_header h;
    std::memcpy(&h, out.data() + at, sizeof(h));
    if (h.d_reclen == 0 || at + h.d_reclen >= out.size()) return at;
    at += h.d_reclen;
  }
}

}  // namespace

// The listing is ".", "..", then the entries in name order; the position is the
// token's own f_pos (an index into that list), so lseek and rewinddir, which run
// natively on the token, move it as they would on a real directory. A call that
// starts where the previous one ended resumes after the last name returned
// (found by a search in the directory's sorted maps), so a call costs
// O(entries returned), not O(directory), and entries removed meanwhile (rm -r,
// closing fds while listing /proc/self/fd) do not make it skip others, as
// tmpfs's cursors do. A position the guest set itself (seekdir to an older
// telldir) is an index counted from the start: that walk is O(position), once.
// The call that returns the last record gives it d_off kDirEnd and leaves the
// fd there, so a reader (the guest library's streams) knows the end without
// one more trapped call that returns 0.
SysResult<uint64_t> Getdents64(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(FdRef ref, GetFd(ctx, ctx.args.Int(0)));
  if (!ref.object) return Errno{ENOTDIR};
  if (!ref.object->dir_token) return Errno{ref.node()->IsDir() ? EBADF : ENOTDIR};  // O_PATH
  size_t count = ctx.args.Uint(2);
  const vfs::NodeRef& dir = ref.node();
  off_t pos = lseek(ref.fd(), 0, SEEK_CUR);
  if (pos < 0) pos = 0;
  if (pos >= kDirEnd) return 0;  // past the last record (its d_off, or beyond)
  std::vector<char> out;
  out.reserve(std::min<size_t>(count, 1 << 16));
  std::string last;    // the last name emitted
  size_t last_at = 0;  // and where its record starts in out
  // What this call returned, for the fast-metadata region's fill.
  bool fill = ctx.kernel.fast_meta() != nullptr;
  DirNames names;
  // Appends one record; false when the buffer is full.
  auto emit = [&](size_t index, std::string_view name, uint64_t ino, unsigned char type) {
    size_t at = out.size();
    if (!AppendDirent(out, count, index, name, ino, type)) return false;
    last = name;
    last_at = at;
    if (fill) names.emplace_back(name, type);
    return true;
  };
  size_t i = static_cast<size_t>(pos);
  bool full = false;
  if (!dir->removed) {
    vfs::NodeRef up = dir->parent.lock();
    const vfs::Node& dotdot = up ? *up : *dir;
    if (i == 0 && !(full = !emit(0, ".", dir->attr().ino, DT_DIR))) ++i;
    if (!full && i == 1 && !(full = !emit(1, "..", dotdot.attr().ino, DT_DIR))) ++i;
    // Entries 2.. are the children in name order; dynamic dirs (/proc) are
    // generated in their own order.
    const OpenObject& token = *ref.object;
    bool resume = i >= 2 && token.cursor_pos == pos && !token.cursor_name.empty();
    // From the start (i == 2), or after the cursor's name, or `skip`
    // entries into the list (a position set by seekdir).
    std::string_view after = resume ? std::string_view(token.cursor_name) : std::string_view();
    size_t skip = (!resume && i > 2) ? i - 2 : 0;
    // Visits one entry of the list: false once the buffer is full.
    auto visit = [&](std::string_view name, uint64_t ino, unsigned char type) {
      if (skip > 0) {
        --skip;
        return true;
      }
      if (!emit(i, name, ino, type)) {
        full = true;
        return false;  // i stays at the entry that did not fit
      }
      ++i;
      return true;
    };
    if (!full && dir->names) {
      // Generated (a few hundred names at most: pids, fds); only the entries
      // returned are made into nodes.
      std::vector<std::string> names = dir->names();
      std::sort(names.begin(), names.end(), GeneratedOrder);
      auto it = resume ? std::upper_bound(names.begin(), names.end(), after, GeneratedOrder)
                       : names.begin();
      for (; it != names.end(); ++it) {
        if (skip == 0) {
          vfs::NodeRef child = ctx.vfs().Child(dir, *it);
          if (!child) continue;  // gone since names() was read
          if (!visit(*it, child->attr().ino, DirentType(*child))) break;
        } else {
          --skip;
        }
      }
    } else if (!full) {
      // A write-through directory is read from the host again at a
      // listing's start only (as a snapshot): not on every call.
      ctx.vfs().VisitListing(
          dir, after, /*relist=*/i <= 2 && !resume,
          [&](const vfs::Vfs::DirEntry& e) { return visit(e.name, e.ino, e.type); });
    }
  }
  if (out.empty() && full) return Errno{EINVAL};  // not even one entry fits
  // The listing's end came in this call: its last record says so, and the
  // fd stands after it, as on ext4 (dir_listing.h kDirEnd).
  off_t next = static_cast<off_t>(i);
  if (!full && !out.empty()) {
    SetDirentOff(out, last_at, kDirEnd);
    next = kDirEnd;
  }
  SYS_ASSIGN_OR_RETURN(size_t landed, ctx.mem.CopyOutSome(ctx.args.Ptr(1), out.data(), out.size()));
  if (landed < out.size()) {
    // The buffer ran into a page the guest cannot write: as Linux, return
    // the records that landed whole and stand after the last of them (EFAULT
    // when not even the first did), so the next call lists the rest.
    size_t whole = WholeRecords(out, landed);
    if (whole == 0) return Errno{EFAULT};
    out.resize(whole);
    last_at = LastRecordAt(out);
    linux_dirent64_header h;
    std::memcpy(&h, out.data() + last_at, sizeof(h));
    next = static_cast<off_t>(h.d_off);  // index + 1 (never kDirEnd: a later record was cut)
    const char* name = out.data() + last_at + sizeof(h);
    last.assign(name, strnlen(name, h.d_reclen - sizeof(h)));
    i = static_cast<size_t>(next);
  }
  if (next != pos) lseek(ref.fd(), next, SEEK_SET);
  if (!out.empty()) {
    ref.object->cursor_name = i > 2 ? last : std::string();
    ref.object->cursor_pos = next;
  }
  if (fill && !names.empty()) {
    // The lock that names the token is the sentry process's: closing a
    // copy of the token drops it, so the copy goes first (fast_meta_publish.h).
    int held = ref.held;
    if (held < 0) {
      if (std::optional<FdHolds::Held> h = ctx.kernel.holds().OfObject(ref.host_st)) {
        ref.host.Reset();
        held = ref.held = h->fd;
      }
    }
    PublishDirToken(ctx, *ref.object, held, &names, /*list=*/pos == 0);
  }
  return out.size();
}

namespace {

SysResult<uint64_t> DoMkdir(SyscallContext& ctx, int dirfd, GuestAddr path_addr, mode_t mode) {
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, path_addr));
  vfs::ResolveOpts opts;
  opts.follow_final = false;
  SYS_ASSIGN_OR_RETURN(vfs::Resolved r, WalkAt(ctx, dirfd, path, opts));
  SYS_TRY(ctx.vfs().Create(r, vfs::NodeKind::kDir, ApplyUmask(ctx, mode), ctx.creds()));
  return 0;
}

}  // namespace

SysResult<uint64_t> Mkdir(SyscallContext& ctx) {
  return DoMkdir(ctx, AT_FDCWD, ctx.args.Ptr(0), ctx.args.Uint(1));
}

SysResult<uint64_t> Mkdirat(SyscallContext& ctx) {
  return DoMkdir(ctx, ctx.args.Int(0), ctx.args.Ptr(1), ctx.args.Uint(2));
}

SysResult<uint64_t> Rmdir(SyscallContext& ctx) {
  SYS_ASSIGN_OR_RETURN(std::string path, ReadPath(ctx, ctx.args.Ptr(0)));
  vfs::ResolveOpts opts;
  opts.follow_final = false;
  SYS_ASSIGN_OR_RETURN(vfs::Resolved r, WalkAt(ctx, AT_FDCWD, path, opts));
  SYS_TRY(ctx.vfs().Rmdir(r, ctx.creds()));
  return 0;
}

}  // namespace sentry::sys
