#include "syscalls/dir_listing.h"

#include <dirent.h>

#include <cstddef>
#include <cstring>

#include "fastmeta/region.h"

namespace sentry::sys {

static_assert(kDirEnd == SENTRY_FM_DIR_END);

bool AppendDirent(std::vector<char>& out, size_t limit, size_t index, std::string_view name,
                  uint64_t ino, unsigned char type) {
  size_t reclen = (sizeof(linux_dirent64_header) + name.size() + 1 + 7) & ~size_t{7};
  if (out.size() + reclen > limit) return false;
  size_t at = out.size();
  out.resize(at + reclen, 0);
  linux_dirent64_header h{ino, static_cast<int64_t>(index + 1), static_cast<uint16_t>(reclen),
                          type};
  std::memcpy(out.data() + at, &h, sizeof(h));
  std::memcpy(out.data() + at + sizeof(h), name.data(), name.size());
  return true;
}

void SetDirentOff(std::vector<char>& out, size_t at, off_t d_off) {
  int64_t v = d_off;
  std::memcpy(out.data() + at + offsetof(linux_dirent64_header, d_off), &v, sizeof(v));
}

std::optional<std::vector<char>> WholeListing(vfs::Vfs& v, const vfs::NodeRef& dir, size_t max,
                                              DirNames* names) {
  if (dir->names) return std::nullopt;
  std::vector<char> out;
  if (dir->removed) return out;
  vfs::NodeRef up = dir->parent.lock();
  const vfs::Node& dotdot = up ? *up : *dir;
  size_t i = 0;
  size_t last_at = 0;
  auto append = [&](std::string_view name, uint64_t ino, unsigned char type) {
    size_t at = out.size();
    if (!AppendDirent(out, max, i++, name, ino, type)) return false;
    last_at = at;
    return true;
  };
  // As the trapped getdents64 from position 0: a listing's start reads a
  // write-through directory again.
  bool fits = append(".", dir->attr().ino, DT_DIR) && append("..", dotdot.attr().ino, DT_DIR);
  if (!fits) return std::nullopt;
  v.VisitListing(dir, {}, /*relist=*/true, [&](const vfs::Vfs::DirEntry& e) {
    fits = append(e.name, e.ino, e.type);
    if (fits && names) names->emplace_back(e.name, e.type);
    return fits;
  });
  if (!fits) return std::nullopt;
  SetDirentOff(out, last_at, kDirEnd);
  return out;
}

}  // namespace sentry::sys
