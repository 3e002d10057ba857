// Vfs: the sandbox's one file tree and the operations the syscall handlers use.
//
// Errno contract: every operation answers with the errno Linux gives for the same
// case on a local filesystem (ENOENT, ENOTDIR, EEXIST, EISDIR, ENOTEMPTY, ELOOP,
// ENAMETOOLONG, EACCES, EPERM, EINVAL, EXDEV for openat2's RESOLVE_BENEATH).
// Permission checks use the caller's emulated credentials and the nodes' mode bits,
// as fs/namei.c's generic_permission does.
//
// Lock order: callers hold the kernel mutex; the Vfs takes no lock of its own.
#ifndef SENTRY_VFS_VFS_H_
#define SENTRY_VFS_VFS_H_

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sentry/base/sys_result.h"
#include "vfs/listing_ahead.h"
#include "vfs/node.h"
#include "vfs/store.h"

namespace sentry::vfs {

// The guest's emulated identity, used for permission checks and new files' owners.
struct Creds {
  uid_t uid = 1000;
  gid_t gid = 1000;
  std::vector<gid_t> groups;
  bool IsRoot() const { return uid == 0; }
  bool InGroup(gid_t g) const;
};

struct ResolveOpts {
  bool follow_final = true;
  bool beneath = false;        // RESOLVE_BENEATH: never leave the start directory
  bool in_root = false;        // RESOLVE_IN_ROOT: the start directory is "/"
  bool no_symlinks = false;    // RESOLVE_NO_SYMLINKS
  bool no_magiclinks = false;  // RESOLVE_NO_MAGICLINKS: no /proc/PID/{fd/N,exe,cwd,root}
};

// Where a path led: the directory holding its last name, the name, and the node
// if it exists. For "/" and paths ending in "." or "..", parent is null and name
// is that component.
struct Resolved {
  NodeRef parent;
  std::string name;
  NodeRef node;
  bool trailing_slash = false;
  // The caller may create a new entry here (a real name, a live directory).
  bool Creatable() const { return parent != nullptr; }
};

inline constexpr size_t kNameMax = 255;
inline constexpr size_t kPathMax = 4096;  // including the NUL
inline constexpr int kMaxSymlinks = 40;
inline constexpr dev_t kVfsDev = 0x53;  // the st_dev every node reports

// The sentry's own memory for one sandbox must stay under a fixed cap (64 MiB
// in tests/limits/vfs_bounds_test.cc) whatever the guest does: ~4 MiB of it is
// the sentry itself, the rest is shared by the VFS's two budgets below and
// the kernel's own tables (fd identities, tasks, denials).
//
// What the guest makes (names, nodes, symlink targets, xattrs) is charged
// against the metadata budget, --disk/8 but never more than this: 24 MiB holds
// about 25,000 empty files or directories (a node costs ~1 KiB, see
// kNodeCost) before the guest's call fails with ENOSPC. With 32 MiB, every
// budget filled at once took the sentry to 63.8 MB; with 24, 55.8 MB.
inline constexpr uint64_t kMaxMetadataBytes = 24ull << 20;
// What host lookups leave behind (lower nodes, listings, names known absent)
// is a cache: past this many bytes the unreferenced, unchanged part of it is
// dropped, to be looked up again when needed. 8 MiB is ~7,000 lower nodes,
// 18 times what python3 importing json, email, http.client, asyncio,
// unittest, xml, sqlite3, decimal, ssl and multiprocessing leaves (465 KB), so
// ordinary runs never drop anything; a stat of every entry of /usr (157,000,
// 164 MB when nothing was dropped) stays within it.
inline constexpr uint64_t kLowerCacheBytes = 8ull << 20;
// Rough figures of what the sentry's heap holds, in bytes: a node (its
// object, shared_ptr control block and allocator overhead), a map slot for a
// name (tree node, key, value; the name's own bytes are added), a listed host
// entry and a name known absent. Measured: 129,518 empty directories took the
// sentry from 4 MB to 125 MB, ~950 bytes each.
inline constexpr uint64_t kNodeCost = sizeof(Node) + 48;
inline constexpr uint64_t kNameCost = 96;
inline constexpr uint64_t kHostEntryCost = 96;
inline constexpr uint64_t kAbsentCost = 80;

class Vfs final {
 public:
  Vfs(NodeRef root, std::unique_ptr<Store> store);

