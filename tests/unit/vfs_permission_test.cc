// Permission checks (generic_permission's owner/group/other order, root's
// bypass) and hard links.
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

class PermissionTest : public VfsTest {
 protected:
  void SetUp() override {
    VfsTest::SetUp();
    ASSERT_TRUE(Mkdir("/p", 0755).ok());
    root_file_ = Must(MakeFile("/p/f", "root's", 0644));
  }
  SysStatus May(const std::string& path, int may, const Creds& creds) {
    return v().Permission(*Get(path), may, creds);
  }
  NodeRef root_file_;
};

TEST_F(PermissionTest, UserCannotWriteARootFile) {
  EXPECT_EQ(ErrnoOf(May("/p/f", W_OK, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(May("/p/f", R_OK, kUser)), "OK");
  EXPECT_EQ(ErrnoOf(May("/p/f", R_OK | W_OK, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(May("/p/f", X_OK, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(May("/lower/hello.txt", W_OK, kUser)),
            getuid() == 1000 ? "OK" : "EACCES");  // the host's owner and mode
}

TEST_F(PermissionTest, RootBypassesReadAndWrite) {
  ASSERT_EQ(ErrnoOf(v().Chmod(*root_file_, 0, kRoot)), "OK");
  EXPECT_EQ(ErrnoOf(May("/p/f", R_OK | W_OK, kRoot)), "OK");
  // Exec needs some x bit even for root; directories are always searchable.
  EXPECT_EQ(ErrnoOf(May("/p/f", X_OK, kRoot)), "EACCES");
  ASSERT_EQ(ErrnoOf(v().Chmod(*root_file_, 0100, kRoot)), "OK");
  EXPECT_EQ(ErrnoOf(May("/p/f", X_OK, kRoot)), "OK");
  ASSERT_EQ(ErrnoOf(Mkdir("/p/closed", 0)), "OK");
  EXPECT_EQ(ErrnoOf(May("/p/closed", R_OK | W_OK | X_OK, kRoot)), "OK");
  EXPECT_EQ(ErrnoOf(MakeFile("/p/closed/in")), "OK");
  EXPECT_EQ(ErrnoOf(MakeFile("/p/closed/in2", "", 0644, kUser)), "EACCES");
}

TEST_F(PermissionTest, OwnerGroupOtherInThatOrder) {
  NodeRef f = Must(MakeFile("/tmp/g", "", 0604, kUser));          // owner r, group none, other r
  ASSERT_EQ(ErrnoOf(v().Chmod(*f, 0460, kUser)), "OK");           // owner r, group rw, other none
  EXPECT_EQ(ErrnoOf(v().Permission(*f, W_OK, kUser)), "EACCES");  // owner bits only
  EXPECT_EQ(ErrnoOf(v().Permission(*f, W_OK, As(1001, 1000))), "OK");
  EXPECT_EQ(ErrnoOf(v().Permission(*f, W_OK, As(1001, 1001, {1000}))), "OK");
  EXPECT_EQ(ErrnoOf(v().Permission(*f, R_OK, kOther)), "EACCES");
}

TEST_F(PermissionTest, CreatingAndRemovingNeedWriteAndSearchOnTheDir) {
  EXPECT_EQ(ErrnoOf(MakeFile("/p/new", "", 0644, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Mkdir("/p/newdir", 0755, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Unlink("/p/f", kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Link("/p/f", "/p/f2", kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Unlink("/lower/hello.txt", kUser)), getuid() == 1000 ? "OK" : "EACCES");
  ASSERT_EQ(ErrnoOf(Mkdir("/p/wx", 0733)), "OK");  // others may write and search, not list
  EXPECT_EQ(ErrnoOf(MakeFile("/p/wx/mine", "", 0644, kUser)), "OK");
  ASSERT_EQ(ErrnoOf(Mkdir("/p/w", 0722)), "OK");  // write without search
  EXPECT_EQ(ErrnoOf(MakeFile("/p/w/mine", "", 0644, kUser)), "EACCES");
}

TEST_F(PermissionTest, NewNodesBelongToTheCaller) {
  NodeRef f = Must(MakeFile("/tmp/owned", "", 0640, kUser));
  struct stat st = v().Stat(*f);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 1000u);
  EXPECT_EQ(st.st_mode, S_IFREG | 0640u);
  EXPECT_EQ(ErrnoOf(v().Chmod(*f, 0666, kOther)), "EPERM");
  EXPECT_EQ(ErrnoOf(v().Chown(*f, 1001, -1, kUser)), "EPERM");
  EXPECT_EQ(ErrnoOf(v().Chown(*f, 1001, -1, kRoot)), "OK");
}

class HardLinkTest : public VfsTest {};

TEST_F(HardLinkTest, CountsNamesAndKeepsDataForTheOther) {
  NodeRef a = Must(MakeFile("/tmp/a", "shared data"));
  EXPECT_EQ(a->nlink, 1u);
  ASSERT_EQ(ErrnoOf(Link("/tmp/a", "/tmp/b")), "OK");
  EXPECT_EQ(Get("/tmp/b"), a);
  EXPECT_EQ(v().Stat(*a).st_nlink, 2u);
  ASSERT_EQ(ErrnoOf(Link("/tmp/b", "/tmp/c")), "OK");
  EXPECT_EQ(v().Stat(*a).st_nlink, 3u);
  ASSERT_EQ(ErrnoOf(Unlink("/tmp/a")), "OK");
  ASSERT_EQ(ErrnoOf(Unlink("/tmp/c")), "OK");
  EXPECT_EQ(v().Stat(*a).st_nlink, 1u);
  EXPECT_EQ(ErrnoOf(Lookup("/tmp/a")), "ENOENT");
  EXPECT_EQ(Read(*Get("/tmp/b")), "shared data");
  Write(*Get("/tmp/b"), "SHARED");
  EXPECT_EQ(Read(*a), "SHARED data");
  EXPECT_EQ(StoreFileCount(), 1u);
  // The last name gone, the data goes with it.
  ASSERT_EQ(ErrnoOf(Unlink("/tmp/b")), "OK");
  EXPECT_EQ(a->nlink, 0u);
  EXPECT_EQ(StoreFileCount(), 0u);
}

TEST_F(HardLinkTest, OpenFdKeepsDataAfterTheLastName) {
  NodeRef a = Must(MakeFile("/tmp/a", "still here"));
  auto fd = v().OpenData(*a, O_RDONLY);
  ASSERT_TRUE(fd.ok());
  ASSERT_EQ(ErrnoOf(Unlink("/tmp/a")), "OK");
  char buf[32] = {};
  EXPECT_EQ(pread(fd->get(), buf, sizeof(buf), 0), 10);
  EXPECT_STREQ(buf, "still here");
  // A file with no name left cannot get one back through link().
  EXPECT_EQ(ErrnoOf(v().Link(a, Must(Walk("/tmp/again")), kRoot)), "ENOENT");
}

TEST_F(HardLinkTest, Errors) {
  ASSERT_TRUE(MakeFile("/tmp/a").ok());
  ASSERT_TRUE(Mkdir("/tmp/d").ok());
  EXPECT_EQ(ErrnoOf(Link("/tmp/d", "/tmp/d2")), "EPERM");
  EXPECT_EQ(ErrnoOf(Link("/tmp/a", "/tmp/d")), "EEXIST");
  EXPECT_EQ(ErrnoOf(Link("/tmp/a", "/tmp/new/")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Link("/tmp/a", "/tmp/nodir/x")), "ENOENT");
}

TEST_F(HardLinkTest, LinkOfALowerFile) {
  ASSERT_EQ(ErrnoOf(Link("/lower/hello.txt", "/tmp/h")), "OK");
  EXPECT_EQ(Get("/tmp/h"), Get("/lower/hello.txt"));
  Write(*Get("/tmp/h"), "HOST");
  EXPECT_EQ(Read(*Get("/lower/hello.txt")), "HOST data\n");
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
  EXPECT_EQ(HostNames(""), (std::vector<std::string>{"dir", "empty", "hello.txt", "link"}));
}

}  // namespace
}  // namespace sentry::vfs
