#include "sentry/run/userns_root.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/small_file.h"
#include "sentry/run/spawn.h"

namespace sentry {
namespace {

struct MapLine {
  uint64_t inside, outside, count;
};

std::vector<MapLine> ParseMap(const std::string& text) {
  std::vector<MapLine> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    MapLine m;
    if (f.size() == 3 && absl::SimpleAtoi(f[0], &m.inside) && absl::SimpleAtoi(f[1], &m.outside) &&
        absl::SimpleAtoi(f[2], &m.count)) {
      lines.push_back(m);
    }
  }
  return lines;
}

// Whether every id of [first, end) is mapped (the kernel's lines never overlap).
bool Covers(const std::vector<MapLine>& map, uint64_t first, uint64_t end) {
  uint64_t covered = 0;
  for (const MapLine& m : map) {
    uint64_t lo = std::max(first, m.inside), hi = std::min(end, m.inside + m.count);
    if (lo < hi) covered += hi - lo;
  }
  return covered == end - first;
}

// The parent namespace's id for id 0 here (false if 0 is not mapped).
bool OuterOfZero(const std::vector<MapLine>& map, uint64_t* outer) {
  for (const MapLine& m : map) {
    if (m.inside == 0 && m.count > 0) {
      *outer = m.outside;
      return true;
    }
  }
  return false;
}

std::string ReadText(const char* path) { return ReadFileText(path); }

std::string WriteText(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::StrCat("open ", path, ": ", std::strerror(errno));
  ssize_t n = write(fd, text.data(), text.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::StrCat("write ", path, ": ", std::strerror(err));
  }
  return "";
}

}  // namespace

NamespacedRoot ClassifyRoot(uid_t euid, const std::string& uid_map, const std::string& gid_map) {
  NamespacedRoot r;
  if (euid != 0) return r;
  std::vector<MapLine> uids = ParseMap(uid_map), gids = ParseMap(gid_map);
  // Root's sandboxes map ids from kHostIdBase to the last slot's (spawn.h).
  constexpr uint64_t kFirst = kHostIdBase;
  constexpr uint64_t kEnd = static_cast<uint64_t>(kFirstSlotId) + kIdSlots * kIdsPerSlot;
  if (Covers(uids, kFirst, kEnd) && Covers(gids, kFirst, kEnd)) return r;
  uint64_t ou = 0, og = 0;
  // Root of the host with a narrowed map, or a map without 0: left as it is.
  if (!OuterOfZero(uids, &ou) || !OuterOfZero(gids, &og) || ou == 0 || ou > UINT32_MAX - 1 ||
      og > UINT32_MAX - 1) {
    return r;
  }
  r.applies = true;
  r.outer_uid = static_cast<uid_t>(ou);
  r.outer_gid = static_cast<gid_t>(og);
  return r;
}

uid_t CallerUid() {
  NamespacedRoot r =
      ClassifyRoot(geteuid(), ReadText("/proc/self/uid_map"), ReadText("/proc/self/gid_map"));
  return r.applies ? r.outer_uid : geteuid();
}

std::string LeaveNamespacedRoot() {
  if (geteuid() != 0) return "";  // ClassifyRoot's first test, without reading the maps
  NamespacedRoot r =
      ClassifyRoot(geteuid(), ReadText("/proc/self/uid_map"), ReadText("/proc/self/gid_map"));
  if (!r.applies) return "";
  // The namespace's root groups (its 0 and what its maker added) go first:
  // after setgroups is denied below they could not.
  setgroups(0, nullptr);
  if (unshare(CLONE_NEWUSER) < 0) {
    return absl::StrCat("uid 0 of a user namespace without host ids, and unshare(CLONE_NEWUSER): ",
                        std::strerror(errno));
  }
  // One line each, of the ids this process has: what an unprivileged
  // process may write for its own namespace.
  std::string err = WriteText("/proc/self/setgroups", "deny");
  if (err.empty()) err = WriteText("/proc/self/uid_map", absl::StrCat(r.outer_uid, " 0 1\n"));
  if (err.empty()) err = WriteText("/proc/self/gid_map", absl::StrCat(r.outer_gid, " 0 1\n"));
  // The capabilities the new namespace gave: none is kept, as for a caller
  // from the host (its uid is not 0, so no exec gives them back).
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) < 0 && err.empty()) {
    err = absl::StrCat("capset: ", std::strerror(errno));
  }
  return err;
}

}  // namespace sentry
