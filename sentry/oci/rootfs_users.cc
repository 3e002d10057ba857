#include "sentry/oci/rootfs_users.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/unique_fd.h"

namespace sentry::oci {
namespace {

constexpr size_t kMaxIdFile = 1 << 20;

// rootfs/rel, opened beneath the rootfs; "" if missing, not regular or too large.
std::string ReadInRootfs(const std::string& rootfs, const char* rel) {
  UniqueFd root(open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return "";
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  UniqueFd fd(static_cast<int>(syscall(SYS_openat2, root.get(), rel, &how, sizeof(how))));
  struct stat st;
  if (!fd || fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) > kMaxIdFile) {
    return "";
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd.get(), data.data() + got, data.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

// The entry of a colon-separated file whose first field is name: its
// third (the id) and, for passwd, fourth (the gid) fields.
bool FindEntry(const std::string& file, const std::string& name, uint32_t* id, uint32_t* gid) {
  for (absl::string_view line : absl::StrSplit(file, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ':');
    if (f.size() < 3 || f[0] != name) continue;
    if (!absl::SimpleAtoi(f[2], id) || *id == 0xffffffffu) return false;
    if (gid && (f.size() < 4 || !absl::SimpleAtoi(f[3], gid) || *gid == 0xffffffffu)) return false;
    return true;
  }
  return false;
}

bool Numeric(const std::string& s, uint32_t* v) {
  return absl::SimpleAtoi(s, v) && *v != 0xffffffffu;
}

}  // namespace

absl::StatusOr<UserIds> ResolveUser(const std::string& rootfs, const std::string& spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  if (parts.size() > 2 || parts[0].empty() || (parts.size() == 2 && parts[1].empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--user ", spec, ": give USER or USER:GROUP (names or numbers)"));
  }
  UserIds out;
  uint32_t uid = 0, gid = 0;
  if (!Numeric(parts[0], &uid)) {
    if (!FindEntry(ReadInRootfs(rootfs, "etc/passwd"), parts[0], &uid, &gid)) {
      return absl::NotFoundError(
          absl::StrCat("--user ", spec, ": no user ", parts[0], " in the container's /etc/passwd"));
    }
    out.gid = gid;
  }
  out.uid = uid;
  if (parts.size() == 2) {
    if (!Numeric(parts[1], &gid) &&
        !FindEntry(ReadInRootfs(rootfs, "etc/group"), parts[1], &gid, nullptr)) {
      return absl::NotFoundError(
          absl::StrCat("--user ", spec, ": no group ", parts[1], " in the container's /etc/group"));
    }
    out.gid = gid;
  }
  return out;
}

}  // namespace sentry::oci
