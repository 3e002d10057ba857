// libFuzzer target: the VFS path walker (vfs/vfs_walk.cc) and the namespace
// changes that shape what it walks (vfs/vfs_namespace.cc).
//
// Each input is a short program run against a fresh Vfs: an in-memory root
// with /tmp, an upper tree /a/b/c, and /lower, a host directory made once per
// process with files, nested directories and symlinks that point inside,
// upward (../../..), at absolute host paths (/etc/passwd), at themselves, and
// at long names. Ops: walk or look up a fuzzed path from a fuzzed start
// directory with fuzzed ResolveOpts and credentials, mkdir, symlink with a
// fuzzed target, rename (with flags), unlink, rmdir, link, create.
//
// Checked beyond "no crash":
//  - a resolved lower node always lies in the lower root on the host (its
//    host path starts with the lower directory's);
//  - with RESOLVE_BENEATH or RESOLVE_IN_ROOT, what resolved is the start
//    directory or below it;
//  - after every op the tree is a tree: each directory's ".." is the
//    directory holding it and no directory is its own ancestor;
//  - the host's lower directory is never changed.
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "vfs/vfs.h"

namespace sentry::vfs {
namespace {

std::string g_host_dir;   // holds "lower"
std::string g_lower_dir;  // the lower root on the host
std::string g_store_dir;
std::string g_lower_snapshot;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_path_walk invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

// Names, kinds, sizes and modes of every host entry under the lower root.
std::string Snapshot() {
  std::string out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(g_lower_dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0) continue;
    out += it->path().string() + " " + std::to_string(st.st_mode) + " " +
           std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_nsec) + "\n";
  }
  return out;
}

// A new directory under $TMPDIR (run.sh sets one per target and removes it
// afterwards: libFuzzer ends a timed run without running atexit handlers).
std::string TempDir(const char* tag) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/sentry-fuzz-" + tag + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) Fail("mkdtemp", tmpl);
  return tmpl;
}

void MakeHostTree() {
  g_host_dir = TempDir("walk");
  g_lower_dir = g_host_dir + "/lower";
  std::string l = g_lower_dir + "/";
  mkdir(g_lower_dir.c_str(), 0755);
  std::ofstream(l + "hello.txt") << "host data\n";
  mkdir((l + "dir").c_str(), 0755);
  mkdir((l + "dir/sub").c_str(), 0755);
  std::ofstream(l + "dir/inner.txt") << "inner\n";
  mkdir((l + "empty").c_str(), 0755);
  mkdir((l + "private").c_str(), 0700);
  std::ofstream(l + std::string(255, 'n')) << "long name\n";
  symlink("hello.txt", (l + "link").c_str());
  symlink("/etc/passwd", (l + "abs").c_str());
  symlink("../../../../../..", (l + "up").c_str());
  symlink("../..", (l + "dir/sub/up2").c_str());
  symlink("loop", (l + "loop").c_str());
  symlink("dir", (l + "dirlink").c_str());
  symlink(".", (l + "self").c_str());
  symlink("", (l + "dangling").c_str());
  symlink(g_host_dir.c_str(), (l + "hostdir").c_str());
  g_store_dir = TempDir("store");
  g_lower_snapshot = Snapshot();
}

// Removes what the previous input left in the store.
void ClearStore() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(g_store_dir, ec)) {
    std::filesystem::remove_all(e.path(), ec);
  }
}

