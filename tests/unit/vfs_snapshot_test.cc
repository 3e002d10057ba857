// The VFS copy of a session fork (vfs/vfs_snapshot.h): a tree built through
// the Vfs's own calls, written to a socket and read into a fresh Vfs over the
// same lower layer with a store of its own, then checked node by node; the
// copies' data is their own; a truncated or mangled stream is an error; the
// child's --disk and metadata budgets are kept.
#include "vfs/vfs_snapshot.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

void AddBaseExtras(Vfs& v, const std::string& hostname) {
  NodeRef dev = v.NewNode(NodeKind::kDir, S_IFDIR | 0755, 0, 0);
  v.AddChild(v.root(), "dev", dev);
  NodeRef null = v.NewNode(NodeKind::kDevice, S_IFCHR | 0666, 0, 0);
  null->device_path = "/dev/null";
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  null->attr().rdev = st.st_rdev;
  v.AddChild(dev, "null", null);
  NodeRef etc = v.NewNode(NodeKind::kDir, S_IFDIR | 0755, 0, 0);
  v.AddChild(v.root(), "etc", etc);
  NodeRef name = v.NewNode(NodeKind::kSynthetic, S_IFREG | 0644, 0, 0);
  name->generate = [hostname] { return hostname + "\n"; };
  v.AddChild(etc, "hostname", name);
}

