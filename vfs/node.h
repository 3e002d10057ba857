// Node: one inode of the sandbox's file tree.
//
// The tree is a single in-memory overlay. A directory may be backed by a host
// directory (the read-only lower layer): its host entries are looked up lazily and
// cached as child nodes; names the guest deletes become whiteouts so the host entry
// is not found again. A regular file is either a lower file (data still on the
// host, reached through its parent's host fd and its name) or an upper file (data
// in the backing store, see store.h). Names, directories, metadata and links live
// here, never in the store.
//
// Lock order: the whole VFS is guarded by the kernel's one mutex; nodes have no
// locks of their own.
#ifndef SENTRY_VFS_NODE_H_
#define SENTRY_VFS_NODE_H_

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "vfs/host_dir_fd.h"

namespace sentry::vfs {

class Node;
using NodeRef = std::shared_ptr<Node>;

enum class NodeKind {
  kDir,
  kFile,  // regular file, lower or upper
  kSymlink,
  kFifo,
  kSocket,     // a unix socket's inode in the store, bound by the guest
  kDevice,     // a host character device shown as is (/dev/null, ...)
  kSynthetic,  // a read-only generated file (/proc, /etc/passwd)
};

// Narrows what a host directory of the lower layer shows (the /etc view,
// sentry/run/etc_view.h). Consulted on every host lookup and listing of the
// directories it is attached to, and inherited by their subdirectories.
class HostFilter {
 public:
  virtual ~HostFilter() = default;
  // Whether the host entry name of the host directory dir_path, whose lstat
  // is st, is shown. A name not shown is absent: ENOENT, never listed.
  virtual bool Shows(std::string_view dir_path, std::string_view name,
                     const struct stat& st) const = 0;
};

// A host directory of the lower layer, shared by a dir node and its file nodes.
struct HostDir {
  // O_PATH | O_DIRECTORY (or O_RDONLY), opened beneath a lower root; a
  // directory a host lookup made is opened at its first use (host_dir_fd.h).
  HostDirFd fd;
  std::string path;  // host path, for exec through the mount view
  // Beneath a read-only bind mount (-v HOST:GUEST:ro): every node made from
  // this directory is read_only too.
  bool read_only = false;
  std::shared_ptr<const HostFilter> filter = nullptr;  // null: every entry shows
  // Beneath a write-through bind mount (-v HOST:GUEST:rw, vfs_host_rw.cc):
  // the guest's changes are made on the host, by the sentry, with *at calls
  // relative to these directory fds, and nothing is cached for long. Every
  // directory of one mount carries the same mount_id (non-zero): rename and
  // link between different ids are EXDEV, as across Linux mounts.
  bool read_write = false;
  uint64_t mount_id = 0;
  // Whom the host sees making those changes: the guest's uid and gid as the
  // run gave them (docker's habit: the container's ids as they are).
  uid_t as_uid = 0;
  gid_t as_gid = 0;
  // Beneath a -v mount of a sentry without root: the caller's own host ids
  // read as the guest's (see HostOwnerView).
  bool owner_view = false;
  // How a listing of it knows its end (Vfs::ListHost). ext4 (and a
  // directory on the same device as an ext4 one: the same superblock)
  // gives the last record of a listing's final batch the d_off of its EOF
  // cookie, INT64_MAX for a 64-bit caller (fs/ext4/dir.c
  // ext4_get_htree_eof), which no entry's position equals (an htree
  // position is (hash >> 1) << 32 | minor hash, the hash below 0xfffffffe
  // by ext4's own rule; a linear directory's is a byte offset): so that
  // batch ends the listing without one more getdents64 returning 0. Any
  // other file system is read until 0.
  enum class ListEnd : uint8_t { kUnknown, kReadToZero, kExt4Cookie };
  ListEnd list_end = ListEnd::kUnknown;  // kUnknown: asked (fstatfs) at its first listing
  dev_t dev = 0;                         // its st_dev; 0: not known yet
};

// Without root the guest's user is the caller's uid on the host, as its user
// namespace shows it: in a -v mount the caller's files read as the guest's,
// so the VFS grants the guest what the kernel grants the caller there. Set
// once per process (a sandbox's), before its tree is built.
struct HostOwnerView {
  bool on = false;
  uid_t host_uid = 0, guest_uid = 0;
  gid_t host_gid = 0, guest_gid = 0;
  void Apply(uid_t& uid, gid_t& gid) const {
    if (!on) return;
    if (uid == host_uid) uid = guest_uid;
    if (gid == host_gid) gid = guest_gid;
  }
};
inline HostOwnerView g_host_owner_view;

// A host entry that readdir listed and nothing has looked up yet: what
// getdents needs, without the fstatat (and, for a directory, the open) that
// making its node costs. Listing /usr/lib/python3.11 is 200 of these.
struct HostEntry {
  uint64_t ino;
  unsigned char type;  // DT_DIR, DT_REG or DT_LNK: the kinds the lower layer shows
};

struct Attr {
  mode_t mode = 0;  // includes the S_IFMT type bits
  uid_t uid = 0;
  gid_t gid = 0;
  dev_t rdev = 0;
  uint64_t ino = 0;
  dev_t dev = 0;  // 0: the VFS's own st_dev; else the host object's (devpts)
  timespec atime{}, mtime{}, ctime{};

