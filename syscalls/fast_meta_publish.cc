#include "syscalls/fast_meta_publish.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

#include "sentry/kernel/kernel.h"
#include "syscalls/dir_listing.h"

namespace sentry::sys {
namespace {

// A node made by a host lookup of the read-only lower layer (or a lower root).
bool FromLowerLayer(const vfs::Node& n, bool top) {
  if (n.IsHostRw() || n.read_only) return false;
  // A lower symlink has no host object of its own: its host lookup marks it.
  if (!n.IsLower() && !(n.kind() == vfs::NodeKind::kSymlink && n.IsCached())) return false;
  if (!top && !n.IsCached()) return false;
  switch (n.kind()) {
    case vfs::NodeKind::kDir:
    case vfs::NodeKind::kFile:
    case vfs::NodeKind::kSymlink:
      return true;
    default:
      return false;
  }
}

// A directory or symlink of the in-memory upper layer (what the guest made,
// /tmp, the tree's own directories): every change to its answers is a
// trapped call, which invalidates the upper answers before it is answered
// (vfs.h set_on_upper_change). Nothing of the host (a lower or cached node,
// a -v mount of either kind), no dynamic directory (/proc), no magic link,
// no device's directory, and no regular file (native writes to its store
// file change its size and times: UpperFile below).
bool PureUpper(const vfs::Node& n) {
  if (n.IsLower() || n.IsCached() || n.IsHostRw() || n.read_only) return false;
  if (n.lookup || n.names || n.pinned_parent || n.attr().dev != 0) return false;
  if (n.kind() == vfs::NodeKind::kDir) return true;
  return n.kind() == vfs::NodeKind::kSymlink && !n.magic && !n.object && !n.reopen;
}

// A regular file of the upper layer (its data in the store; a copied-up
// file too): its size and times move by native writes, so it is published
// only while no writer of its store file exists (PublishNode asks the
// kernel, Store::NoWriter), and every writable description the sentry makes
// later bumps the upper generation first (Vfs::OpenData's copy-up step).
// Nothing of a -v mount, nothing synthetic.
bool UpperFile(const vfs::Node& n) {
  if (!n.IsUpperFile() || n.IsHostRw() || n.read_only) return false;
  return !n.lookup && !n.names && !n.pinned_parent && !n.magic && !n.object && !n.reopen;
}

// Whoever the caller is, the walk may search it (Vfs::Permission).
bool SearchableByAll(const vfs::Node& dir) {
  if (!dir.IsDir() || (dir.attr().mode & 0111) != 0111) return false;
  if (PureUpper(dir)) return true;
  return dir.host_dir && !dir.host_dir->read_write && (dir.host_mode & 1);
}

// Whoever the caller is, the walk may search it, for a path's answer: as
// SearchableByAll, or an upper directory only its owner may search when
// every guest process is that owner (FastMeta::SoleUid; root searches
// any): tempfile.mkdtemp's 0700 directories. Nothing else (a token's
// children, a listing's negatives) takes this rule.
bool SearchableByCallers(SyscallContext& ctx, FastMeta& fm, const vfs::Node& dir) {
  if (SearchableByAll(dir)) return true;
  if (!dir.IsDir() || !PureUpper(dir) || !fm.upper_files()) return false;
  uint32_t uid = ctx.creds().uid;
  if (uid != 0 && (dir.attr().uid != uid || !(dir.attr().mode & 0100))) return false;
  return fm.SoleUid(uid);
}

// Whoever the caller is, it may open the directory to read its listing (the
// token it holds proves only that its own caller could).
bool ListableByAll(const vfs::Node& dir) {
  if (!dir.IsDir() || dir.names || dir.lookup || (dir.attr().mode & 0444) != 0444) return false;
  if (PureUpper(dir)) return true;
  return dir.host_dir && !dir.host_dir->read_write && (dir.host_mode & 4);
}

// The access(2) modes every caller is granted (Vfs::Permission: owner, group
// or other bits, whichever apply, and for a lower node the host's other bits).
uint32_t GrantedToAll(const vfs::Node& n) {
  uint32_t ok = 0;
  mode_t m = n.attr().mode;
  mode_t host = PureUpper(n) || UpperFile(n) ? 7 : n.host_mode;
  for (uint32_t bit : {R_OK, X_OK}) {
    bool all = (m & (bit << 6)) && (m & (bit << 3)) && (m & bit) && (host & bit);
    if (all) ok |= bit;
  }
  return ok;
}

// Whether a path's answer may rest on node (top: a top-level name), and
// whether that makes it an upper answer (region.h SENTRY_FM_UPPER).
bool MayRestOn(const FastMeta& fm, const vfs::Node& node, bool top, bool* upper) {
  if (FromLowerLayer(node, top)) return true;
  if (!fm.upper() || !(PureUpper(node) || (fm.upper_files() && UpperFile(node)))) return false;
  *upper = true;
  return true;
}

// The node path leads to when every step of it may be published (the
// header's rules), without following a final symlink; null otherwise. When
// only the last name is missing, *absent is set. When a name is missing
// below a top, *missing_in (if set) gets the directory it is missing from
// (searchable by all, its path the first *missing_len bytes of path).
// *upper: an upper node was met (the answer, or the absence, rests on it).
// *via_link (if set): the walk stopped at a symlink before the last name.
vfs::NodeRef PublishableAt(SyscallContext& ctx, const std::string& path, bool* absent, bool* upper,
                           vfs::NodeRef* missing_in = nullptr, size_t* missing_len = nullptr,
                           bool* via_link = nullptr) {
  *absent = false;
  *upper = false;
  if (via_link) *via_link = false;
  if (!sentry_fm_normal(path.data(), path.size())) return nullptr;
  vfs::Vfs& v = ctx.vfs();
  FastMeta& fm = *ctx.kernel.fast_meta();
  const auto& tops = ctx.kernel.fast_meta_tops();
  vfs::NodeRef dir = v.root();
  size_t start = 1;
  bool first = true;
  while (true) {
    size_t slash = path.find('/', start);
    bool last = slash == std::string::npos;
    std::string name = path.substr(start, last ? std::string::npos : slash - start);
    // A top-level name: a lower root (or /etc), or an upper directory of the
    // root's own (/tmp); the root's other names (/proc, /dev, mounts) never.
    bool top = first && tops.count(name);
    if (first ? !top && !fm.upper() : !SearchableByCallers(ctx, fm, *dir)) return nullptr;
    vfs::NodeRef child = v.Child(dir, name);
    if (!child) {
      *absent = last && !first;
      if (missing_in && !first) {
        *missing_in = dir;
        *missing_len = start - 1;
      }
      return nullptr;
    }
    if (top) {
      if (!FromLowerLayer(*child, true)) return nullptr;
    } else if (first) {
      if (!PureUpper(*child)) return nullptr;
      *upper = true;
    } else if (!MayRestOn(fm, *child, false, upper)) {
      return nullptr;
    }
    if (last) return child;
    if (!child->IsDir()) {
      if (via_link) *via_link = child->kind() == vfs::NodeKind::kSymlink;
      return nullptr;
    }
    dir = std::move(child);
    start = slash + 1;
    first = false;
  }
}

// node's answer at path (which PublishableAt led to it). An upper file's
// only while no writer of it exists: quiet is one the caller found so in
// this very call (no trap came between), else the kernel is asked now.
void PublishNode(SyscallContext& ctx, FastMeta& fm, std::string_view path, const vfs::Node& node,
                 bool upper, const vfs::Node* quiet = nullptr) {
  if (UpperFile(node) && &node != quiet && !ctx.vfs().store().NoWriter(node.store_name, -1)) {
    return;
  }
  struct stat st = ctx.vfs().Stat(node);
  if (node.kind() == vfs::NodeKind::kSymlink) {
    std::string_view target = node.target;
    fm.PublishStat(path, st, 0, &target, upper);
  } else {
    fm.PublishStat(path, st, GrantedToAll(node), nullptr, upper);
  }
}

// The largest lower directory (its host st_size) listed at a name's first
// ENOENT in it: Python's probes of a package (__init__ with each extension
// suffix) land in directories of a few KiB; /usr/bin's listing would cost
// more than the traps it saves.
constexpr off_t kListOnAbsentMax = 32 << 10;
// The same for an upper directory, in entries: no host call, but a listing
// taken again after every change to the upper layer (the guest's library
// scans at most 32 KiB of it, about 1,000 entries).
constexpr size_t kUpperListOnAbsentMax = 512;

// A name was found missing from dir (at dir_path): publish dir's whole
// listing as COMPLETE, so that the guest answers the next absent names in
// it (and below them) itself. Only a directory every caller may read (the
// listing shows its names) and search (PublishableAt checked that).
void ListForNegatives(SyscallContext& ctx, FastMeta& fm, const vfs::NodeRef& dir,
                      std::string_view dir_path, bool upper) {
  if (!fm.negatives() || !ListableByAll(*dir) || dir->lookup) return;
  if (PureUpper(*dir)) {
    if (dir->children.size() > kUpperListOnAbsentMax) return;
  } else if (!dir->host_listed) {
    // Not listed yet: its size on the host says what listing it costs (the
    // VFS shows every directory as 4096 bytes).
    struct stat host {};
    if (fstat(dir->host_dir->fd.get(), &host) != 0 || host.st_size > kListOnAbsentMax) return;
  }
  if (fm.HasListing(dir_path)) return;
  std::optional<std::vector<char>> listing =
      WholeListing(ctx.vfs(), dir, SENTRY_FM_MAX_LISTING, nullptr);
  if (listing)
    fm.PublishListing(dir_path, std::string_view(listing->data(), listing->size()), true, upper);
}

}  // namespace

namespace {

// A lookup of a normal path that crossed no symlink but a final one under
// lstat: its answer, or its ENOENT, published by the rules above. false
// when the path is not normal, its walk met a symlink or stat followed the
// final one: PublishResolved may then know more (anything else the rules
// refuse, it would refuse too).
bool PublishDirect(SyscallContext& ctx, FastMeta& fm, std::string_view path,
                   const vfs::NodeRef& node, const vfs::Node* quiet = nullptr) {
  bool absent = false;
  bool upper = false;
  vfs::NodeRef missing_in;
  size_t missing_len = 0;
  bool via_link = false;
  std::string normal(path);
  if (!sentry_fm_normal(normal.data(), normal.size())) return false;
  vfs::NodeRef found =
      PublishableAt(ctx, normal, &absent, &upper, &missing_in, &missing_len, &via_link);
  if (!found) {
    if (via_link) return false;
    if (node != nullptr || (!absent && !missing_in)) return true;
    // The listing first: a directory's first listing may invalidate the
    // region (vfs.h set_on_lower_change), which would drop the absent slot.
    if (missing_in) ListForNegatives(ctx, fm, missing_in, path.substr(0, missing_len), upper);
    if (absent) {
      fm.PublishAbsent(path, upper);
    } else if (missing_in && fm.negatives()) {
      // A directory on the way is missing: its own ENOENT answers for
      // everything below it too (the guest's library looks up a path's
      // directories on a miss), where no listing was taken.
      fm.PublishAbsent(path.substr(0, path.find('/', missing_len + 1)), upper);
    }
    return true;
  }
  // A stat that followed a final symlink found another node:
  // PublishResolved publishes the link and that node.
  if (found != node) return false;
  PublishNode(ctx, fm, path, *found, upper, quiet);
  return true;
}

// The path's names, as the VFS's walk splits them (empty ones dropped).
void SplitNames(std::string_view path, std::deque<std::string>* out, bool front) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) names.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  if (front) {
    out->insert(out->begin(), names.begin(), names.end());
  } else {
    out->insert(out->end(), names.begin(), names.end());
  }
}