  // Names, links and nodes the guest makes live in the sentry's memory, not in
  // the store: they are charged against this budget (ENOSPC past it), so a
  // guest cannot grow the sentry without bound. Never more than
  // kMaxMetadataBytes; 0: that ceiling.
  void set_metadata_limit(uint64_t bytes) {
    meta_limit_ = bytes == 0 ? kMaxMetadataBytes : std::min(bytes, kMaxMetadataBytes);
  }
  uint64_t metadata_bytes() const { return meta_bytes_; }
  // The lower-layer cache (vfs_cache.cc): its budget, and its size as last
  // counted plus what was added since.
  void set_cache_limit(uint64_t bytes) { cache_limit_ = cache_next_ = bytes; }
  uint64_t cache_bytes() const { return cache_bytes_; }
  // Drops every cached lower node, listing and absent name that nothing holds
  // and nothing changed; recounts what stays. Walk calls it past the budget.
  void ShrinkCache();

  const NodeRef& root() const { return root_; }
  // Called before any change to a lower node, to the root or to what a
  // lower node's stat depends on (its listing, the cache's drop): the
  // fast-metadata region's invalidation (sentry/kernel/fast_meta.h).
  void set_on_lower_change(std::function<void()> f) { on_lower_change_ = std::move(f); }
  // Called before any change to any other node (the upper layer's: a name
  // made or removed in a directory, its attributes): the region's upper
  // answers' invalidation.
  void set_on_upper_change(std::function<void()> f) { on_upper_change_ = std::move(f); }
  Store& store() { return *store_; }

  // Lower directories' host listings read ahead on a thread running on cpus
  // with the file identity fsuid/fsgid, its CPU told to charge
  // (listing_ahead.h); once, before the guest runs.
  void StartListingAhead(const std::optional<cpu_set_t>& cpus, uid_t fsuid, gid_t fsgid,
                         std::function<void(uint64_t cpu_ns)> charge = nullptr) {
    ahead_ = std::make_unique<ListingAhead>(cpus, fsuid, fsgid, std::move(charge));
  }
  ListingAhead* listing_ahead() { return ahead_.get(); }
  // Queues dir's listing to be read ahead, if it is a lower directory not
  // listed yet (and not a write-through one); FlushReadAhead hands what was
  // queued over, the first queued to be read first.
  void ReadAhead(const NodeRef& dir) {
    if (ahead_ && dir->host_dir && !dir->host_dir->read_write && !dir->host_listed &&
        !dir->lookup && !dir->names) {
      ahead_->Queue(dir->host_dir);
    }
  }
  void FlushReadAhead() {
    if (ahead_) ahead_->Flush();
  }

  // --- resolution ---
  SysResult<Resolved> Walk(const NodeRef& start, std::string_view path, const ResolveOpts& opts,
                           const Creds& creds);
  // Walks and requires the final node to exist (ENOENT) and, with a trailing
  // slash, to be a directory (ENOTDIR).
  SysResult<NodeRef> Lookup(const NodeRef& start, std::string_view path, const ResolveOpts& opts,
                            const Creds& creds);
  // One step: the child named name in dir, or null; fills in host entries lazily.
  NodeRef Child(const NodeRef& dir, const std::string& name);
  // Every entry of dir (host entries included, each looked up), in name order.
  std::vector<std::pair<std::string, NodeRef>> List(const NodeRef& dir);
  // What getdents shows of a directory that is not dynamic (no Node::names),
  // in name order, host entries that were never looked up included as
  // readdir gave them: visit is called for each entry whose name sorts after
  // `after` ("": from the first) until it returns false. The cost is
  // O(log n + entries visited), so a listing read in small pieces costs
  // O(entries) in all, not O(n) a call. relist: a write-through directory is
  // read from the host again (a listing's start); else the entries last
  // read stay. The names point into dir's own maps: valid until dir changes.
  struct DirEntry {
    std::string_view name;
    uint64_t ino;
    unsigned char type;  // DT_*
  };
  void VisitListing(const NodeRef& dir, std::string_view after, bool relist,
                    const std::function<bool(const DirEntry&)>& visit);
  // The whole listing at once (read from the host again where it is
  // write-through).
  std::vector<DirEntry> Listing(const NodeRef& dir);
  // No entry but "." and "..": what rmdir and rename over a directory need.
  bool IsEmptyDir(const NodeRef& dir);
  // The absolute path of a directory, or ENOENT if it was removed.
  SysResult<std::string> PathOf(const NodeRef& dir);

  // --- permission ---
  SysStatus Permission(const Node& node, int may, const Creds& creds) const;  // R_OK|W_OK|X_OK

  // --- metadata ---
  struct stat Stat(const Node& node);
  // Stat of an upper file whose data stat the caller already has.
  struct stat StatWithData(const Node& node, const struct stat& data);
  SysStatus Chmod(Node& node, mode_t mode, const Creds& creds);
  SysStatus Chown(Node& node, uid_t uid, gid_t gid, const Creds& creds);  // -1 keeps
  // times[0] atime, times[1] mtime; tv_nsec may be UTIME_NOW / UTIME_OMIT; null = now.
  SysStatus Utimens(Node& node, const timespec* times, const Creds& creds);
  SysStatus Truncate(Node& node, off_t len, const Creds& creds);
  SysStatus CopyUp(Node& node);