  // A host object's attributes as a lower node first shows them.
  static Attr OfHost(const struct stat& st) {
    Attr a;
    a.mode = st.st_mode;
    a.uid = st.st_uid;
    a.gid = st.st_gid;
    a.ino = st.st_ino;
    a.atime = st.st_atim;
    a.mtime = st.st_mtim;
    a.ctime = st.st_ctim;
    return a;
  }
};

// Generates a synthetic file's contents when it is opened or stat'ed.
using Generator = std::function<std::string()>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node(NodeKind kind, const Attr& attr) : kind_(kind), attr_(attr) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the subtree one node at a time: a guest may build a chain of
  // directories as deep as the metadata budget allows (about 25,000 levels),
  // and the children's destructors would otherwise recurse once per level.
  ~Node();

  NodeKind kind() const { return kind_; }
  // A generated /etc file the guest writes becomes an ordinary upper file.
  void BecomeUpperFile(std::string name) {
    kind_ = NodeKind::kFile;
    store_name = std::move(name);
    generate = nullptr;
  }
  bool IsDir() const { return kind_ == NodeKind::kDir; }
  Attr& attr() { return attr_; }
  const Attr& attr() const { return attr_; }
  uint32_t nlink = 1;  // names that point at a non-directory node
  // Lower nodes: the host's mode. The sentry reaches the host as an
  // unprivileged "other" user, so the host's other-bits bound what any guest,
  // even its root, may read or search there.
  mode_t host_mode = 0;
  bool IsLower() const { return host_dir != nullptr || IsLowerFile(); }
  // The host directory this node's name lives in or that it is: the node of
  // a write-through mount (host_dir for a directory, lower_parent otherwise).
  const HostDir* RwHost() const {
    const HostDir* h = host_dir ? host_dir.get() : lower_parent.get();
    return h && h->read_write ? h : nullptr;
  }
  bool IsHostRw() const { return RwHost() != nullptr; }
  // Set by a host lookup (Vfs::LookUpHost) to the host's ctime: the node is a
  // cache entry that may be dropped and made again while nothing changed it
  // (every change stamps a new ctime, as the kernel does) and nothing holds
  // it. Zero for what the guest made and for the tree's fixed nodes (mounts).
  timespec looked_up_ctime{};
  bool IsCached() const { return looked_up_ctime.tv_sec != 0 || looked_up_ctime.tv_nsec != 0; }
  // Shown by a read-only bind mount: every change is EROFS, as on a mount
  // with MS_RDONLY (the node and, for a directory, the names in it).
  bool read_only = false;
  // Bytes of this node charged to the metadata budget (Vfs::Charge), refunded
  // when it goes: only what the guest made is charged.
  uint32_t charged = 0;

  // --- directories ---
  std::map<std::string, NodeRef> children;  // looked-up or created entries
  std::set<std::string> whiteouts;          // lower names the guest removed
  std::set<std::string> host_absent;        // negative cache of host lookups
  std::shared_ptr<HostDir> host_dir;        // set for dirs backed by the host
  bool host_listed = false;                 // every host entry is in children or host_unlooked
  std::map<std::string, HostEntry> host_unlooked;  // listed host names with no node yet
  int subdir_delta = 0;        // subdirectories made minus removed before host_listed
  std::weak_ptr<Node> parent;  // ".." (directories only)
  NodeRef pinned_parent;       // dynamic dirs: keeps ".." alive
  std::string name;            // name in parent (directories only)
  bool removed = false;        // rmdir'ed while still referenced

  // --- regular files (and, in a write-through mount, symlinks) ---
  std::shared_ptr<HostDir> lower_parent;  // lower file: host dir holding it
  std::string lower_name;                 // lower file: its name there
  dev_t host_dev = 0;                     // lower file: host identity
  ino_t host_ino = 0;
  off_t lower_size = 0;
  std::string store_name;  // upper file: its name in the backing store

  bool IsUpperFile() const { return kind_ == NodeKind::kFile && !store_name.empty(); }
  bool IsLowerFile() const { return kind_ == NodeKind::kFile && store_name.empty(); }

  // (A watched node's shadow, the store path its watches are put on, is in
  // Vfs::shadows_, not here: few nodes are ever watched, and every node would
  // carry its 32 bytes.)

  // --- extended attributes (user.*, held in memory whatever the layer) ---
  std::map<std::string, std::string> xattrs;
  uint64_t xattr_bytes = 0;  // charged to the metadata budget

  // --- symlinks ---
  std::string target;
  bool magic = false;  // a /proc link to an object, refused by RESOLVE_NO_MAGICLINKS
  // A magic link to an object no path names (/proc/PID/fd/N of a pipe): the
  // walk ends at this node instead of following the link's text.
  NodeRef object;

  // --- FIFOs (the store's FIFO is store_name) ---
  // Opens for writing made through the sentry, counted so that a reader
  // waiting in a blocking open (on a fiber, without the kernel lock) sees a
  // writer arrive. Made on the first blocking open.
  std::shared_ptr<std::atomic<uint64_t>> fifo_writer_opens;

  // --- anonymous objects (a pipe reached through /proc/PID/fd/N) ---
  // Opens the object anew with these open flags, as Linux's proc_fd_link does.
  std::function<SysResult<UniqueFd>(int flags)> reopen;

  // --- devices ---
  std::string device_path;  // host path of the device node
  // Or a device of the sandbox's own devpts: its name in that directory.
  std::shared_ptr<HostDir> device_parent;
  std::string device_name;

  // --- dynamic directories (/proc): children made on demand, never cached ---
  std::function<NodeRef(const std::string&)> lookup;  // the child named so, or null
  std::function<std::vector<std::string>()> names;    // every child's name

  // --- synthetic ---
  Generator generate;
  bool sized = true;  // stat reports the generated size (/etc); /proc files report 0

 private:
  NodeKind kind_;
  Attr attr_;
};

// The current time, as the kernel stamps inodes.
timespec Now();

}  // namespace sentry::vfs

#endif  // SENTRY_VFS_NODE_H_