// The most names a resolution walks (links' targets included) before it
// gives up: bounds the host lookups one trapped call can add here.
constexpr int kResolveMaxNames = 256;

// A lookup of an absolute path that crossed symlinks or named "." or "..",
// resolved again name by name as the VFS's walk does (vfs_walk.cc Walk) and
// as the guest's library resolves it from the region (fastmeta/resolve.c),
// each step's path by the rules above. Published: every symlink followed
// (its own lstat answer and target, at its own normal path), a directory
// that a "." or ".." is taken from (its X_OK says every caller may search
// it), and the node the walk ends at, at its own normal path, when it is
// the lookup's very node; a name missing on the way, as PublishDirect does;
// the answer of a name walked on from that is not a directory (ENOTDIR).
void PublishResolved(SyscallContext& ctx, FastMeta& fm, std::string_view path, bool follow,
                     const vfs::NodeRef& node, int err, const vfs::Node* quiet) {
  std::deque<std::string> names;
  SplitNames(path, &names, false);
  bool trailing = !path.empty() && path.back() == '/';
  std::string res;        // the normal path of the directory reached ("": the root)
  bool res_known = true;  // the guest's library knows res may be searched by all
  int links = 0;
  int walked = 0;
  // Publishes res's answer: false when it may not be (the library then traps).
  auto publish_res = [&](const vfs::Node* expect) {
    bool absent = false;
    bool upper = false;
    vfs::NodeRef dir = PublishableAt(ctx, res, &absent, &upper);
    if (!dir || !dir->IsDir() || (expect && dir.get() != expect)) return false;
    PublishNode(ctx, fm, res, *dir, upper);
    return true;
  };
  while (!names.empty()) {
    if (++walked > kResolveMaxNames) return;
    std::string name = std::move(names.front());
    names.pop_front();
    bool last = names.empty();
    if (name == "." || name == "..") {
      if (!res_known && !publish_res(nullptr)) return;
      res_known = true;  // res's parent was searched to reach it
      if (name == "..") res.resize(res.empty() ? 0 : res.rfind('/'));
      continue;
    }
    std::string cand = res + "/" + name;
    bool absent = false;
    bool upper = false;
    vfs::NodeRef n = PublishableAt(ctx, cand, &absent, &upper);
    if (!n) {
      if (!node && err == ENOENT) PublishDirect(ctx, fm, cand, nullptr);
      return;
    }
    if (n->kind() == vfs::NodeKind::kSymlink && (!last || follow || trailing)) {
      if (++links > vfs::kMaxSymlinks || n->target.empty()) return;
      PublishNode(ctx, fm, cand, *n, upper);
      SplitNames(n->target, &names, true);
      if (names.empty()) return;  // a link to "/": the root is never published
      if (n->target[0] == '/') res.clear();
      res_known = true;  // the link's directory was searched to reach it
      continue;
    }
    if (last) {
      if (n == node) PublishNode(ctx, fm, cand, *n, upper, quiet);
      return;
    }
    if (!n->IsDir()) {  // ENOTDIR: the guest's library answers it by n's own answer
      PublishNode(ctx, fm, cand, *n, upper);
      return;
    }
    res = std::move(cand);
    res_known = false;
  }
  // The walk ended on "." or "..": at res.
  if (!res.empty() && node) publish_res(node.get());
}

}  // namespace