  // --- extended attributes (vfs_xattr.cc) ---
  // Linux's rules (fs/xattr.c xattr_permission, mm/shmem.c): user.* on
  // regular files and directories only (EPERM to write others, ENODATA to
  // read), sticky directories written by their owner only, then the file's
  // own permission (EACCES); trusted.* needs a privilege the guest never has;
  // other namespaces are EOPNOTSUPP. Names are 1..255 bytes (ERANGE), values
  // up to 64 KiB (E2BIG); XATTR_CREATE finds EEXIST, XATTR_REPLACE and
  // reads of a missing name find ENODATA.
  SysStatus SetXattr(Node& node, const std::string& name, std::string value, int flags,
                     const Creds& creds);
  SysResult<std::string> GetXattr(const Node& node, const std::string& name, const Creds& creds);
  // The names, each with its NUL, as listxattr returns them.
  std::string ListXattr(const Node& node) const;
  SysStatus RemoveXattr(Node& node, const std::string& name, const Creds& creds);

  // --- namespace changes (parent/name from Walk) ---
  // A regular file's create may hand out the store's write-only description
  // of its new data file in wronly (Store::Create); the caller donates or
  // closes it before its call returns.
  SysResult<NodeRef> Create(const Resolved& at, NodeKind kind, mode_t mode, const Creds& creds,
                            UniqueFd* wronly = nullptr);
  // A unix socket's name: the checks of Create, then bind(store name) makes
  // the inode in the store (Store::BindSocket); the name appears only if it
  // succeeded. EADDRINUSE if the name exists, as bind(2) says.
  SysResult<NodeRef> CreateSocket(const Resolved& at, mode_t mode, const Creds& creds,
                                  const std::function<SysResult<std::string>()>& bind);
  SysResult<NodeRef> Symlink(const Resolved& at, std::string_view target, const Creds& creds);
  SysStatus Link(const NodeRef& node, const Resolved& at, const Creds& creds);
  SysStatus Unlink(const Resolved& at, const Creds& creds);  // files, symlinks, fifos
  SysStatus Rmdir(const Resolved& at, const Creds& creds);
  // flags: RENAME_NOREPLACE, RENAME_EXCHANGE.
  SysStatus Rename(const Resolved& from, const Resolved& to, unsigned flags, const Creds& creds);

  // --- data ---
  // A host fd to donate for a non-directory node, with the guest's open flags
  // (access mode, O_APPEND, O_NONBLOCK, O_SYNC...). Copies a lower file up first
  // when opened for writing.
  // via: the entry it was opened by; in a watched directory an upper file is
  // opened through the directory's shadow, so the watch sees its data events.
  SysResult<UniqueFd> OpenData(Node& node, int flags, const Resolved* via = nullptr);
  // Whether an inotify watch is on dir (its entries are opened through its
  // shadow: OpenData's via).
  bool Watched(const Node& dir) const { return ShadowOf(dir) != nullptr; }

  // --- inotify watches (vfs_watch.cc) ---
  // The host object a watch on node is put on, as an O_PATH fd: an upper
  // file's store file, a lower or write-through file's host file, a
  // write-through directory's host directory; for any other directory its
  // shadow (made and filled now: a store directory with one entry per name,
  // kept in step by every change the guest makes, so a watch sees the
  // sandbox's names and nothing else); for anything else a token. ENOSPC
  // past kMaxShadows shadowed nodes or kMaxShadowEntries entries.
  SysResult<UniqueFd> WatchObject(const NodeRef& node);
  static constexpr size_t kMaxShadows = 8192;
  static constexpr uint64_t kMaxShadowEntries = 32768;

  // --- building the tree (setup, not the guest) ---
  NodeRef NewNode(NodeKind kind, mode_t mode, uid_t uid, gid_t gid);
  // A fresh number for a write-through bind mount (HostDir::mount_id).
  uint64_t NewMountId() { return ++mount_ids_; }
  void AddChild(const NodeRef& dir, const std::string& name, const NodeRef& child);
  // A node for a host path (dir, file or symlink) reached beneath dir_fd.
  NodeRef MakeLowerNode(const std::shared_ptr<HostDir>& host_parent, const std::string& name,
                        const struct stat& st);

 private:
  // The snapshot's reader (vfs_snapshot_read.cc) builds a fresh tree and
  // takes its budgets, inode numbers and cache size as a copy's.
  friend class SnapshotReader;

