#include "vfs/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "vfs/store_owner.h"

namespace sentry::vfs {
namespace {

// The guest's own mode bits are kept in the node, and the sentry checks them;
// the host's only have to let the kernel exec the file for the guest's
// unprivileged uid, and must not let it exec what the node forbids: the
// kernel opens some files itself, unchecked by the sentry (an ELF's
// PT_INTERP can name a store file). So execute for all where the node has any
// execute bit, for none where it has none.
mode_t HostMode(mode_t mode) { return (mode & 0111) ? 0777 : 0666; }

}  // namespace

SysResult<std::string> Store::Create(mode_t mode, UniqueFd* wronly) {
  if (stash_ && HostMode(mode) == 0666) {
    if (std::optional<StashFile> file = stash_->TakeFile()) {
      // Made a while ago: its times become the create's. Both set to now
      // need only write permission, which mode 0666 gives this thread;
      // through its own description, with no lookup of the name.
      int set = file->wronly
                    ? futimens(file->wronly.get(), nullptr)
                    : utimensat(dir_fd_.get(), file->name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
      if (set == 0) {
        Remember(file->name, file->st);
        if (wronly) *wronly = std::move(file->wronly);
        return std::move(file->name);
      }
      file->wronly.Reset();
      Unlink(file->name);
    }
  }
  std::string name = "f" + std::to_string(next_++);
  AsOwner as(uid_, gid_);
  int fd = openat(dir_fd_.get(), name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0777);
  if (fd < 0) return Errno{errno};
  fchmod(fd, HostMode(mode));  // not narrowed by the sentry's umask
  // Its identity, for the opens that follow (each would fstat otherwise).
  struct stat st;
  if (fstat(fd, &st) == 0) Remember(name, st);
  close(fd);
  return name;
}

SysResult<StashFile> Store::MakeFile() {
  StashFile file;
  file.name = "f" + std::to_string(next_++);
  AsOwner as(uid_, gid_);
  int fd = openat(dir_fd_.get(), file.name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) return Errno{errno};
  file.wronly.Reset(fd);
  fchmod(fd, 0666);  // not narrowed by the sentry's umask
  if (fstat(fd, &file.st) < 0) {
    int err = errno;
    file.wronly.Reset();
    Unlink(file.name);
    return Errno{err};
  }
  return file;
}

void Store::Remember(const std::string& name, const struct stat& st) {
  if (ids_.size() < kMaxIdentities) ids_[name] = Id{st.st_dev, st.st_ino};
}

bool Store::Identity(const std::string& name, struct stat* st) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return false;
  *st = {};
  st->st_dev = it->second.dev;
  st->st_ino = it->second.ino;
  st->st_mode = S_IFREG;
  return true;
}

void Store::SetMode(const std::string& name, mode_t mode) {
  AsOwnerUid as(uid_);
  fchmodat(dir_fd_.get(), name.c_str(), HostMode(mode), 0);
}

SysResult<UniqueFd> Store::Open(const std::string& name, int flags) {
  int fd = openat(dir_fd_.get(), name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Errno{errno};
  return UniqueFd(fd);
}

SysStatus Store::Stat(const std::string& name, struct stat* st) {
  if (fstatat(dir_fd_.get(), name.c_str(), st, AT_SYMLINK_NOFOLLOW) < 0) return Errno{errno};
  return {};
}

SysStatus Store::Truncate(const std::string& name, off_t len) {
  SYS_ASSIGN_OR_RETURN(UniqueFd fd, Open(name, O_WRONLY));
  if (ftruncate(fd.get(), len) < 0) return Errno{errno};
  return {};
}

SysResult<DirToken> Store::NewDirToken() {
  if (stash_) {
    if (DirToken token = stash_->TakeToken()) return token;
  }
  return MakeDirToken();
}

void Store::StartStash(const std::optional<cpu_set_t>& cpus) {
  StoreStash::Makers makers;
  makers.start = [this] { HoldOwner(uid_, gid_); };
  makers.token = [this] { return MakeDirToken(); };
  makers.file = [this] { return MakeFile(); };
  makers.drop = [this](const std::string& name) { Unlink(name); };
  stash_ = std::make_unique<StoreStash>(std::move(makers), cpus);
  if (dir_fd_) stash_->Resume();
}

void Store::CloseLater(UniqueFd fd) {
  if (stash_) stash_->CloseLater(std::move(fd));
}

void Store::set_dir_fd(UniqueFd dir_fd) {
  dir_fd_ = std::move(dir_fd);
  noatime_ = -1;
  if (stash_) stash_->Resume();
}

SysResult<DirToken> Store::MakeDirToken() {
  std::string name = "d" + std::to_string(next_++);
  {
    AsOwner as(uid_, gid_);
    if (mkdirat(dir_fd_.get(), name.c_str(), 0555) < 0) return Errno{errno};
  }
  int fd = openat(dir_fd_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  int err = errno;
  AsOwnerUid as(uid_);
  unlinkat(dir_fd_.get(), name.c_str(), AT_REMOVEDIR);
  if (fd < 0) return Errno{err};
  DirToken token{UniqueFd(fd), {}};
  if (fstat(fd, &token.st) < 0) return Errno{errno};
  if (token_lock_ids_) {
    // As RelockDirToken (syscalls/fast_meta_publish.cc) would at the
    // donation: one byte at the token's id. Nothing else opens this inode
    // before then, so no close drops it; if it fails, the donation sets it.
    uint64_t id = token_lock_ids_();
    struct flock fl {};
    fl.l_type = F_RDLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = static_cast<off_t>(id);
    fl.l_len = 1;
    if (fcntl(fd, F_SETLK, &fl) == 0) token.lock_id = id;
  }
  return token;
}

SysStatus Store::SetTimes(int fd, const timespec times[2]) {
  AsOwnerUid as(uid_);
  if (futimens(fd, times) < 0) return Errno{errno};
  return {};
}

SysStatus Store::MakeFifo(const std::string& name) {
  AsOwner as(uid_, gid_);
  if (mkfifoat(dir_fd_.get(), name.c_str(), 0666) < 0) return Errno{errno};
  fchmodat(dir_fd_.get(), name.c_str(), 0666, 0);
  return {};
}

void Store::Release(const std::string& name) {
  ids_.erase(name);
  struct stat st;
  if (stash_ && fstatat(dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      stash_->Defer(name, static_cast<uint64_t>(st.st_blocks) * 512)) {
    return;
  }
  Remove(name);
}

void Store::Remove(const std::string& name) {
  ids_.erase(name);
  Unlink(name);
}

void Store::Unlink(const std::string& name) {
  AsOwnerUid as(uid_);
  unlinkat(dir_fd_.get(), name.c_str(), 0);
}

}  // namespace sentry::vfs
