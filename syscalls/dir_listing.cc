#include "syscalls/dir_listing.h"

#include <dirent.h>

#include <cstring>

namespace sentry::sys {

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

std::optional<std::vector<char>> WholeListing(vfs::Vfs& v, const vfs::NodeRef& dir, size_t max,
                                              DirNames* names) {
  if (dir->names) return std::nullopt;
  std::vector<char> out;
  if (dir->removed) return out;
  vfs::NodeRef up = dir->parent.lock();
  const vfs::Node& dotdot = up ? *up : *dir;
  // As the trapped getdents64 from position 0: a listing's start reads a
  // write-through directory again.
  size_t i = 0;
  bool fits = AppendDirent(out, max, i++, ".", dir->attr().ino, DT_DIR) &&
              AppendDirent(out, max, i++, "..", dotdot.attr().ino, DT_DIR);
  if (!fits) return std::nullopt;
  v.VisitListing(dir, {}, /*relist=*/true, [&](const vfs::Vfs::DirEntry& e) {
    fits = AppendDirent(out, max, i++, e.name, e.ino, e.type);
    if (fits && names) names->emplace_back(e.name, e.type);
    return fits;
  });
  if (!fits) return std::nullopt;
  return out;
}

}  // namespace sentry::sys
