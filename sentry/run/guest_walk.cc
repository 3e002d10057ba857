#include "sentry/run/guest_walk.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sentry {
namespace {

constexpr int kMaxDepth = 64;

std::string ErrnoText(int err) {
  return absl::StrCat(strerrorname_np(err) ?: "E?", ": ", strerror(err));
}

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a == "/") return "/" + b;
  return absl::StrCat(a, "/", b);
}

std::string HumanBytes(uint64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return absl::StrCat(n >> 20, " MiB");
  if (n >= (1 << 10) && n % (1 << 10) == 0) return absl::StrCat(n >> 10, " KiB");
  return absl::StrCat(n, " bytes");
}

}  // namespace

bool HasGlob(const std::string& name) { return name.find_first_of("*?[") != std::string::npos; }

void GuestWalk::Add(const vfs::NodeRef& from, const std::string& asked) {
  if (!cap_hit_.empty()) return;
  // A run that failed before its cwd was made: relative names from /.
  const vfs::NodeRef& start = from ? from : v_.root();
  std::string key = asked;
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  std::vector<std::string> names = absl::StrSplit(key, '/', absl::SkipEmpty());
  bool absolute = !asked.empty() && asked[0] == '/';
  size_t glob = 0;
  while (glob < names.size() && !HasGlob(names[glob])) ++glob;
  vfs::ResolveOpts opts;
  if (!limits_.follow_named) {
    opts.follow_final = false;
    opts.no_symlinks = true;
  }
  if (glob == names.size()) {
    // One name, the key as asked.
    auto node = v_.Lookup(start, key, opts, creds_);
    if (!node.ok()) {
      Error(key, node.error() == ELOOP && !limits_.follow_named
                     ? "a symlink on the way (not followed)"
                     : ErrnoText(node.error()));
      return;
    }
    Take(*node, key, names.empty() ? "" : names.back(), 0);
    return;
  }
  std::string prefix = absl::StrJoin(names.begin(), names.begin() + glob, "/");
  std::string dir_key = absolute ? "/" + prefix : prefix;
  opts.follow_final = true;  // a directory the pattern's names are in
  auto dir = prefix.empty() && absolute ? SysResult<vfs::NodeRef>(v_.root())
             : prefix.empty()           ? SysResult<vfs::NodeRef>(start)
                                        : v_.Lookup(start, dir_key, opts, creds_);
  if (!dir.ok()) {
    Error(key, ErrnoText(dir.error()));
    return;
  }
  size_t before = entries_.size();
  Expand(*dir, names, glob, dir_key, "");
  if (entries_.size() == before && cap_hit_.empty()) Error(key, "no file matches");
}

// names[i] onwards, in dir (reached as key): a pattern is matched against
// dir's entries, a plain name looked up; only the last name may be a file.
void GuestWalk::Expand(const vfs::NodeRef& dir, const std::vector<std::string>& names, size_t i,
                       const std::string& key, const std::string& rel) {
  if (dir->kind() != vfs::NodeKind::kDir || !v_.Permission(*dir, R_OK | X_OK, creds_).ok()) return;
  bool last = i + 1 == names.size();
  std::vector<std::pair<std::string, vfs::NodeRef>> found;
  if (HasGlob(names[i])) {
    for (auto& [name, node] : v_.List(dir)) {
      if (fnmatch(names[i].c_str(), name.c_str(), FNM_PERIOD) == 0) found.emplace_back(name, node);
    }
  } else if (vfs::NodeRef child = v_.Child(dir, names[i])) {
    found.emplace_back(names[i], child);
  }
  for (auto& [name, node] : found) {
    if (!cap_hit_.empty()) return;
    if (last) {
      Take(node, Join(key, name), Join(rel, name), 0);
    } else if (node->kind() == vfs::NodeKind::kDir) {  // never a symlink's target
      Expand(node, names, i + 1, Join(key, name), Join(rel, name));
    }
  }
}

void GuestWalk::Take(const vfs::NodeRef& node, const std::string& key, const std::string& rel,
                     int depth) {
  if (!Room()) return;
  switch (node->kind()) {
    case vfs::NodeKind::kSymlink:
      return Error(key, "a symlink (not followed)");
    case vfs::NodeKind::kFile:
    case vfs::NodeKind::kDir:
      break;
    default:
      return Error(key, "not a regular file or directory");
  }
  bool dir = node->kind() == vfs::NodeKind::kDir;
  if (!v_.Permission(*node, dir ? R_OK | X_OK : R_OK, creds_).ok()) {
    return Error(key, "EACCES: the guest may not read it");
  }
  struct stat st = v_.Stat(*node);
  GuestEntry e;
  e.key = key;
  e.rel = rel;
  e.node = node;
  e.dir = dir;
  e.mode = st.st_mode & 07777;
  if (!dir) {
    e.size = static_cast<uint64_t>(st.st_size);
    uint64_t counted = limits_.file_bytes ? std::min(e.size, limits_.file_bytes) : e.size;
    counted += key.size();
    if (counted > limits_.max_bytes - bytes_) {
      cap_hit_ = absl::StrCat("at most ", HumanBytes(limits_.max_bytes), " in all (", key,
                              " and what follows not taken)");
      return;
    }
    bytes_ += counted;
  }
  entries_.push_back(std::move(e));
  if (!dir) return;
  if (depth >= kMaxDepth) return Error(key, "deeper than 64 directories");
  for (auto& [name, child] : v_.List(node)) {
    if (!cap_hit_.empty()) return;
    Take(child, Join(key, name), Join(rel, name), depth + 1);
  }
}

bool GuestWalk::Room() {
  if (!cap_hit_.empty()) return false;
  if (entries_.size() < limits_.max_entries) return true;
  cap_hit_ = absl::StrCat("at most ", limits_.max_entries, " files");
  return false;
}

void GuestWalk::Error(const std::string& key, const std::string& why) {
  if (!Room()) return;
  bytes_ += std::min<uint64_t>(key.size(), limits_.max_bytes - bytes_);
  GuestEntry e;
  e.key = key;
  e.error = why;
  entries_.push_back(std::move(e));
}

}  // namespace sentry