void PublishLookup(SyscallContext& ctx, const std::string& path, bool follow,
                   const vfs::NodeRef& node, int err, const vfs::Node* quiet) {
  FastMeta* fm = ctx.kernel.fast_meta();
  if (!fm || (node == nullptr && err != ENOENT && err != ENOTDIR) || path.empty() ||
      path[0] != '/') {
    return;
  }
  if (err != ENOTDIR && path.size() < 256 && PublishDirect(ctx, *fm, path, node, quiet)) return;
  if (path.size() < vfs::kPathMax) PublishResolved(ctx, *fm, path, follow, node, err, quiet);
}

bool RelockDirToken(const OpenObject& object, int held_fd) {
  if (object.fast_meta_id == 0) return false;
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(object.fast_meta_id);
  fl.l_len = 1;
  return fcntl(held_fd, F_SETLK, &fl) == 0;
}

void PublishDirToken(SyscallContext& ctx, const OpenObject& object, int held_fd,
                     const DirNames* names, bool list, bool locked) {
  FastMeta* fm = ctx.kernel.fast_meta();
  if (!fm || !object.dir_token || !object.node || !object.node->IsDir()) return;
  const vfs::NodeRef& dir = object.node;
  SysResult<std::string> where = ctx.vfs().PathOf(dir);
  if (!where.ok()) return;
  const std::string& path = where.value();
  bool absent = false;
  bool upper = false;
  if (PublishableAt(ctx, path, &absent, &upper) != dir) return;
  // The listing first: a directory's first listing may change its stat
  // (st_nlink) and so invalidate the region (vfs.h set_on_lower_change).
  std::optional<std::vector<char>> listing;
  DirNames listed;
  auto take_listing = [&] {
    listing = WholeListing(ctx.vfs(), dir, SENTRY_FM_MAX_LISTING, names ? nullptr : &listed);
    if (!names && listing) names = &listed;
  };
  if (list && fm->listings() && ListableByAll(*dir)) {
    bool had = fm->HasListing(path);
    if (!had) take_listing();
    // Its stat, token and listing slots in one generation (the guest needs
    // all three): room is made before, never between them.
    fm->Reserve(3, listing ? listing->size() : 0);
    if (had && !fm->HasListing(path)) take_listing();  // that room dropped it
  }
  PublishNode(ctx, *fm, path, *dir, upper);  // the token's fstat
  if (fm->tokens() && held_fd >= 0) {
    if (object.fast_meta_id == 0) object.fast_meta_id = FastMeta::NewTokenId();
    // Set again on every call: a close of any other fd of this inode in
    // the sentry (a copy taken by GetFd) drops the process's POSIX locks.
    // (Not when the token's maker locked it: locked.)
    if (locked || RelockDirToken(object, held_fd)) {
      fm->PublishToken(object.fast_meta_id, path, upper);
    }
  }
  if (listing) {
    fm->PublishListing(path, std::string_view(listing->data(), listing->size()),
                       SearchableByAll(*dir), upper);
  }
  // As NFS's READDIRPLUS: what a listing returned, the stats that follow hit.
  if (!names || !SearchableByAll(*dir)) return;
  vfs::Vfs& v = ctx.vfs();
  std::string child_path = path + "/";
  for (const auto& [name, type] : *names) {
    if (name == "." || name == "..") continue;
    // A file not looked up yet would cost a host fstatat here for a stat
    // that may never come (a listing of site-packages); a directory is
    // what a walk stats next.
    if (type != DT_DIR && !dir->children.count(name)) continue;
    // Never at the cost of the answers just published: a full region would
    // start again, and the guest reading this listing would trap for it.
    if (fm->Full()) break;
    vfs::NodeRef child = v.Child(dir, name);
    bool child_upper = upper;
    // Nor an upper file: each would cost the kernel's writer check.
    if (!child || UpperFile(*child) || !MayRestOn(*fm, *child, false, &child_upper)) continue;
    child_path.resize(path.size() + 1);
    child_path += name;
    PublishNode(ctx, *fm, child_path, *child, child_upper);
    // What a walk opens next: its host listing read on another CPU
    // meanwhile (vfs/listing_ahead.h).
    if (child->IsDir()) v.ReadAhead(child);
  }
  v.FlushReadAhead();
}

