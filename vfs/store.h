// Store: where upper-layer file data lives.
//
// A directory of plain files, one per upper file, named by a counter. In a run it
// is a size-capped tmpfs inside the sandbox's own mount namespace (so a full disk
// is the guest's native ENOSPC, and the guest can mmap and exec the data); it is
// also bound into the guest's mount view at kGuestPath so exec can find a file
// that exists only in memory. The guest never names it: no guest path reaches it.
#ifndef SENTRY_VFS_STORE_H_
#define SENTRY_VFS_STORE_H_

#include <sched.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "vfs/store_stash.h"

namespace sentry::vfs {

class Store final {
 public:
  static constexpr const char* kGuestPath = "/.sentry-store";

  // dir_fd: an open directory (O_PATH is enough) that the sentry may write.
  // New entries are made with fsuid/fsgid owner (an id mapped in the sandbox's
  // user namespace, which owns the store's tmpfs; the sentry's own root is not).
  Store(UniqueFd dir_fd, uid_t owner_uid, gid_t owner_gid)
      : dir_fd_(std::move(dir_fd)), uid_(owner_uid), gid_(owner_gid) {}

  // Creates an empty file for a node of the given mode; returns its name.
  // Taken from the stash when there is one (a file the stash made ahead gets
  // the time of the take, as a new file would), else made. With wronly, a
  // stash file's write-only description (store_stash.h) is handed out there
  // (left empty when the file was made here); the caller donates or closes
  // it before its call returns.
  SysResult<std::string> Create(mode_t mode, UniqueFd* wronly = nullptr);
  // Keeps the host's execute bits in step with the node's mode (see HostMode).
  void SetMode(const std::string& name, mode_t mode);
  // Opens a store file with open(2) flags (access mode, O_APPEND, O_NONBLOCK...).
  SysResult<UniqueFd> Open(const std::string& name, int flags);
  SysStatus Stat(const std::string& name, struct stat* st);
  // Whether no writable description of the store file `name` exists
  // anywhere, on a store mounted noatime (store_writers.cc): then its size
  // and times move only by a call the sentry answers. fd: a read-only
  // description of it already open, or -1 (one is opened, and closed).
  bool NoWriter(const std::string& name, int fd);
  // The identity (st_dev, st_ino; nothing else is filled in) of the file
  // Create made as `name`, if it is still there: what an fstat of an fd
  // Open(name) returns would give, without that fstat. A name is never
  // given to another file while it is known (Remove and Release forget it)
  // and no guest path reaches the store, so the name still leads there.
  bool Identity(const std::string& name, struct stat* st) const;
  SysStatus Truncate(const std::string& name, off_t len);
  void Remove(const std::string& name);
  // Removes a file whose last name is gone and whose name will not be used
  // again: by the stash's thread when it can take it (see store_stash.h).
  void Release(const std::string& name);
  // A directory token: an open, already removed, empty directory. It has an inode
  // of its own, reads fail with EISDIR, and lookups in it find nothing. Taken
  // from the stash when there is one (see store_stash.h), else made; with its
  // identity (fstat), taken where it was made.
  SysResult<DirToken> NewDirToken();
  SysResult<DirToken> MakeDirToken();  // thread-safe
  // Every token made from now on gets the lock that names it (DirToken::
  // lock_id), its id from next_id (thread-safe). Set before StartStash.
  void set_token_locks(std::function<uint64_t()> next_id) { token_lock_ids_ = std::move(next_id); }
  // Starts a thread that makes directory tokens and empty files ahead (on
  // `cpus` if given), from when the store has its directory.
  void StartStash(const std::optional<cpu_set_t>& cpus);
  // Closes fd on the stash's thread, when it next runs (StoreStash::
  // CloseLater); at once without a stash. Thread-safe.
  void CloseLater(UniqueFd fd);
  int dir_fd() const { return dir_fd_.get(); }
  // Whose the store's entries are (the ids new entries are made with).
  uid_t owner_uid() const { return uid_; }
  gid_t owner_gid() const { return gid_; }
  // For a store made before its owner is known (a fork child's supervisor
  // builds its tree ahead of the child): set before its first entry.
  void set_owner(uid_t uid, gid_t gid) {
    uid_ = uid;
    gid_ = gid;
  }
  // For a store made before its directory exists (a sandbox's tmpfs, mounted
  // by its loader while the sentry builds the tree): given once it does.
  void set_dir_fd(UniqueFd dir_fd);
  // Where the guest's exec finds the store: kGuestPath in its mount view, or
  // the store's host path in a sandbox without a mount namespace.
  const std::string& exec_dir() const { return exec_dir_; }
  void set_exec_dir(std::string dir) { exec_dir_ = std::move(dir); }
  // Sets a store file's times (as its owner: explicit times need ownership).
  SysStatus SetTimes(int fd, const timespec times[2]);
  // Makes a FIFO named name in the store.
  SysStatus MakeFifo(const std::string& name);
  // Binds the unix socket sock to addr (a pathname address, exactly as the
  // guest gave it, so the kernel keeps the guest's name) and returns the
  // store name of the socket inode. See store_socket.cc.
  SysResult<std::string> BindSocket(int sock, const sockaddr_un& addr, socklen_t len);

