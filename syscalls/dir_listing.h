// A directory's listing as getdents64 returns it (struct linux_dirent64
// records): built by the trapped getdents64 (sys_dir.cc) a piece at a time,
// and whole for the fast-metadata region (fast_meta_publish.h), which must
// publish the very bytes the trap would return.
#ifndef SENTRY_SYSCALLS_DIR_LISTING_H_
#define SENTRY_SYSCALLS_DIR_LISTING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vfs/vfs.h"

namespace sentry::sys {

// struct linux_dirent64 without its name: 19 bytes, no padding.
struct __attribute__((packed)) linux_dirent64_header {
  uint64_t d_ino;
  int64_t d_off;
  uint16_t d_reclen;
  unsigned char d_type;
};
static_assert(sizeof(linux_dirent64_header) == 19);

// Appends the record of the entry at position index (its d_off is index + 1,
// the position after it, which lseek and seekdir take back); false, and
// nothing appended, when out would pass limit bytes.
bool AppendDirent(std::vector<char>& out, size_t limit, size_t index, std::string_view name,
                  uint64_t ino, unsigned char type);

// The last record's d_off once a listing reached its end, and the position
// after it, where getdents64 returns 0 (fastmeta/region.h
// SENTRY_FM_DIR_END): a reader knows the end without one more call. No
// entry's index comes near it (a listing is bounded by the sandbox's caches).
inline constexpr off_t kDirEnd = 0x7fffffff;

// Sets the d_off of the record at byte at of out (one AppendDirent made).
void SetDirentOff(std::vector<char>& out, size_t at, off_t d_off);

// A listing's names and their d_type, "." and ".." left out.
using DirNames = std::vector<std::pair<std::string, unsigned char>>;

// Every record getdents64 returns for dir read from position 0 (".", "..",
// then Vfs::VisitListing's entries, the last one's d_off kDirEnd), at most
// max bytes; nullopt for a
// generated directory (Node::names) or one past max. names, if set, gets the
// entries.
std::optional<std::vector<char>> WholeListing(vfs::Vfs& v, const vfs::NodeRef& dir, size_t max,
                                              DirNames* names);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_DIR_LISTING_H_
