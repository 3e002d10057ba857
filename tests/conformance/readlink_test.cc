#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(ReadlinkTest, ReturnsTargetWithoutNul) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("some/target", dir.Path("link")));
  char buf[64];
  memset(buf, 'X', sizeof(buf));
  long n;
  ASSERT_SYSCALL_SUCCEEDS(n = syscall(SYS_readlink, dir.Path("link").c_str(), buf, sizeof(buf)));
  EXPECT_EQ(n, 11);
  EXPECT_EQ(std::string(buf, 11), "some/target");
  EXPECT_EQ(buf[11], 'X');
}

TEST(ReadlinkTest, TruncatesToBufferSize) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("0123456789", dir.Path("link")));
  char buf[8];
  memset(buf, 'X', sizeof(buf));
  EXPECT_EQ(syscall(SYS_readlink, dir.Path("link").c_str(), buf, 4), 4);
  EXPECT_EQ(std::string(buf, 5), "0123X");
}

TEST(ReadlinkTest, AbsoluteTargetIsReturnedVerbatim) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("/a//b/../c/", dir.Path("link")));
  char buf[64];
  const long n = syscall(SYS_readlink, dir.Path("link").c_str(), buf, sizeof(buf));
  ASSERT_SYSCALL_SUCCEEDS(n);
  EXPECT_EQ(std::string(buf, n), "/a//b/../c/");
}

TEST(ReadlinkTest, FollowsSymlinksInEarlierComponents) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeSymlink("target", dir.Path("d/link")));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("dlink")));
  char buf[64];
  const long n = syscall(SYS_readlink, dir.Path("dlink/link").c_str(), buf, sizeof(buf));
  ASSERT_SYSCALL_SUCCEEDS(n);
  EXPECT_EQ(std::string(buf, n), "target");
}

TEST(ReadlinkTest, NonLinkFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("f").c_str(), buf, sizeof(buf)), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.path().c_str(), buf, sizeof(buf)), EINVAL);
}

// A trailing slash makes the final symlink be followed, so what is left is the
// directory it names.
TEST(ReadlinkTest, TrailingSlashFollowsTheLink) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("link")));
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_readlink, (dir.Path("link") + "/").c_str(), buf, sizeof(buf)), EINVAL);
}

TEST(ReadlinkTest, MissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("missing").c_str(), buf, sizeof(buf)),
                            ENOENT);
}

TEST(ReadlinkTest, FileAsPathComponentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("f/x").c_str(), buf, sizeof(buf)),
                            ENOTDIR);
}

TEST(ReadlinkTest, ZeroBufferSizeFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("link").c_str(), buf, 0), EINVAL);
}

TEST(ReadlinkTest, NegativeBufferSizeFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("link").c_str(), buf, -1), EINVAL);
}

TEST(ReadlinkTest, BadBufferFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_readlink, dir.Path("link").c_str(), reinterpret_cast<char*>(1), 64), EFAULT);
}

TEST(ReadlinkTest, BadPathFails) {
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, reinterpret_cast<char*>(1), buf, sizeof(buf)),
                            EFAULT);
}

TEST(ReadlinkatTest, RelativeToDirfd) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  char buf[64];
  const long n = syscall(SYS_readlinkat, dfd.get(), "link", buf, sizeof(buf));
  ASSERT_SYSCALL_SUCCEEDS(n);
  EXPECT_EQ(std::string(buf, n), "target");
}

TEST(ReadlinkatTest, EmptyPathReadsLinkOpenedWithOPath) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  UniqueFd fd(open(dir.Path("link").c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[64];
  const long n = syscall(SYS_readlinkat, fd.get(), "", buf, sizeof(buf));
  ASSERT_SYSCALL_SUCCEEDS(n);
  EXPECT_EQ(std::string(buf, n), "target");
}

TEST(ReadlinkatTest, EmptyPathOnNonLinkFails) {
  UniqueFd fd(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlinkat, fd.get(), "", buf, sizeof(buf)), ENOENT);
}

TEST(ReadlinkatTest, BadDirfdFails) {
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlinkat, 100000, "link", buf, sizeof(buf)), EBADF);
}

}  // namespace
}  // namespace sentry::conformance