std::unique_ptr<Vfs> MakeVfs() {
  int store_fd = open(g_store_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto store = std::make_unique<Store>(UniqueFd(store_fd), getuid(), getgid());
  Attr root_attr;
  root_attr.mode = S_IFDIR | 0755;
  root_attr.ino = 2;
  auto root = std::make_shared<Node>(NodeKind::kDir, root_attr);
  auto vfs = std::make_unique<Vfs>(root, std::move(store));
  vfs->AddChild(root, "tmp", vfs->NewNode(NodeKind::kDir, S_IFDIR | 01777, 0, 0));
  NodeRef a = vfs->NewNode(NodeKind::kDir, S_IFDIR | 0755, 0, 0);
  NodeRef b = vfs->NewNode(NodeKind::kDir, S_IFDIR | 0755, 1000, 1000);
  NodeRef c = vfs->NewNode(NodeKind::kDir, S_IFDIR | 0700, 1000, 1000);
  vfs->AddChild(root, "a", a);
  vfs->AddChild(a, "b", b);
  vfs->AddChild(b, "c", c);
  NodeRef rel = vfs->NewNode(NodeKind::kSymlink, S_IFLNK | 0777, 0, 0);
  rel->target = "../../lower/dir";
  vfs->AddChild(b, "rel", rel);
  int host_fd = open(g_host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto host = std::make_shared<HostDir>(HostDir{UniqueFd(host_fd), g_host_dir});
  struct stat st;
  if (fstatat(host_fd, "lower", &st, AT_SYMLINK_NOFOLLOW) != 0) Fail("lower dir gone");
  NodeRef lower = vfs->MakeLowerNode(host, "lower", st);
  if (!lower) Fail("no lower node");
  vfs->AddChild(root, "lower", lower);
  return vfs;
}

bool UnderLower(const std::string& host_path) {
  return host_path == g_lower_dir || host_path.rfind(g_lower_dir + "/", 0) == 0;
}

void CheckHostPaths(const Node& n) {
  if (n.host_dir && !UnderLower(n.host_dir->path)) Fail("lower dir outside", n.host_dir->path);
  if (n.lower_parent && !UnderLower(n.lower_parent->path)) {
    Fail("lower file outside", n.lower_parent->path);
  }
}

// Whether dir is `top` or below it, by ".." links (false past a removed
// directory or a chain longer than any tree here).
bool Below(const NodeRef& dir, const NodeRef& top) {
  NodeRef cur = dir;
  for (int i = 0; i < 10000 && cur; ++i) {
    if (cur == top) return true;
    cur = cur->parent.lock();
  }
  return false;
}

// Every directory reachable from the root holds its children as their ".."
// says, and no directory is met twice (a cycle, or a directory with two names).
void CheckTree(Vfs& vfs) {
  std::set<const Node*> seen;
  std::vector<NodeRef> todo = {vfs.root()};
  while (!todo.empty()) {
    NodeRef dir = todo.back();
    todo.pop_back();
    if (!seen.insert(dir.get()).second) Fail("directory reached twice (cycle)");
    if (seen.size() > 100000) Fail("tree too large");
    CheckHostPaths(*dir);
    for (const auto& [name, child] : dir->children) {
      CheckHostPaths(*child);
      if (!child->IsDir()) continue;
      if (child->parent.lock() != dir) Fail("'..' is not the holder", name);
      if (child->name != name) Fail("dir name mismatch", name);
      todo.push_back(child);
    }
  }
}

const Creds kCreds[] = {{0, 0, {}}, {1000, 1000, {}}, {1001, 1001, {1000}}};

class Program {
 public:
  Program(Vfs& vfs, FuzzedDataProvider& in) : vfs_(vfs), in_(in) {
    dirs_ = {vfs.root()};
    for (const char* p :
         {"/tmp", "/a", "/a/b", "/a/b/c", "/lower", "/lower/dir", "/lower/dir/sub"}) {
      auto r = vfs.Lookup(vfs.root(), p, {}, kCreds[0]);
      if (!r.ok()) Fail("setup lookup", p);
      dirs_.push_back(*r);
    }
  }

  void Run() {
    for (int op = 0; op < 12 && in_.remaining_bytes() > 0; ++op) {
      switch (in_.ConsumeIntegralInRange(0, 9)) {
        case 0:
        case 1:
        case 2:
          DoWalk();
          break;
        case 3: {
          auto at = WalkFor(false);
          if (at.ok()) (void)vfs_.Create(*at, NodeKind::kDir, Mode(), creds_);
          break;
        }
        case 4: {
          auto at = WalkFor(false);
          std::string target = Path();
          if (at.ok()) (void)vfs_.Symlink(*at, target, creds_);
          break;
        }
        case 5: {
          auto from = WalkFor(false);
          auto to = WalkFor(false);
          unsigned flags = in_.ConsumeIntegralInRange<unsigned>(0, 7);
          if (from.ok() && to.ok()) (void)vfs_.Rename(*from, *to, flags, creds_);
          break;
        }
        case 6: {
          auto at = WalkFor(false);
          if (at.ok()) (void)vfs_.Unlink(*at, creds_);
          break;
        }
        case 7: {
          auto at = WalkFor(false);
          if (at.ok()) (void)vfs_.Rmdir(*at, creds_);
          break;
        }
        case 8: {
          auto node = vfs_.Lookup(Start(), Path(), Opts(), creds_);
          auto at = WalkFor(false);
          if (node.ok() && at.ok()) (void)vfs_.Link(*node, *at, creds_);
          break;
        }
        case 9: {
          auto at = WalkFor(true);
          if (at.ok()) (void)vfs_.Create(*at, NodeKind::kFile, Mode(), creds_);
          break;
        }
      }
      CheckTree(vfs_);
    }
  }

 private:
  mode_t Mode() { return in_.ConsumeIntegral<uint16_t>() & 07777; }
  NodeRef Start() { return dirs_[in_.ConsumeIntegralInRange<size_t>(0, dirs_.size() - 1)]; }
  // A guest's path or link target ends at its first NUL (ReadPath reads it
  // so): a NUL inside a name is not something a guest can send.
  std::string Path() {
    std::string p = in_.ConsumeRandomLengthString(kPathMax + 8);
    p.resize(strnlen(p.c_str(), p.size()));
    return p;
  }
  ResolveOpts Opts() {
    uint8_t f = in_.ConsumeIntegral<uint8_t>();
    creds_ = kCreds[(f >> 5) % 3];
    return {.follow_final = (f & 1) != 0,
            .beneath = (f & 2) != 0,
            .in_root = (f & 4) != 0,
            .no_symlinks = (f & 8) != 0,
            .no_magiclinks = (f & 16) != 0};
  }
  SysResult<Resolved> WalkFor(bool follow) {
    ResolveOpts opts = Opts();
    opts.follow_final = follow;
    NodeRef start = Start();
    auto r = vfs_.Walk(start, Path(), opts, creds_);
    if (r.ok()) CheckResolved(start, opts, *r);
    return r;
  }

  void DoWalk() {
    NodeRef start = Start();
    std::string path = Path();
    ResolveOpts opts = Opts();
    auto r = vfs_.Walk(start, path, opts, creds_);
    if (!r.ok()) return;
    CheckResolved(start, opts, *r);
    if (r->node && r->node->IsDir() && dirs_.size() < 32) dirs_.push_back(r->node);
    auto l = vfs_.Lookup(start, path, opts, creds_);
    if (l.ok() != (r->node && !(r->trailing_slash && !r->node->IsDir()))) {
      Fail("Lookup and Walk disagree", path);
    }
  }

  void CheckResolved(const NodeRef& start, const ResolveOpts& opts, const Resolved& r) {
    if (r.node) CheckHostPaths(*r.node);
    if (r.parent) CheckHostPaths(*r.parent);
    if (!(opts.beneath || opts.in_root) || start->removed) return;
    // The directory the result is in: itself for a directory, else its parent.
    NodeRef where = r.node && r.node->IsDir() ? r.node : r.parent;
    if (where && !where->removed && !Below(where, start)) Fail("escaped the start directory");
  }

  Vfs& vfs_;
  FuzzedDataProvider& in_;
  Creds creds_;
  std::vector<NodeRef> dirs_;
};

}  // namespace
}  // namespace sentry::vfs

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sentry::vfs::MakeHostTree();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(sentry::vfs::g_host_dir, ec);
    std::filesystem::remove_all(sentry::vfs::g_store_dir, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sentry::vfs;
  ClearStore();
  FuzzedDataProvider in(data, size);
  {
    std::unique_ptr<Vfs> vfs = MakeVfs();
    Program(*vfs, in).Run();
  }
  if (Snapshot() != g_lower_snapshot) Fail("the host's lower directory changed");
  return 0;
}
