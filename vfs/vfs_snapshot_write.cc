// Writing a VFS snapshot (vfs_snapshot.h; the stream: snapshot_wire.h).
//
// Two walks with explicit stacks (a guest may nest directories deeper than
// the sentry's stack): the first marks the lower directories that are pure
// cache (unchanged, all beneath unchanged: the child looks them up again)
// and sizes the upper files; the second writes the records in name order.
#include <fcntl.h>
#include <sys/stat.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vfs/snapshot_wire.h"
#include "vfs/vfs_snapshot.h"

namespace sentry::vfs {
namespace {

bool SnapSameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

std::string SnapHostJoin(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

uint8_t SnapHostFlags(const HostDir& h) {
  return (h.read_only ? snapshot::kHostReadOnly : 0) | (h.filter ? snapshot::kHostFiltered : 0) |
         (h.owner_view ? snapshot::kHostOwnerView : 0);
}

// The new tree has its own of these, at the same name: /proc, devpts, a -v
// :rw mount (its files are the host's), generated /etc files.
bool SnapKeptByName(const Node& n) {
  if (n.IsDir()) return n.lookup || n.names || (n.host_dir && n.host_dir->read_write);
  return n.kind() == NodeKind::kSynthetic;
}

class SnapshotWriter final {
 public:
  SnapshotWriter(Vfs& v, int fd) : v_(v), out_(fd) {}
  SnapshotResult Run();

 private:
  // A child the new tree will find by looking its host entry up: unchanged
  // since its lookup, at the name it was looked up by.
  bool Omit(const Node& dir, const std::string& name, const Node& child) const;
  std::string Plan();
  void WriteNode(const Node& n);
  void WriteHostRef(const HostDir& h) {
    out_.Str(h.path);
    out_.U8(SnapHostFlags(h));
  }
  void Record(uint8_t tag, const std::string& name) {
    out_.U8(tag);
    out_.Str(name);
    ++records_;
    ++stats_.entries;
  }
  void WriteDirHead(const Node& dir, const std::string& name);
  std::string WriteEntry(const Node& dir, const std::string& name, const Node& child);

  Vfs& v_;
  snapshot::Out out_;
  std::unordered_set<const Node*> clean_dirs_;
  std::unordered_map<const Node*, uint64_t> sizes_;     // upper files' data
  std::unordered_map<const Node*, uint64_t> numbered_;  // non-directory records
  uint64_t next_number_ = 0;
  uint64_t records_ = 0;
  uint64_t store_bytes_ = 0;  // data, each file rounded up to a page
  SnapshotStats stats_;
};

bool SnapshotWriter::Omit(const Node& dir, const std::string& name, const Node& child) const {
  if (!dir.host_dir || !child.IsCached() || !child.xattrs.empty() ||
      !SnapSameTime(child.attr().ctime, child.looked_up_ctime)) {
    return false;
  }
  switch (child.kind()) {
    case NodeKind::kFile:
      return child.IsLowerFile() && child.lower_parent == dir.host_dir && child.lower_name == name;
    case NodeKind::kSymlink:
      return !child.magic && !child.object;
    case NodeKind::kDir:
      return clean_dirs_.count(&child) && child.host_dir &&
             child.host_dir->path == SnapHostJoin(dir.host_dir->path, name) &&
             SnapHostFlags(*child.host_dir) == SnapHostFlags(*dir.host_dir);
    default:
      return false;
  }
}

std::string SnapshotWriter::Plan() {
  struct Frame {
    const Node* dir;
    std::map<std::string, NodeRef>::const_iterator next;
    bool all_omitted;
  };
  std::vector<Frame> stack{{v_.root().get(), v_.root()->children.begin(), true}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.dir->children.end()) {
      const Node* dir = f.dir;
      bool clean = f.all_omitted && dir->host_dir && !dir->removed && dir->whiteouts.empty() &&
                   dir->subdir_delta == 0;
      stack.pop_back();
      if (clean) clean_dirs_.insert(dir);
      if (!stack.empty()) {
        Frame& up = stack.back();
        if (!Omit(*up.dir, up.next->first, *dir)) up.all_omitted = false;
        ++up.next;
      }
      continue;
    }
    const Node& child = *f.next->second;
    if (child.IsDir() && !SnapKeptByName(child)) {
      stack.push_back({&child, child.children.begin(), true});  // f is not used past here
      continue;
    }
    if (child.IsUpperFile() && !sizes_.count(&child)) {
      struct stat st;
      if (!v_.store().Stat(child.store_name, &st).ok()) {
        return "cannot stat the store file of " + f.next->first;
      }
      uint64_t size = static_cast<uint64_t>(st.st_size);
      sizes_[&child] = size;
      store_bytes_ += (size + 4095) / 4096 * 4096;
    }
    if (!Omit(*f.dir, f.next->first, child)) f.all_omitted = false;
    ++f.next;
  }
  return "";
}

void SnapshotWriter::WriteNode(const Node& n) {
  const Attr& a = n.attr();
  out_.U32(a.mode);
  out_.U32(a.uid);
  out_.U32(a.gid);
  out_.U64(a.rdev);
  out_.U64(a.ino);
  out_.U64(a.dev);
  out_.Time(a.atime);
  out_.Time(a.mtime);
  out_.Time(a.ctime);
  out_.Time(n.looked_up_ctime);
  out_.U32(n.nlink);
  out_.U8((n.charged ? snapshot::kGuestMade : 0) | (n.IsCached() ? snapshot::kCached : 0));
  out_.U32(static_cast<uint32_t>(n.xattrs.size()));
  for (const auto& [name, value] : n.xattrs) {
    out_.Str(name);
    out_.Str(value);
  }
}

void SnapshotWriter::WriteDirHead(const Node& dir, const std::string& name) {
  Record('D', name);
  WriteNode(dir);
  out_.U8(dir.host_dir ? 1 : 0);
  if (dir.host_dir) WriteHostRef(*dir.host_dir);
  out_.U32(static_cast<uint32_t>(dir.whiteouts.size()));
  for (const std::string& w : dir.whiteouts) out_.Str(w);
  out_.U32(static_cast<uint32_t>(dir.subdir_delta));
}

std::string SnapshotWriter::WriteEntry(const Node& dir, const std::string& name,
                                       const Node& child) {
  (void)dir;
  if (auto it = numbered_.find(&child); it != numbered_.end()) {
    Record('H', name);
    out_.U64(it->second);
    return "";
  }
  if (SnapKeptByName(child)) {
    Record('k', name);
    return "";
  }
  auto number = [&] { numbered_[&child] = next_number_++; };
  switch (child.kind()) {
    case NodeKind::kFile:
      if (child.IsHostRw()) break;
      if (child.IsUpperFile()) {
        // O_NOATIME: the copy must not change the parent's atime.
        auto fd = v_.store().Open(child.store_name, O_RDONLY | O_NOATIME);
        if (!fd.ok() && fd.error() == EPERM) fd = v_.store().Open(child.store_name, O_RDONLY);
        struct stat st;
        if (!fd.ok() || fstat(fd->get(), &st) < 0) return "cannot open the store file of " + name;
        Record('F', name);
        WriteNode(child);
        out_.Time(st.st_atim);
        out_.Time(st.st_mtim);
        uint64_t size = sizes_[&child];
        out_.U64(size);
        out_.FileData(fd->get(), size);
        ++stats_.upper_files;
        stats_.data_bytes += size;
      } else {
        Record('L', name);
        WriteNode(child);
        WriteHostRef(*child.lower_parent);
        out_.Str(child.lower_name);
      }
      number();
      return "";
    case NodeKind::kSymlink:
      if (child.magic || child.object || child.IsHostRw()) break;
      Record('S', name);
      WriteNode(child);
      out_.Str(child.target);
      number();
      return "";
    case NodeKind::kFifo:
      Record('P', name);
      WriteNode(child);
      number();
      return "";
    case NodeKind::kSocket:
      Record('K', name);
      WriteNode(child);
      number();
      return "";
    case NodeKind::kDevice:
      if (child.device_parent) break;  // a devpts entry: the child's ptys are its own
      Record('V', name);
      WriteNode(child);
      out_.Str(child.device_path);
      number();
      return "";
    default:
      break;
  }
  ++stats_.dropped;
  return "";
}

SnapshotResult SnapshotWriter::Run() {
  SnapshotResult r;
  if (std::string err = Plan(); !err.empty()) {
    r.error = err;
    return r;
  }
  out_.U64(kSnapshotMagic);
  out_.U32(snapshot::kVersion);
  out_.U64(store_bytes_);
  struct Frame {
    const Node* dir;
    std::map<std::string, NodeRef>::const_iterator next;
  };
  const Node& root = *v_.root();
  WriteDirHead(root, "");
  std::vector<Frame> stack{{&root, root.children.begin()}};
  while (!stack.empty() && !out_.failed()) {
    Frame& f = stack.back();
    if (f.next == f.dir->children.end()) {
      out_.U8('E');
      stack.pop_back();
      continue;
    }
    const std::string& name = f.next->first;
    const Node& child = *f.next->second;
    const Node& dir = *f.dir;
    ++f.next;
    if (Omit(dir, name, child)) continue;
    if (child.IsDir() && !SnapKeptByName(child)) {
      WriteDirHead(child, name);
      stack.push_back({&child, child.children.begin()});  // f is not used past here
      continue;
    }
    if (std::string err = WriteEntry(dir, name, child); !err.empty()) {
      r.error = err;
      return r;
    }
  }
  out_.U8('Z');
  out_.U64(records_);
  out_.U64(stats_.data_bytes);
  out_.Flush();
  if (out_.failed()) {
    r.error = std::string("cannot write the snapshot: ") + strerror(out_.err());
    return r;
  }
  stats_.stream_bytes = out_.sent();
  r.stats = stats_;
  return r;
}

}  // namespace

SnapshotResult WriteSnapshot(Vfs& v, int fd) { return SnapshotWriter(v, fd).Run(); }

}  // namespace sentry::vfs