  // --- shadows for inotify watches (store_shadow.cc, see Vfs::WatchObject) ---
  // A new empty directory (dir) or regular file at the top of the store.
  SysResult<std::string> MakeShadow(bool dir);
  // An entry at path ("w12/name"): a directory, a link to the store file
  // link_from, or (link_from empty) an empty file.
  SysStatus ShadowAdd(const std::string& path, bool dir, const std::string& link_from);
  void ShadowRemove(const std::string& path, bool dir);
  // renameat2 within the store (flags: RENAME_EXCHANGE, RENAME_NOREPLACE).
  SysStatus ShadowRename(const std::string& from, const std::string& to, unsigned flags);
  // The top-level shadow `name` under a new name, which is returned: its
  // watches see IN_MOVE_SELF, as a renamed directory's do.
  SysResult<std::string> ShadowMoved(const std::string& name);
  // A fresh path in a directory no watch is on ("" if it cannot be made):
  // where an entry goes to leave, or comes from to arrive, as a rename
  // out of or into a watched directory does.
  std::string ShadowScratch();
  // An O_PATH fd of a store path, for inotify_add_watch through /proc/self/fd.
  SysResult<UniqueFd> OpenPath(const std::string& path);
  // Opens the store file `name` through its link at path, with open(2)
  // flags; ESTALE unless path is that very file.
  SysResult<UniqueFd> OpenShadowed(const std::string& path, const std::string& name, int flags);

 private:
  UniqueFd dir_fd_;
  std::string exec_dir_ = kGuestPath;
  uid_t uid_;
  gid_t gid_;
  std::atomic<uint64_t> next_ = 1;  // also used by the stash's thread
  std::string scratch_;             // ShadowScratch's directory, once made
  // NoWriter's findings: the store's mount is noatime (-1: not asked yet,
  // or the directory changed), and a lease needs the owner's fsuid.
  int noatime_ = -1;
  bool lease_as_owner_ = false;
  // An empty file of host mode 0666, kept open write-only (the stash's maker).
  SysResult<StashFile> MakeFile();
  // Removes `name` from the store's directory (any thread: the stash's too).
  void Unlink(const std::string& name);
  void Remember(const std::string& name, const struct stat& st);

  // Create's files by name -> (st_dev, st_ino), for Identity. Used on the
  // notification thread only (the stash's thread removes through Unlink).
  // At most kMaxIdentities: past that a new file is not remembered, and its
  // opens fstat it as before.
  static constexpr size_t kMaxIdentities = 1 << 16;
  struct Id {
    dev_t dev;
    ino_t ino;
  };
  std::unordered_map<std::string, Id> ids_;

  std::function<uint64_t()> token_lock_ids_;  // set_token_locks
  std::unique_ptr<StoreStash> stash_;         // last: its thread stops first
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_STORE_H_
