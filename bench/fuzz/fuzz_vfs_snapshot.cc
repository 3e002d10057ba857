// libFuzzer target: the reader of a VFS snapshot (vfs/vfs_snapshot_read.cc),
// the stream a session fork's child supervisor gets from its parent's.
//
// Each input is read into a fresh Vfs (an in-memory root with /tmp and
// /lower, a host directory made once per process). An input that starts
// with 'M' is a list of edits (u32 offset, byte) applied to a valid stream
// of a parent tree made at start (files, links, a symlink, xattrs, a FIFO,
// a socket name, whiteouts, a renamed lower file and directory), so that
// the fuzzer reaches deep into well-formed streams; any other input is a
// stream as is.
//
// Checked beyond "no crash": after a read that succeeds, the tree is a tree
// (each directory's ".." is the directory holding it, none is its own
// ancestor), and every host directory a node holds lies beneath the lower
// directory on the host.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "vfs/vfs_snapshot.h"

namespace sentry::vfs {
namespace {

std::string g_host_dir;  // holds "lower"
std::string g_store_dir;
std::string g_seed;  // a valid stream

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_vfs_snapshot invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

Creds Root() {
  Creds c;
  c.uid = c.gid = 0;
  return c;
}

std::unique_ptr<Vfs> NewTree(const std::string& store_dir) {
  auto store = std::make_unique<Store>(
      UniqueFd(open(store_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), getuid(), getgid());
  Attr a;
  a.mode = S_IFDIR | 0755;
  a.ino = 2;
  auto root = std::make_shared<Node>(NodeKind::kDir, a);
  auto v = std::make_unique<Vfs>(root, std::move(store));
  v->AddChild(root, "tmp", v->NewNode(NodeKind::kDir, S_IFDIR | 01777, 0, 0));
  auto host = std::make_shared<HostDir>(
      HostDir{UniqueFd(open(g_host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), g_host_dir});
  struct stat st;
  if (fstatat(host->fd.get(), "lower", &st, AT_SYMLINK_NOFOLLOW) < 0) Fail("no lower dir");
  v->AddChild(root, "lower", v->MakeLowerNode(host, "lower", st));
  return v;
}

NodeRef Make(Vfs& v, const std::string& path, NodeKind kind, const std::string& data = "") {
  auto at = v.Walk(v.root(), path, {.follow_final = false}, Root());
  if (!at.ok()) Fail("walk", path);
  auto node = v.Create(*at, kind, 0644, Root());
  if (!node.ok()) Fail("create", path);
  if (!data.empty()) {
    auto fd = v.OpenData(**node, O_WRONLY);
    if (!fd.ok() || write(fd->get(), data.data(), data.size()) < 0) Fail("write", path);
  }
  return *node;
}

// The seed: a parent tree with one of each thing the stream carries.
std::string MakeSeed() {
  std::string store = g_store_dir + "-parent";
  mkdir(store.c_str(), 0700);
  auto v = NewTree(store);
  Make(*v, "/tmp/d", NodeKind::kDir);
  NodeRef f = Make(*v, "/tmp/d/f", NodeKind::kFile, "data");
  (void)v->SetXattr(*f, "user.x", "y", 0, Root());
  auto link_at = v->Walk(v->root(), "/tmp/d/g", {}, Root());
  (void)v->Link(f, *link_at, Root());
  auto sym_at = v->Walk(v->root(), "/tmp/s", {.follow_final = false}, Root());
  (void)v->Symlink(*sym_at, "d/f", Root());
  Make(*v, "/tmp/fifo", NodeKind::kFifo);
  auto sock_at = v->Walk(v->root(), "/tmp/sock", {}, Root());
  (void)v->CreateSocket(*sock_at, 0755, Root(), [] { return SysResult<std::string>("s0"); });
  for (const char* gone : {"/lower/a.txt", "/lower/dir/b.txt"}) {
    auto at = v->Walk(v->root(), gone, {.follow_final = false}, Root());
    (void)v->Unlink(*at, Root());
  }
  auto from = v->Walk(v->root(), "/lower/c.txt", {.follow_final = false}, Root());
  auto to = v->Walk(v->root(), "/tmp/c.txt", {.follow_final = false}, Root());
  (void)v->Rename(*from, *to, 0, Root());
  from = v->Walk(v->root(), "/lower/dir/sub", {.follow_final = false}, Root());
  to = v->Walk(v->root(), "/tmp/sub", {.follow_final = false}, Root());
  (void)v->Rename(*from, *to, 0, Root());
  int fd = memfd_create("seed", MFD_CLOEXEC);
  if (!WriteSnapshot(*v, fd).ok()) Fail("seed");
  std::string out(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
  if (pread(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) Fail("seed read");
  close(fd);
  v.reset();
  std::filesystem::remove_all(store);
  return out;
}

void CheckTree(Vfs& v) {
  std::vector<NodeRef> dirs{v.root()};
  std::set<const Node*> seen;
  while (!dirs.empty()) {
    NodeRef d = dirs.back();
    dirs.pop_back();
    if (!seen.insert(d.get()).second) Fail("a directory is reached twice");
    auto check_host = [](const std::shared_ptr<HostDir>& h) {
      if (!h) return;
      char buf[4096];
      std::string link = "/proc/self/fd/" + std::to_string(h->fd.get());
      ssize_t n = readlink(link.c_str(), buf, sizeof(buf));
      if (n <= 0 || std::string(buf, n).rfind(g_host_dir + "/lower", 0) != 0) {
        Fail("a host directory outside the lower layer", std::string(buf, n > 0 ? n : 0));
      }
    };
    check_host(d->host_dir);
    for (const auto& [name, child] : d->children) {
      if (!child) Fail("a null child", name);
      if (child->IsDir()) {
        if (child->parent.lock() != d) Fail("'..' is not the holder", name);
        dirs.push_back(child);
      }
      if (child->IsLowerFile()) check_host(child->lower_parent);
    }
  }
}

void ClearStore() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(g_store_dir, ec)) {
    std::filesystem::remove_all(e.path(), ec);
  }
}

}  // namespace
}  // namespace sentry::vfs

using namespace sentry::vfs;  // NOLINT

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/fuzz-vfs-snapshot-XXXXXX";
  if (!mkdtemp(tmpl)) Fail("mkdtemp");
  g_host_dir = tmpl;
  std::string lower = g_host_dir + "/lower";
  std::filesystem::create_directories(lower + "/dir/sub/deep");
  for (const char* f : {"a.txt", "c.txt", "dir/b.txt", "dir/sub/deep/e.txt"}) {
    std::ofstream(lower + "/" + f) << f;
  }
  g_store_dir = g_host_dir + "/store";
  mkdir(g_store_dir.c_str(), 0700);
  g_seed = MakeSeed();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(g_host_dir, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string stream;
  if (size > 0 && data[0] == 'M') {
    stream = g_seed;
    for (size_t i = 1; i + 5 <= size && !stream.empty(); i += 5) {
      uint32_t off;
      std::memcpy(&off, data + i, 4);
      stream[off % stream.size()] = static_cast<char>(data[i + 4]);
    }
  } else {
    stream.assign(reinterpret_cast<const char*>(data), size);
  }
  int fd = memfd_create("stream", MFD_CLOEXEC);
  if (fd < 0 || write(fd, stream.data(), stream.size()) != static_cast<ssize_t>(stream.size())) {
    Fail("memfd");
  }
  lseek(fd, 0, SEEK_SET);
  {
    auto v = NewTree(g_store_dir);
    SnapshotResult r = ReadSnapshot(*v, fd);
    if (r.ok()) CheckTree(*v);
  }
  close(fd);
  ClearStore();
  return 0;
}