namespace {

// The calling thread's working directory's path, its CWD slot (region.h
// SENTRY_FM_CWD) published first if it is not: only when that path may be
// published (the rules above) and leads to it; else nothing.
std::optional<std::string> CwdPublished(SyscallContext& ctx, FastMeta& fm) {
  const vfs::NodeRef& cwd = ctx.task.fs->cwd;
  if (!fm.upper() || !cwd || !cwd->IsDir()) return std::nullopt;
  SysResult<std::string> where = ctx.vfs().PathOf(cwd);
  if (!where.ok()) return std::nullopt;
  pid_t tid = ctx.task.ns_tid;
  if (!fm.HasCwd(tid)) {
    bool absent = false;
    bool upper = false;
    if (PublishableAt(ctx, where.value(), &absent, &upper) != cwd) return std::nullopt;
    fm.PublishCwd(tid, where.value());
  }
  return std::move(where.value());
}

// A lookup relative to the working directory: the answer under its
// absolute path, with the working directory (CwdPublished).
void PublishRelative(SyscallContext& ctx, FastMeta& fm, const std::string& path, bool follow,
                     const SysResult<vfs::NodeRef>& r, const vfs::Node* quiet = nullptr) {
  std::optional<std::string> where = CwdPublished(ctx, fm);
  if (!where) return;
  std::string full = *where + "/" + path;
  if (full.size() >= vfs::kPathMax) return;
  PublishLookup(ctx, full, follow, r.ok() ? r.value() : nullptr, r.ok() ? 0 : r.error(), quiet);
}

}  // namespace