class VfsSnapshotTest : public VfsTest {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    VfsTest::SetUp();
    // More host entries, looked up lazily (after the fixture's lower node).
    std::filesystem::create_directories(lower_dir_ + "/a/b");
    std::filesystem::create_directories(lower_dir_ + "/sub/deep");
    std::ofstream(lower_dir_ + "/a/b/c.txt") << "deep\n";
    std::ofstream(lower_dir_ + "/sub/deep/x.txt") << "x\n";
    std::ofstream(lower_dir_ + "/keep.txt") << "keep\n";
    std::ofstream(lower_dir_ + "/moveme.txt") << "moved lower\n";
    AddBaseExtras(*vfs_, "parent");
  }
  void TearDown() override {
    children_.clear();
    std::error_code ec;
    for (const std::string& d : child_stores_) std::filesystem::remove_all(d, ec);
    VfsTest::TearDown();
  }

  // A Vfs as a new sandbox's supervisor builds it from the same tree
  // configuration: the fixture's tree over the same lower directory, its own
  // store, its own generated hostname.
  Vfs& Fresh(uint64_t metadata_limit = 0) {
    char tmpl[] = "/tmp/sentry-unit-childstore-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    child_stores_.push_back(tmpl);
    auto store = std::make_unique<Store>(UniqueFd(open(tmpl, O_PATH | O_DIRECTORY | O_CLOEXEC)),
                                         getuid(), getgid());
    Attr root_attr;
    root_attr.mode = S_IFDIR | 0755;
    root_attr.ino = 2;
    auto root = std::make_shared<Node>(NodeKind::kDir, root_attr);
    auto v = std::make_unique<Vfs>(root, std::move(store));
    if (metadata_limit) v->set_metadata_limit(metadata_limit);
    v->AddChild(root, "tmp", v->NewNode(NodeKind::kDir, S_IFDIR | 01777, 0, 0));
    auto host = std::make_shared<HostDir>(
        HostDir{UniqueFd(open(host_dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), host_dir_});
    struct stat st;
    EXPECT_EQ(fstatat(host->fd.get(), "lower", &st, AT_SYMLINK_NOFOLLOW), 0);
    v->AddChild(root, "lower", v->MakeLowerNode(host, "lower", st));
    AddBaseExtras(*v, "child");
    children_.push_back(std::move(v));
    return *children_.back();
  }

  // Writes from's tree into a socket on a thread of its own and reads it into to.
  SnapshotResult Copy(Vfs& from, Vfs& to, const SnapshotReadOptions& opts = {},
                      SnapshotResult* written = nullptr) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    SnapshotResult w;
    std::thread writer([&] {
      w = WriteSnapshot(from, sv[0]);
      shutdown(sv[0], SHUT_WR);
    });
    SnapshotResult r = ReadSnapshot(to, sv[1], opts);
    shutdown(sv[1], SHUT_RDWR);  // a reader that stopped early ends the writer
    writer.join();
    close(sv[0]);
    close(sv[1]);
    if (written) *written = w;
    return r;
  }

  // The stream as bytes (in a memfd, read back from its start).
  std::string Stream(Vfs& from) {
    int fd = memfd_create("snapshot", MFD_CLOEXEC);
    EXPECT_TRUE(WriteSnapshot(from, fd).ok());
    std::string out(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
    EXPECT_EQ(pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
    close(fd);
    return out;
  }
  SnapshotResult ReadBytes(Vfs& to, const std::string& bytes) {
    int fd = memfd_create("snapshot", MFD_CLOEXEC);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    lseek(fd, 0, SEEK_SET);
    SnapshotResult r = ReadSnapshot(to, fd);
    close(fd);
    return r;
  }

  static SysResult<NodeRef> In(Vfs& v, const std::string& path, bool follow = false) {
    return v.Lookup(v.root(), path, {.follow_final = follow}, kRoot);
  }
  static NodeRef At(Vfs& v, const std::string& path) {
    auto r = In(v, path);
    EXPECT_TRUE(r.ok()) << path;
    return r.ok() ? *r : nullptr;
  }
  static std::string ReadIn(Vfs& v, const std::string& path) {
    auto node = In(v, path, true);
    if (!node.ok()) return "<" + ErrnoOf(node) + ">";
    auto fd = v.OpenData(**node, O_RDONLY);
    if (!fd.ok()) return "<open " + ErrnoOf(fd) + ">";
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = pread(fd->get(), buf, sizeof(buf), static_cast<off_t>(out.size()))) > 0) {
      out.append(buf, n);
    }
    return out;
  }
  static void WriteIn(Vfs& v, const std::string& path, const std::string& data) {
    auto node = In(v, path, true);
    ASSERT_TRUE(node.ok()) << path;
    auto fd = v.OpenData(**node, O_WRONLY | O_TRUNC);
    ASSERT_TRUE(fd.ok()) << path;
    ASSERT_EQ(ftruncate(fd->get(), 0), 0);
    ASSERT_EQ(pwrite(fd->get(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  }
  static std::vector<std::string> NamesIn(Vfs& v, const std::string& path) {
    std::vector<std::string> out;
    auto dir = In(v, path, true);
    if (!dir.ok()) return {"<" + ErrnoOf(dir) + ">"};
    for (const auto& [name, node] : v.List(*dir)) out.push_back(name);
    return out;
  }

  // Every stat field the copy keeps (an upper file's ctime is the copy's).
  static void ExpectSameStat(Vfs& a, Vfs& b, const std::string& path) {
    SCOPED_TRACE(path);
    auto na = In(a, path);
    auto nb = In(b, path);
    ASSERT_TRUE(na.ok() && nb.ok()) << ErrnoOf(na) << " " << ErrnoOf(nb);
    struct stat sa = a.Stat(**na), sb = b.Stat(**nb);
    EXPECT_EQ(sa.st_mode, sb.st_mode);
    EXPECT_EQ(sa.st_uid, sb.st_uid);
    EXPECT_EQ(sa.st_gid, sb.st_gid);
    EXPECT_EQ(sa.st_ino, sb.st_ino);
    EXPECT_EQ(sa.st_nlink, sb.st_nlink);
    EXPECT_EQ(sa.st_size, sb.st_size);
    EXPECT_EQ(sa.st_rdev, sb.st_rdev);
    EXPECT_EQ(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
    EXPECT_EQ(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
    // A lower node nothing changed is looked up again: its atime is the host's now.
    if (!(*na)->IsCached()) {
      EXPECT_EQ(sa.st_atim.tv_sec, sb.st_atim.tv_sec);
    }
    if (!(*na)->IsUpperFile()) {
      EXPECT_EQ(sa.st_ctim.tv_nsec, sb.st_ctim.tv_nsec);
    }
    EXPECT_EQ(a.ListXattr(**na), b.ListXattr(**nb));
    for (const auto& [name, value] : (*na)->xattrs) {
      auto got = b.GetXattr(**nb, name, kRoot);
      EXPECT_TRUE(got.ok() && *got == value) << name;
    }
  }

  // The tree of the main test, built with the Vfs's own calls.
  void BuildTree(bool big_file = true) {
    ASSERT_TRUE(Mkdir("/tmp/d", 0750).ok());
    ASSERT_TRUE(v().Chown(*Get("/tmp/d"), 1000, 1000, kRoot).ok());
    ASSERT_TRUE(MakeFile("/tmp/d/a", "alpha", 0640).ok());
    timespec times[2] = {{1000, 1}, {2000, 2}};
    ASSERT_TRUE(v().Utimens(*Get("/tmp/d/a"), times, kRoot).ok());
    ASSERT_TRUE(Link("/tmp/d/a", "/tmp/d/a2").ok());
    ASSERT_TRUE(MakeSymlink("/tmp/d/s", "a").ok());
    ASSERT_TRUE(v().SetXattr(*Get("/tmp/d/a"), "user.color", "blue", 0, kRoot).ok());
    ASSERT_TRUE(MakeFile("/tmp/d/exec", "#!/bin/sh\n", 0755).ok());
    ASSERT_TRUE(MakeFile("/tmp/empty").ok());
    // The lower layer: a removed file (whiteout), a copied-up file, a lower
    // file's metadata changed without its data, a renamed lower file and
    // directory, a change deep down, an opaque directory.
    ASSERT_TRUE(Unlink("/lower/hello.txt").ok());
    Write(*Get("/lower/dir/inner.txt"), "changed\n");
    ASSERT_TRUE(v().Chmod(*Get("/lower/keep.txt"), 0600, kRoot).ok());
    ASSERT_TRUE(v().SetXattr(*Get("/lower/keep.txt"), "user.k", "v", 0, kRoot).ok());
    ASSERT_TRUE(Rename("/lower/moveme.txt", "/tmp/moved.txt").ok());
    ASSERT_TRUE(Rename("/lower/empty", "/tmp/emptymoved").ok());
    ASSERT_TRUE(v().Chmod(*Get("/lower/a/b/c.txt"), 0604, kRoot).ok());
    ASSERT_TRUE(Unlink("/lower/sub/deep/x.txt").ok());
    ASSERT_TRUE(Rmdir("/lower/sub/deep").ok());
    ASSERT_TRUE(Rmdir("/lower/sub").ok());
    ASSERT_TRUE(Mkdir("/lower/sub", 0700).ok());
    ASSERT_TRUE(MakeFile("/lower/sub/new.txt", "new\n").ok());
    ASSERT_TRUE(MakeFile("/lower/upper.txt", "upper in a lower dir\n").ok());
    ASSERT_TRUE(Link("/lower/keep.txt", "/tmp/keeplink").ok());
    // A FIFO and a bound unix socket.
    auto fifo_at = Walk("/tmp/fifo");
    ASSERT_TRUE(fifo_at.ok() && v().Create(*fifo_at, NodeKind::kFifo, 0620, kRoot).ok());
    sock_ = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, "/tmp/sock");
    auto sock_at = Walk("/tmp/sock");
    ASSERT_TRUE(sock_at.ok());
    auto bound = v().CreateSocket(*sock_at, 0755, kRoot, [&]() -> SysResult<std::string> {
      return v().store().BindSocket(sock_.get(), addr, sizeof(addr));
    });
    ASSERT_TRUE(bound.ok()) << ErrnoOf(bound);
    ASSERT_EQ(listen(sock_.get(), 1), 0);
    // A large file, beyond one buffer of the stream.
    if (!big_file) return;
    std::string big(300000, '\0');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 251);
    ASSERT_TRUE(MakeFile("/tmp/big.bin", big).ok());
  }

  std::vector<std::string> child_stores_;
  std::vector<std::unique_ptr<Vfs>> children_;
  UniqueFd sock_;
};

TEST_F(VfsSnapshotTest, CopiesEveryPropertyOfTheTree) {
  BuildTree();
  Vfs& c = Fresh();
  SnapshotResult w;
  SnapshotResult r = Copy(v(), c, {}, &w);
  ASSERT_TRUE(w.ok()) << w.error;
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.stats.stream_bytes, w.stats.stream_bytes);
  EXPECT_EQ(r.stats.upper_files, w.stats.upper_files);
  EXPECT_EQ(r.stats.data_bytes, w.stats.data_bytes);
  EXPECT_GE(r.stats.data_bytes, 300000u);

  for (const char* p : {"/tmp",
                        "/tmp/d",
                        "/tmp/d/a",
                        "/tmp/d/a2",
                        "/tmp/d/s",
                        "/tmp/d/exec",
                        "/tmp/empty",
                        "/lower",
                        "/lower/dir",
                        "/lower/dir/inner.txt",
                        "/lower/keep.txt",
                        "/tmp/keeplink",
                        "/tmp/moved.txt",
                        "/tmp/emptymoved",
                        "/lower/a",
                        "/lower/a/b",
                        "/lower/a/b/c.txt",
                        "/lower/sub",
                        "/lower/sub/new.txt",
                        "/lower/upper.txt",
                        "/lower/link",
                        "/tmp/fifo",
                        "/tmp/sock",
                        "/tmp/big.bin",
                        "/dev/null"}) {
    ExpectSameStat(v(), c, p);
  }
  // Data, the parent's; links as links.
  EXPECT_EQ(ReadIn(c, "/tmp/d/a"), "alpha");
  EXPECT_EQ(ReadIn(c, "/tmp/d/s"), "alpha");
  EXPECT_EQ(At(c, "/tmp/d/a"), At(c, "/tmp/d/a2"));
  EXPECT_EQ(At(c, "/tmp/d/a")->nlink, 2u);
  EXPECT_EQ(At(c, "/tmp/d/s")->target, "a");
  EXPECT_EQ(ReadIn(c, "/tmp/big.bin"), ReadIn(v(), "/tmp/big.bin"));
  EXPECT_EQ(ReadIn(c, "/lower/dir/inner.txt"), "changed\n");
  EXPECT_EQ(HostRead("dir/inner.txt"), "inner\n");
  EXPECT_EQ(ReadIn(c, "/tmp/moved.txt"), "moved lower\n");
  EXPECT_TRUE(At(c, "/tmp/moved.txt")->IsLowerFile());  // still the host's file
  EXPECT_EQ(At(c, "/tmp/keeplink"), At(c, "/lower/keep.txt"));
  EXPECT_EQ(ReadIn(c, "/lower/a/b/c.txt"), "deep\n");
  EXPECT_EQ(ReadIn(c, "/lower/link"), "<ENOENT>");  // its target was removed
  // Whiteouts and the opaque directory.
  EXPECT_EQ(ErrnoOf(In(c, "/lower/hello.txt")), "ENOENT");
  EXPECT_EQ(ErrnoOf(In(c, "/lower/moveme.txt")), "ENOENT");
  EXPECT_EQ(ErrnoOf(In(c, "/lower/empty")), "ENOENT");
  EXPECT_EQ(NamesIn(c, "/lower"), NamesIn(v(), "/lower"));
  EXPECT_EQ(NamesIn(c, "/lower/sub"), std::vector<std::string>{"new.txt"});
  EXPECT_EQ(NamesIn(c, "/tmp"), NamesIn(v(), "/tmp"));
  EXPECT_EQ(NamesIn(c, "/tmp/d"), (std::vector<std::string>{"a", "a2", "exec", "s"}));
  // The executable bit reaches the child's store file (exec needs it there).
  struct stat st;
  ASSERT_EQ(fstatat(c.store().dir_fd(), At(c, "/tmp/d/exec")->store_name.c_str(), &st, 0), 0);
  EXPECT_TRUE(st.st_mode & S_IXOTH);
  // A FIFO of the child's own store, empty.
  NodeRef fifo = At(c, "/tmp/fifo");
  ASSERT_EQ(fifo->kind(), NodeKind::kFifo);
  ASSERT_EQ(fstatat(c.store().dir_fd(), fifo->store_name.c_str(), &st, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // The socket is a dead name: no store socket behind it, which
  // syscalls/socket_common.cc's StoreAddrOf answers with ECONNREFUSED.
  NodeRef sock = At(c, "/tmp/sock");
  EXPECT_EQ(sock->kind(), NodeKind::kSocket);
  EXPECT_TRUE(sock->store_name.empty());
  EXPECT_FALSE(At(v(), "/tmp/sock")->store_name.empty());
  // The child's own generated files and devices.
  EXPECT_EQ(ReadIn(c, "/etc/hostname"), "child\n");
  EXPECT_EQ(ReadIn(v(), "/etc/hostname"), "parent\n");
  EXPECT_EQ(At(c, "/dev/null")->device_path, "/dev/null");
  // New nodes of the child get inode numbers the copy does not use.
  auto fresh_at = c.Walk(c.root(), "/tmp/new", {}, kRoot);
  ASSERT_TRUE(fresh_at.ok());
  auto made = c.Create(*fresh_at, NodeKind::kFile, 0644, kRoot);
  ASSERT_TRUE(made.ok());
  EXPECT_GT((*made)->attr().ino, At(c, "/tmp/big.bin")->attr().ino);
  // The metadata budget is charged again, within a few names of the parent's.
  EXPECT_GT(c.metadata_bytes(), v().metadata_bytes() / 2);
  EXPECT_LT(c.metadata_bytes(), v().metadata_bytes() * 2);
}

TEST_F(VfsSnapshotTest, LaterWritesAreNotSeenByTheOther) {
  BuildTree();
  Vfs& c = Fresh();
  ASSERT_TRUE(Copy(v(), c).ok());
  WriteIn(v(), "/tmp/d/a", "parent's");
  WriteIn(c, "/tmp/d/a", "child's");
  EXPECT_EQ(ReadIn(v(), "/tmp/d/a2"), "parent's");
  EXPECT_EQ(ReadIn(c, "/tmp/d/a2"), "child's");
  // The copy's link count is its names: one unlink leaves the other's data.
  auto a_at = c.Walk(c.root(), "/tmp/d/a", {.follow_final = false}, kRoot);
  ASSERT_TRUE(a_at.ok());
  ASSERT_TRUE(c.Unlink(*a_at, kRoot).ok());
  EXPECT_EQ(At(c, "/tmp/d/a2")->nlink, 1u);
  EXPECT_EQ(ReadIn(c, "/tmp/d/a2"), "child's");
  // A lower file first written after the fork is copied up on each side.
  WriteIn(c, "/lower/keep.txt", "child keep");
  EXPECT_EQ(ReadIn(v(), "/lower/keep.txt"), "keep\n");
  EXPECT_EQ(ReadIn(c, "/tmp/keeplink"), "child keep");
  // Names made or removed on one side only.
  ASSERT_TRUE(MakeFile("/tmp/only-parent").ok());
  auto big_at = c.Walk(c.root(), "/tmp/big.bin", {.follow_final = false}, kRoot);
  ASSERT_TRUE(big_at.ok());
  ASSERT_TRUE(c.Unlink(*big_at, kRoot).ok());
  EXPECT_EQ(ErrnoOf(In(c, "/tmp/only-parent")), "ENOENT");
  EXPECT_EQ(ReadIn(v(), "/tmp/big.bin").size(), 300000u);
  // No store file is shared: the stores are different host directories and
  // each side's file has its own inode.
  struct stat sp, sc;
  ASSERT_EQ(fstatat(v().store().dir_fd(), Get("/tmp/d/a")->store_name.c_str(), &sp, 0), 0);
  ASSERT_EQ(fstatat(c.store().dir_fd(), At(c, "/tmp/d/a2")->store_name.c_str(), &sc, 0), 0);
  EXPECT_FALSE(sp.st_dev == sc.st_dev && sp.st_ino == sc.st_ino);
}

TEST_F(VfsSnapshotTest, ACopyOfACopyIsTheSame) {
  BuildTree();
  Vfs& c1 = Fresh();
  ASSERT_TRUE(Copy(v(), c1).ok());
  Vfs& c2 = Fresh();
  SnapshotResult r = Copy(c1, c2);
  ASSERT_TRUE(r.ok()) << r.error;
  for (const char* p : {"/tmp/d/a", "/tmp/moved.txt", "/lower/sub/new.txt", "/lower/keep.txt",
                        "/tmp/emptymoved", "/lower/a/b/c.txt"}) {
    ExpectSameStat(v(), c2, p);
  }
  EXPECT_EQ(NamesIn(c2, "/lower"), NamesIn(v(), "/lower"));
  EXPECT_EQ(ReadIn(c2, "/tmp/big.bin"), ReadIn(v(), "/tmp/big.bin"));
}

TEST_F(VfsSnapshotTest, AnUnchangedLowerTreeIsNotWritten) {
  // Host lookups alone (a stat of each lower file) leave nothing to copy
  // beneath /lower but its own record.
  for (const char* p : {"/lower/hello.txt", "/lower/dir/inner.txt", "/lower/a/b/c.txt"}) Get(p);
  std::string bytes = Stream(v());
  EXPECT_EQ(bytes.find("inner.txt"), std::string::npos);
  EXPECT_EQ(bytes.find("c.txt"), std::string::npos);
  Vfs& c = Fresh();
  ASSERT_TRUE(ReadBytes(c, bytes).ok());
  EXPECT_EQ(ReadIn(c, "/lower/a/b/c.txt"), "deep\n");
  EXPECT_EQ(NamesIn(c, "/lower"), NamesIn(v(), "/lower"));
}

TEST_F(VfsSnapshotTest, AMalformedStreamIsAnErrorNeverACrash) {
  BuildTree(/*big_file=*/false);
  std::string good = Stream(v());
  ASSERT_TRUE(ReadBytes(Fresh(), good).ok());
  // Every truncation fails (a stream that stops is never a whole tree).
  size_t step = std::max<size_t>(1, good.size() / 150);
  for (size_t len = 0; len < good.size(); len += step) {
    SnapshotResult r = ReadBytes(Fresh(), good.substr(0, len));
    EXPECT_FALSE(r.ok()) << "prefix of " << len;
    children_.clear();  // their stores go at TearDown
  }
  EXPECT_FALSE(ReadBytes(Fresh(), good.substr(0, good.size() - 1)).ok());
  // Bad magic, and a string length far past its bound right after the root's tag.
  std::string bad = good;
  bad[0] ^= 1;
  EXPECT_NE(ReadBytes(Fresh(), bad).error.find("not a VFS snapshot"), std::string::npos);
  bad = good;
  uint32_t huge = 0xfffffff0;
  std::memcpy(&bad[8 + 4 + 8 + 1], &huge, 4);
  EXPECT_FALSE(ReadBytes(Fresh(), bad).ok());
  // Random byte changes: an error or a tree, never a crash or a hang.
  std::mt19937 rng(26);
  for (int i = 0; i < 150; ++i) {
    std::string m = good;
    int changes = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < changes; ++k) m[rng() % m.size()] = static_cast<char>(rng());
    (void)ReadBytes(Fresh(), m);
    children_.clear();
  }
}

TEST_F(VfsSnapshotTest, TheChildsDiskBudgetIsKept) {
  ASSERT_TRUE(MakeFile("/tmp/two-mib", std::string(2 << 20, 'x')).ok());
  Vfs& c = Fresh();
  SnapshotResult r = Copy(v(), c, {.disk_bytes = 1 << 20});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("need 2 MiB in the child's store, which has 1 MiB free (--disk)"),
            std::string::npos)
      << r.error;
  EXPECT_EQ(ErrnoOf(In(c, "/tmp/two-mib")), "ENOENT");  // refused before any copy
  EXPECT_TRUE(Copy(v(), Fresh(), {.disk_bytes = 3 << 20}).ok());
}

TEST_F(VfsSnapshotTest, TheChildsMetadataBudgetIsKept) {
  for (int i = 0; i < 1200; ++i) ASSERT_TRUE(Mkdir("/tmp/d" + std::to_string(i)).ok());
  ASSERT_GT(v().metadata_bytes(), 1u << 20);
  SnapshotResult r = Copy(v(), Fresh(1 << 20));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("metadata budget"), std::string::npos) << r.error;
  EXPECT_TRUE(Copy(v(), Fresh(4 << 20)).ok());
}

}  // namespace
}  // namespace sentry::vfs
