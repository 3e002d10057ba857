#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

// Whether a filesystem supports extended attributes at all differs between
// hosts: the path lookup that comes first is tested everywhere, user.*
// attributes where the scratch directory's filesystem has them (the sandbox's
// always does, as tmpfs does since Linux 6.6).
namespace sentry::conformance {
namespace {

TEST(XattrTest, GetOnMissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(getxattr(dir.Path("missing").c_str(), "user.x", buf, sizeof(buf)),
                            ENOENT);
}

TEST(XattrTest, SetOnMissingPathFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(setxattr(dir.Path("missing").c_str(), "user.x", "v", 1, 0), ENOENT);
}

TEST(XattrTest, LgetOnMissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(lgetxattr(dir.Path("missing").c_str(), "user.x", buf, sizeof(buf)),
                            ENOENT);
}

TEST(XattrTest, ListOnMissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(listxattr(dir.Path("missing").c_str(), buf, sizeof(buf)), ENOENT);
}

TEST(XattrTest, RemoveOnMissingPathFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(removexattr(dir.Path("missing").c_str(), "user.x"), ENOENT);
}

// A scratch dir with a file "f", or a skip where the host has no user xattrs.
#define XATTR_SCRATCH(dir)                                                  \
  ScratchDir dir;                                                           \
  ASSERT_TRUE(WriteFile(dir.Path("f"), "data"));                            \
  if (setxattr(dir.Path("f").c_str(), "user.probe", "", 0, 0) != 0) {       \
    GTEST_SKIP() << "no user xattrs on this filesystem: " << ErrnoString(); \
  }                                                                         \
  ASSERT_SYSCALL_SUCCEEDS(removexattr(dir.Path("f").c_str(), "user.probe"))

TEST(XattrTest, SetGetListRemoveRoundTrip) {
  XATTR_SCRATCH(dir);
  const std::string f = dir.Path("f");
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.a", "one", 3, 0));
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.b", "", 0, 0));
  char buf[64];
  EXPECT_EQ(getxattr(f.c_str(), "user.a", buf, sizeof(buf)), 3);
  EXPECT_EQ(std::string(buf, 3), "one");
  EXPECT_EQ(getxattr(f.c_str(), "user.a", nullptr, 0), 3);
  EXPECT_EQ(getxattr(f.c_str(), "user.b", buf, sizeof(buf)), 0);
  const ssize_t n = listxattr(f.c_str(), buf, sizeof(buf));
  ASSERT_SYSCALL_SUCCEEDS(n);
  std::string list(buf, static_cast<size_t>(n));
  EXPECT_NE(list.find(std::string("user.a\0", 7)), std::string::npos);
  EXPECT_NE(list.find(std::string("user.b\0", 7)), std::string::npos);
  EXPECT_EQ(listxattr(f.c_str(), nullptr, 0), n);
  ASSERT_SYSCALL_SUCCEEDS(removexattr(f.c_str(), "user.a"));
  EXPECT_SYSCALL_FAILS_WITH(getxattr(f.c_str(), "user.a", buf, sizeof(buf)), ENODATA);
  EXPECT_SYSCALL_FAILS_WITH(removexattr(f.c_str(), "user.a"), ENODATA);
}

TEST(XattrTest, CreateAndReplaceFlags) {
  XATTR_SCRATCH(dir);
  const std::string f = dir.Path("f");
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "user.a", "1", 1, XATTR_REPLACE), ENODATA);
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.a", "1", 1, XATTR_CREATE));
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "user.a", "2", 1, XATTR_CREATE), EEXIST);
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.a", "22", 2, XATTR_REPLACE));
  char buf[8];
  EXPECT_EQ(getxattr(f.c_str(), "user.a", buf, sizeof(buf)), 2);
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "user.a", "1", 1, 0x10), EINVAL);
}

TEST(XattrTest, SizesAndNamesAreBounded) {
  XATTR_SCRATCH(dir);
  const std::string f = dir.Path("f");
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.a", "four", 4, 0));
  char buf[8];
  EXPECT_SYSCALL_FAILS_WITH(getxattr(f.c_str(), "user.a", buf, 2), ERANGE);
  EXPECT_SYSCALL_FAILS_WITH(listxattr(f.c_str(), buf, 2), ERANGE);
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "", "v", 1, 0), ERANGE);
  const std::string long_name = "user." + std::string(251, 'n');
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), long_name.c_str(), "v", 1, 0), ERANGE);
  const std::string big(65537, 'v');
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "user.big", big.data(), big.size(), 0), E2BIG);
}

