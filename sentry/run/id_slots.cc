#include "sentry/run/id_slots.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "sentry/base/status_macros.h"

namespace sentry {
namespace {

// The lock directory, made if missing; one that another user owns (or that
// others may write to) could let them hold or fake our slots: refused.
absl::Status CheckLockDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("make the id-slot directory ", dir));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) < 0) return ErrnoStatus(absl::StrCat("stat ", dir));
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the id-slot directory ", dir,
                     " is not a directory of this user's alone (want one owned by uid ", geteuid(),
                     ", not writable by others)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IdSlot> IdSlot::Take(const std::string& lock_dir, uid_t first, uint32_t count) {
  RETURN_IF_ERROR(CheckLockDir(lock_dir));
  for (uint32_t k = 0; k < count; ++k) {
    std::string path = absl::StrCat(lock_dir, "/", k, ".lock");
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoStatus(absl::StrCat("open ", path));
    UniqueFd lock(fd);
    // An flock belongs to the open file description: a second open of the
    // same file, in this process too, does not share it.
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
      if (errno == EWOULDBLOCK || errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("lock ", path));
    }
    IdSlot slot;
    slot.lock_ = std::move(lock);
    slot.base_ = first + k * kIdsPerSlot;
    slot.index_ = k;
    return slot;
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("all ", count, " sandbox id slots are held (", lock_dir,
                   "): that many sandboxes run on this host already"));
}

}  // namespace sentry
