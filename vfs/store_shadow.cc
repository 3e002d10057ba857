// The store's shadows for inotify watches (see Vfs::WatchObject): directories
// whose entries mirror a VFS directory's names, and tokens for nodes with no
// host object. Paths are relative to the store directory and built only from
// names the sentry made ("w12") and VFS entry names, which hold no '/'.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "vfs/store.h"
#include "vfs/store_owner.h"

namespace sentry::vfs {

SysResult<std::string> Store::MakeShadow(bool dir) {
  std::string name = (dir ? "w" : "t") + std::to_string(next_++);
  AsOwner as(uid_, gid_);
  int r = dir ? mkdirat(dir_fd_.get(), name.c_str(), 0755)
              : mknodat(dir_fd_.get(), name.c_str(), S_IFREG | 0644, 0);
  if (r < 0) return Errno{errno};
  return name;
}

SysStatus Store::ShadowAdd(const std::string& path, bool dir, const std::string& link_from) {
  AsOwner as(uid_, gid_);
  int r;
  if (dir) {
    r = mkdirat(dir_fd_.get(), path.c_str(), 0755);
  } else if (!link_from.empty()) {
    // The store file itself under the entry's name: opens made through it
    // (OpenShadowed) report data events to a watch on the directory.
    r = linkat(dir_fd_.get(), link_from.c_str(), dir_fd_.get(), path.c_str(), 0);
  } else {
    // mknod, not open(O_CREAT): a watch sees IN_CREATE alone, as for a
    // name the guest makes without opening it.
    r = mknodat(dir_fd_.get(), path.c_str(), S_IFREG | 0644, 0);
  }
  if (r < 0) return Errno{errno};
  return {};
}

void Store::ShadowRemove(const std::string& path, bool dir) {
  AsOwnerUid as(uid_);
  unlinkat(dir_fd_.get(), path.c_str(), dir ? AT_REMOVEDIR : 0);
}

SysStatus Store::ShadowRename(const std::string& from, const std::string& to, unsigned flags) {
  // Both ids: a rename to a new name checks that the caller's fsuid and
  // fsgid map into the store's user namespace (may_create's EOVERFLOW).
  AsOwner as(uid_, gid_);
  if (renameat2(dir_fd_.get(), from.c_str(), dir_fd_.get(), to.c_str(), flags) < 0) {
    return Errno{errno};
  }
  return {};
}

SysResult<std::string> Store::ShadowMoved(const std::string& name) {
  std::string moved = "w" + std::to_string(next_++);
  SYS_TRY(ShadowRename(name, moved, RENAME_NOREPLACE));
  return moved;
}

std::string Store::ShadowScratch() {
  if (scratch_.empty()) {
    AsOwner as(uid_, gid_);
    std::string name = "x" + std::to_string(next_++);
    if (mkdirat(dir_fd_.get(), name.c_str(), 0755) == 0) scratch_ = name;
  }
  if (scratch_.empty()) return "";
  return scratch_ + "/" + std::to_string(next_++);
}

SysResult<UniqueFd> Store::OpenPath(const std::string& path) {
  int fd = openat(dir_fd_.get(), path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Errno{errno};
  return UniqueFd(fd);
}

SysResult<UniqueFd> Store::OpenShadowed(const std::string& path, const std::string& name,
                                        int flags) {
  SYS_ASSIGN_OR_RETURN(UniqueFd fd, Open(path, flags));
  struct stat via, data;
  // Only the very store file: a shadow out of step (a link that failed) must
  // never give the guest another file's data.
  if (fstat(fd.get(), &via) < 0 || !Stat(name, &data).ok() || via.st_dev != data.st_dev ||
      via.st_ino != data.st_ino) {
    return Errno{ESTALE};
  }
  return fd;
}

}  // namespace sentry::vfs
