#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(TruncateTest, GrowFillsWithZeros) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "ab"));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_truncate, dir.Path("f").c_str(), off_t{6}));
  EXPECT_EQ(ReadFile(dir.Path("f")).value_or(""), std::string("ab\0\0\0\0", 6));
}

TEST(TruncateTest, ShrinkDropsData) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abcdef"));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_truncate, dir.Path("f").c_str(), off_t{2}));
  EXPECT_EQ(ReadFile(dir.Path("f")).value_or(""), "ab");
}

TEST(TruncateTest, FollowsSymlinks) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abcdef"));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(truncate(dir.Path("link").c_str(), 1));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 1);
}

TEST(TruncateTest, DirectoryFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_truncate, dir.path().c_str(), off_t{0}), EISDIR);
}

TEST(TruncateTest, NegativeLengthFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_truncate, dir.Path("f").c_str(), off_t{-1}), EINVAL);
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 3);
}

TEST(TruncateTest, MissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_truncate, dir.Path("missing").c_str(), off_t{0}), ENOENT);
}

TEST(TruncateTest, FileAsPathComponentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_truncate, dir.Path("f/x").c_str(), off_t{0}), ENOTDIR);
}

TEST(TruncateTest, WithoutWritePermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc", 0444));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_truncate, dir.Path("f").c_str(), off_t{0}), EACCES);
}

TEST(FtruncateTest, GrowAndShrink) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(ftruncate(fd.get(), 8192));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_size, 8192);
  ASSERT_SYSCALL_SUCCEEDS(ftruncate(fd.get(), 10));
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_size, 10);
}

TEST(FtruncateTest, OffsetIsNotMoved) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abcdef"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_EQ(lseek(fd.get(), 4, SEEK_SET), 4);
  ASSERT_SYSCALL_SUCCEEDS(ftruncate(fd.get(), 2));
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_CUR), 4);
  char c;
  EXPECT_EQ(read(fd.get(), &c, 1), 0);
}

TEST(FtruncateTest, NegativeLengthFails) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(ftruncate(fd.get(), -1), EINVAL);
}

// A descriptor not open for writing gives EINVAL, not EBADF, as fs/open.c does.
TEST(FtruncateTest, ReadOnlyFdFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(ftruncate(fd.get(), 0), EINVAL);
}

TEST(FtruncateTest, DirectoryFdFails) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(ftruncate(fd.get(), 0), EINVAL);
}

TEST(FtruncateTest, PipeFails) {
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  UniqueFd r(fds[0]), w(fds[1]);
  EXPECT_SYSCALL_FAILS_WITH(ftruncate(w.get(), 0), EINVAL);
}

TEST(FtruncateTest, BadFdFails) { EXPECT_SYSCALL_FAILS_WITH(ftruncate(-1, 0), EBADF); }

TEST(FallocateTest, ExtendsSize) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(fallocate(fd.get(), 0, 0, 4096));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 4096);
  char buf[16];
  ASSERT_EQ(pread(fd.get(), buf, sizeof(buf), 100), 16);
  EXPECT_EQ(std::string(buf, 16), std::string(16, '\0'));
}

TEST(FallocateTest, KeepSizeLeavesSize) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0, 4096));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 0);
}

TEST(FallocateTest, InvalidRangeFails) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(fallocate(fd.get(), 0, 0, 0), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(fallocate(fd.get(), 0, -1, 10), EINVAL);
}

TEST(FallocateTest, ReadOnlyFdFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(fallocate(fd.get(), 0, 0, 10), EBADF);
}

TEST(FallocateTest, PipeFails) {
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  UniqueFd r(fds[0]), w(fds[1]);
  EXPECT_SYSCALL_FAILS_WITH(fallocate(w.get(), 0, 0, 10), ESPIPE);
}

}  // namespace
}  // namespace sentry::conformance