TEST(XattrTest, UserNamespaceOnlyOnFilesAndDirectories) {
  XATTR_SCRATCH(dir);
  ASSERT_SYSCALL_SUCCEEDS(setxattr(dir.path().c_str(), "user.d", "v", 1, 0));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  char buf[8];
  EXPECT_SYSCALL_FAILS_WITH(lsetxattr(dir.Path("link").c_str(), "user.a", "v", 1, 0), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(lgetxattr(dir.Path("link").c_str(), "user.a", buf, sizeof(buf)),
                            ENODATA);
  EXPECT_EQ(llistxattr(dir.Path("link").c_str(), buf, sizeof(buf)), 0);
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(dir.Path("fifo").c_str(), 0644));
  EXPECT_SYSCALL_FAILS_WITH(setxattr(dir.Path("fifo").c_str(), "user.a", "v", 1, 0), EPERM);
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]), w(p[1]);
  EXPECT_SYSCALL_FAILS_WITH(fsetxattr(r.get(), "user.a", "v", 1, 0), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(fgetxattr(r.get(), "user.a", buf, sizeof(buf)), ENODATA);
}

TEST(XattrTest, LremovexattrRemovesFromTheNameItself) {
  XATTR_SCRATCH(dir);
  std::string f = dir.Path("f");
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.a", "v", 1, 0));
  ASSERT_SYSCALL_SUCCEEDS(lremovexattr(f.c_str(), "user.a"));
  EXPECT_SYSCALL_FAILS_WITH(lremovexattr(f.c_str(), "user.a"), ENODATA);
  EXPECT_SYSCALL_FAILS_WITH(lremovexattr(dir.Path("missing").c_str(), "user.a"), ENOENT);
  // On a symlink: the link's own attributes, where user.* is not allowed.
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.b", "v", 1, 0));
  EXPECT_SYSCALL_FAILS_WITH(lremovexattr(dir.Path("link").c_str(), "user.b"), EPERM);
  char buf[8];
  EXPECT_EQ(getxattr(f.c_str(), "user.b", buf, sizeof(buf)), 1);
}

TEST(XattrTest, FdCallsAndHardLinksShareTheInodesAttributes) {
  XATTR_SCRATCH(dir);
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(fsetxattr(fd.get(), "user.viafd", "x", 1, 0));
  ASSERT_SYSCALL_SUCCEEDS(link(dir.Path("f").c_str(), dir.Path("g").c_str()));
  char buf[8];
  EXPECT_EQ(getxattr(dir.Path("g").c_str(), "user.viafd", buf, sizeof(buf)), 1);
  ASSERT_SYSCALL_SUCCEEDS(fremovexattr(fd.get(), "user.viafd"));
  EXPECT_EQ(flistxattr(fd.get(), buf, sizeof(buf)), 0);
}

TEST(XattrTest, WritingNeedsWritePermissionAndTrustedNeedsPrivilege) {
  SKIP_IF_ROOT();
  XATTR_SCRATCH(dir);
  const std::string f = dir.Path("f");
  ASSERT_SYSCALL_SUCCEEDS(setxattr(f.c_str(), "user.a", "v", 1, 0));
  ASSERT_SYSCALL_SUCCEEDS(chmod(f.c_str(), 0444));
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "user.a", "w", 1, 0), EACCES);
  EXPECT_SYSCALL_FAILS_WITH(removexattr(f.c_str(), "user.a"), EACCES);
  char buf[8];
  EXPECT_EQ(getxattr(f.c_str(), "user.a", buf, sizeof(buf)), 1);
  ASSERT_SYSCALL_SUCCEEDS(chmod(f.c_str(), 0200));
  EXPECT_SYSCALL_FAILS_WITH(getxattr(f.c_str(), "user.a", buf, sizeof(buf)), EACCES);
  ASSERT_SYSCALL_SUCCEEDS(chmod(f.c_str(), 0644));
  EXPECT_SYSCALL_FAILS_WITH(setxattr(f.c_str(), "trusted.a", "v", 1, 0), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(getxattr(f.c_str(), "trusted.a", buf, sizeof(buf)), ENODATA);
}

TEST(XattrTest, LowerLayerFileIsNotWritable) {
  SKIP_IF_ROOT();
  EXPECT_SYSCALL_FAILS_WITH(setxattr("/usr/bin/env", "user.a", "v", 1, 0), EACCES);
  char buf[8];
  EXPECT_SYSCALL_FAILS_WITH(getxattr("/usr/bin/env", "user.none", buf, sizeof(buf)), ENODATA);
}

}  // namespace
}  // namespace sentry::conformance
