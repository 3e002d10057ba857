#include "tests/unit/vfs_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sentry::vfs {
namespace {

std::string MakeTempDir(const char* tag) {
  std::string tmpl = std::string("/tmp/sentry-unit-") + tag + "-XXXXXX";
  char* made = mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr) << strerror(errno);
  return tmpl;
}

void WriteHostFile(const std::string& path, const std::string& data, mode_t mode) {
  std::ofstream(path) << data;
  chmod(path.c_str(), mode);
}

}  // namespace

void VfsTest::SetUp() {
  host_dir_ = MakeTempDir("host");
  lower_dir_ = host_dir_ + "/lower";
  ASSERT_EQ(mkdir(lower_dir_.c_str(), 0755), 0);
  chmod(lower_dir_.c_str(), 0755);
  WriteHostFile(lower_dir_ + "/hello.txt", "host data\n", 0644);
  ASSERT_EQ(mkdir((lower_dir_ + "/dir").c_str(), 0755), 0);
  WriteHostFile(lower_dir_ + "/dir/inner.txt", "inner\n", 0644);
  ASSERT_EQ(mkdir((lower_dir_ + "/empty").c_str(), 0755), 0);
  ASSERT_EQ(symlink("hello.txt", (lower_dir_ + "/link").c_str()), 0);

  store_dir_ = MakeTempDir("store");
  int store_fd = open(store_dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(store_fd, 0);
  auto store = std::make_unique<Store>(UniqueFd(store_fd), getuid(), getgid());

  Attr root_attr;
  root_attr.mode = S_IFDIR | 0755;
  root_attr.ino = 2;
  auto root = std::make_shared<Node>(NodeKind::kDir, root_attr);
  vfs_ = std::make_unique<Vfs>(root, std::move(store));
  vfs_->AddChild(root, "tmp", vfs_->NewNode(NodeKind::kDir, S_IFDIR | 01777, 0, 0));

  int host_fd = open(host_dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(host_fd, 0);
  auto host = std::make_shared<HostDir>(HostDir{UniqueFd(host_fd), host_dir_});
  struct stat st;
  ASSERT_EQ(fstatat(host_fd, "lower", &st, AT_SYMLINK_NOFOLLOW), 0);
  NodeRef lower = vfs_->MakeLowerNode(host, "lower", st);
  ASSERT_NE(lower, nullptr);
  vfs_->AddChild(root, "lower", lower);
}

void VfsTest::TearDown() {
  vfs_.reset();
  std::error_code ec;
  std::filesystem::remove_all(host_dir_, ec);
  std::filesystem::remove_all(store_dir_, ec);
}

SysResult<Resolved> VfsTest::Walk(const std::string& path, const Creds& creds,
                                  const ResolveOpts& opts) {
  return vfs_->Walk(vfs_->root(), path, opts, creds);
}

SysResult<NodeRef> VfsTest::Lookup(const std::string& path, const Creds& creds,
                                   const ResolveOpts& opts) {
  return vfs_->Lookup(vfs_->root(), path, opts, creds);
}

SysResult<NodeRef> VfsTest::LookupAt(const NodeRef& start, const std::string& path,
                                     const ResolveOpts& opts, const Creds& creds) {
  return vfs_->Lookup(start, path, opts, creds);
}

NodeRef VfsTest::Get(const std::string& path) {
  auto r = Lookup(path);
  EXPECT_TRUE(r.ok()) << path << ": " << strerror(r.ok() ? 0 : r.error());
  return r.ok() ? *r : nullptr;
}

SysResult<NodeRef> VfsTest::Mkdir(const std::string& path, mode_t mode, const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(Resolved at, Walk(path, creds));
  return vfs_->Create(at, NodeKind::kDir, mode, creds);
}

SysResult<NodeRef> VfsTest::MakeFile(const std::string& path, const std::string& data, mode_t mode,
                                     const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(Resolved at, Walk(path, creds));
  SYS_ASSIGN_OR_RETURN(NodeRef node, vfs_->Create(at, NodeKind::kFile, mode, creds));
  if (!data.empty()) Write(*node, data);
  return node;
}

SysResult<NodeRef> VfsTest::MakeSymlink(const std::string& path, const std::string& target) {
  SYS_ASSIGN_OR_RETURN(Resolved at, Walk(path, kRoot, {.follow_final = false}));
  return vfs_->Symlink(at, target, kRoot);
}

SysStatus VfsTest::Unlink(const std::string& path, const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(Resolved at, Walk(path, creds, {.follow_final = false}));
  return vfs_->Unlink(at, creds);
}

SysStatus VfsTest::Rmdir(const std::string& path, const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(Resolved at, Walk(path, creds, {.follow_final = false}));
  return vfs_->Rmdir(at, creds);
}

SysStatus VfsTest::Rename(const std::string& from, const std::string& to, unsigned flags,
                          const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(Resolved src, Walk(from, creds, {.follow_final = false}));
  SYS_ASSIGN_OR_RETURN(Resolved dst, Walk(to, creds, {.follow_final = false}));
  return vfs_->Rename(src, dst, flags, creds);
}

SysStatus VfsTest::Link(const std::string& from, const std::string& to, const Creds& creds) {
  SYS_ASSIGN_OR_RETURN(NodeRef node, Lookup(from, creds, {.follow_final = false}));
  SYS_ASSIGN_OR_RETURN(Resolved at, Walk(to, creds, {.follow_final = false}));
  return vfs_->Link(node, at, creds);
}

std::string VfsTest::Read(Node& node) {
  auto fd = vfs_->OpenData(node, O_RDONLY);
  EXPECT_TRUE(fd.ok()) << strerror(fd.ok() ? 0 : fd.error());
  if (!fd.ok()) return "<open failed>";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = pread(fd->get(), buf, sizeof(buf), static_cast<off_t>(out.size()))) > 0) {
    out.append(buf, n);
  }
  return out;
}

void VfsTest::Write(Node& node, const std::string& data) {
  auto fd = vfs_->OpenData(node, O_WRONLY);
  ASSERT_TRUE(fd.ok()) << strerror(fd.ok() ? 0 : fd.error());
  ASSERT_EQ(pwrite(fd->get(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
}

std::vector<std::string> VfsTest::Names(const NodeRef& dir) {
  std::vector<std::string> out;
  for (const auto& [name, node] : vfs_->List(dir)) out.push_back(name);
  return out;
}

NodeRef VfsTest::Looked(const std::string& name) {
  NodeRef dir = vfs_->Child(Get("/lower"), name);
  EXPECT_TRUE(dir && dir->IsDir() && dir->host_dir);
  return dir;
}

std::vector<std::string> VfsTest::Listed(const NodeRef& dir) {
  std::vector<std::string> out;
  for (const auto& e : vfs_->Listing(dir)) out.emplace_back(e.name);
  return out;
}

std::string VfsTest::HostRead(const std::string& rel) const {
  std::ifstream in(lower_dir_ + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool VfsTest::HostExists(const std::string& rel) const {
  struct stat st;
  return lstat((lower_dir_ + "/" + rel).c_str(), &st) == 0;
}

std::vector<std::string> VfsTest::HostNames(const std::string& rel) const {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(lower_dir_ + "/" + rel)) {
    out.push_back(e.path().filename());
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t VfsTest::StoreFileCount() const {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(store_dir_)) ++n;
  return n;
}

}  // namespace sentry::vfs