  // Reads dir's host directory once, into host_unlooked.
  void ListHost(const NodeRef& dir);
  // fstatat of name in dir's host directory, and its node added if shown.
  NodeRef LookUpHost(const NodeRef& dir, const std::string& name);
  void Detach(const NodeRef& dir, const std::string& name);  // leaves a whiteout
  // Charges the whiteout that removing a host name from dir will leave, before
  // anything changes: ENOSPC past the budget, as overlayfs fails when it
  // cannot make one.
  SysStatus ChargeWhiteout(const NodeRef& dir, const std::string& name, const Node& child);
  void ReleaseFile(Node& node);  // after the last name goes
  SysStatus MayDelete(const Node& dir, const Node& victim, const Creds& creds) const;
  void Touch(Node& dir);
  SysStatus Charge(uint64_t bytes);
  // EROFS for a node of a read-only bind mount, as fs/namei.c's mnt_want_write.
  static SysStatus Writable(const Node& node) {
    if (node.read_only) return Errno{EROFS};
    return {};
  }
  // Refunds what node was charged, xattrs included, once it has no name left.
  void RefundNode(Node& node);
  SysStatus XattrPermission(const Node& node, const std::string& name, int may,
                            const Creds& creds) const;
  void Refund(uint64_t bytes) { meta_bytes_ -= std::min(meta_bytes_, bytes); }
  static uint64_t NameCost(const std::string& name) { return kNameCost + name.size(); }
  void LowerChanged(const Node& node) {
    if (on_lower_change_ && (node.IsLower() || node.IsCached() || &node == root_.get())) {
      on_lower_change_();
    } else if (on_upper_change_) {
      on_upper_change_();
    }
  }
  // Past the cache's budget: shrink it before a walk takes any reference.
  void MaybeShrinkCache() {
    if (cache_bytes_ > cache_next_) ShrinkCache();
  }

  // --- shadows of watched directories (vfs_watch.cc): best effort ---
  void ShadowAdd(const NodeRef& dir, const std::string& name, const Node& child);
  void ShadowRemove(const NodeRef& dir, const std::string& name, const Node& child);
  void ShadowRename(const Resolved& from, const Resolved& to, unsigned flags);
  // A removed directory's own shadow goes: its watches see IN_DELETE_SELF.
  void DropShadow(Node& dir);
  SysStatus FillShadow(const NodeRef& dir, const std::string& shadow);
  const std::string* DirShadow(const Node& dir) const;
  // The store path a watch on node is put on when it has no host object of
  // its own (a directory's shadow, whose entries follow its names, or a token
  // that nothing changes); null until it is watched.
  const std::string* ShadowOf(const Node& node) const {
    if (shadows_.empty()) return nullptr;  // the common case: nothing watched
    auto it = shadows_.find(&node);
    return it == shadows_.end() ? nullptr : &it->second.path;
  }
  struct Shadow {
    NodeRef node;  // kept alive (and its name) while it has a shadow
    std::string path;
  };
  std::unordered_map<const Node*, Shadow> shadows_;  // of the few watched nodes
  uint64_t shadow_entries_ = 0;

  // --- write-through bind mounts (vfs_host_rw.cc) ---
  static bool IsRwDir(const Node& dir) { return dir.host_dir && dir.host_dir->read_write; }
  // The host entry name of a write-through dir, fresh from the host: the
  // cached node refreshed if it is still the same object, else a new one.
  NodeRef RwChild(const NodeRef& dir, const std::string& name);
  // The node's attributes read again from the host (after a change).
  void RwRefresh(Node& node);
  SysResult<NodeRef> RwCreate(const Resolved& at, NodeKind kind, mode_t mode);
  SysResult<NodeRef> RwSymlink(const Resolved& at, std::string_view target);
  SysStatus RwLink(const NodeRef& node, const Resolved& at);
  SysStatus RwRemove(const Resolved& at, bool dir);
  SysStatus RwRename(const Resolved& from, const Resolved& to, unsigned flags);
  SysStatus RwChmod(Node& node, mode_t mode);
  SysStatus RwChown(Node& node, uid_t uid, gid_t gid);
  SysStatus RwUtimens(Node& node, const timespec* times);
  SysStatus RwTruncate(Node& node, off_t len);
  SysResult<UniqueFd> RwOpen(Node& node, int flags);
  static bool RwStat(const Node& node, struct stat* st);

  NodeRef root_;
  std::unique_ptr<Store> store_;
  uint64_t mount_ids_ = 0;
  uint64_t next_ino_ = 1ull << 33;  // above any host (ext4) inode number
  uint64_t meta_limit_ = kMaxMetadataBytes;
  uint64_t meta_bytes_ = 0;
  uint64_t cache_limit_ = kLowerCacheBytes;
  uint64_t cache_bytes_ = 0;
  uint64_t cache_next_ = kLowerCacheBytes;  // cache_bytes_ that triggers a shrink
  std::function<void()> on_lower_change_;
  std::function<void()> on_upper_change_;
  std::unique_ptr<ListingAhead> ahead_;  // last: its thread stops first
};

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_VFS_H_