SysResult<vfs::NodeRef> NodeAtPublished(SyscallContext& ctx, int dirfd, const std::string& path,
                                        bool follow, bool empty_ok) {
  SysResult<vfs::NodeRef> r = NodeAtPath(ctx, dirfd, path, follow, empty_ok);
  FastMeta* fm = ctx.kernel.fast_meta();
  if (fm && !path.empty() && path[0] == '/') {
    PublishLookup(ctx, path, follow, r.ok() ? r.value() : nullptr, r.ok() ? 0 : r.error());
  } else if (fm && !path.empty() && dirfd == AT_FDCWD) {
    PublishRelative(ctx, *fm, path, follow, r);
  }
  return r;
}

void PublishCreated(SyscallContext& ctx, int dirfd, const std::string& path,
                    const std::string& where, const vfs::NodeRef& node, const struct stat& st) {
  FastMeta* fm = ctx.kernel.fast_meta();
  if (!fm || !fm->upper_files() || !fm->fd_records() || !node || !UpperFile(*node)) return;
  bool absent = false;
  bool upper = false;
  if (PublishableAt(ctx, where, &absent, &upper) != node) return;
  fm->PublishFresh(ctx.task.ns_tid, where, st);
  // The create took the thread's working directory's slot with the upper
  // answers: the library finds a relative name's FRESH slot by it.
  if (dirfd == AT_FDCWD && !path.empty() && path[0] != '/') CwdPublished(ctx, *fm);
}

void PublishOpened(SyscallContext& ctx, int dirfd, const std::string& path,
                   const std::string& where, bool follow, const vfs::NodeRef& node, bool quiet) {
  FastMeta* fm = ctx.kernel.fast_meta();
  if (!fm || !fm->fd_records() || path.empty() || !node) return;
  const vfs::Node* q = quiet ? node.get() : nullptr;
  if (path[0] == '/') {
    if (!fm->HasAnswer(path)) PublishLookup(ctx, path, follow, node, 0, q);
  } else if (dirfd == AT_FDCWD) {
    PublishRelative(ctx, *fm, path, follow, node, q);
  } else if (!where.empty() && !fm->HasAnswer(where)) {
    // PublishableAt walks where again: published only if it leads to node.
    PublishLookup(ctx, where, follow, node, 0, q);
  }
}

}  // namespace sentry::sys
