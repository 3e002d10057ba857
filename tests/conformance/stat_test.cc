#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

long RawStatx(int dirfd, const char* path, int flags, unsigned mask, struct statx* out) {
  return syscall(SYS_statx, dirfd, path, flags, mask, out);
}

// Directory link counts follow the Unix convention ("." and each subdirectory's
// "..") on every filesystem but btrfs, which always reports 1.
bool CountsDirectoryLinks(const std::string& path) {
  struct statfs fs = {};
  return statfs(path.c_str(), &fs) == 0 && fs.f_type != BTRFS_SUPER_MAGIC;
}

TEST(StatTest, RegularFileSizeFollowsWrites) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_stat, dir.Path("f").c_str(), &st));
  EXPECT_EQ(st.st_size, 0);
  ASSERT_EQ(write(fd.get(), "0123456789", 10), 10);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_stat, dir.Path("f").c_str(), &st));
  EXPECT_EQ(st.st_size, 10);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_GT(st.st_blksize, 0);
}

TEST(StatTest, SparseWriteExtendsSize) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_EQ(pwrite(fd.get(), "x", 1, 99999), 1);
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 100000);
}

TEST(StatTest, DirectoryIsReportedAsDirectory) {
  ScratchDir dir;
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_stat, dir.path().c_str(), &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);  // as mkdtemp made it
}

TEST(StatTest, StatFollowsSymlinkLstatDoesNot) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  struct stat followed, link;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_stat, dir.Path("link").c_str(), &followed));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_lstat, dir.Path("link").c_str(), &link));
  EXPECT_TRUE(S_ISREG(followed.st_mode));
  EXPECT_EQ(followed.st_size, 3);
  EXPECT_TRUE(S_ISLNK(link.st_mode));
  EXPECT_EQ(link.st_size, 1);  // the length of "f"
  EXPECT_NE(link.st_ino, followed.st_ino);
  EXPECT_EQ(followed.st_ino, StatOrFail(dir.Path("f")).st_ino);
}

TEST(StatTest, LstatFollowsSymlinkWithTrailingSlash) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("link")));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_lstat, (dir.Path("link") + "/").c_str(), &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST(StatTest, FstatMatchesStat) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat by_fd;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fstat, fd.get(), &by_fd));
  const struct stat by_path = StatOrFail(dir.Path("f"));
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_EQ(by_fd.st_dev, by_path.st_dev);
  EXPECT_EQ(by_fd.st_size, 3);
  EXPECT_EQ(by_fd.st_mode, by_path.st_mode);
}

TEST(StatTest, FstatOfUnlinkedFileShowsZeroLinks) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path("f").c_str()));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_size, 3);
}

TEST(StatTest, FileTypesOfSystemPaths) {
  EXPECT_TRUE(S_ISDIR(StatOrFail("/usr").st_mode));
  EXPECT_TRUE(S_ISREG(StatOrFail("/etc/passwd").st_mode));
  EXPECT_TRUE(S_ISCHR(StatOrFail("/dev/null").st_mode));
  EXPECT_TRUE(S_ISLNK(LstatOrFail("/bin").st_mode));
  EXPECT_TRUE(S_ISDIR(StatOrFail("/bin").st_mode));
  EXPECT_EQ(StatOrFail("/bin").st_ino, StatOrFail("/usr/bin").st_ino);
}

TEST(StatTest, EmptyDirectoryHasTwoLinks) {
  ScratchDir dir;
  if (!CountsDirectoryLinks(dir.path())) GTEST_SKIP() << "filesystem does not count dir links";
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_EQ(StatOrFail(dir.Path("d")).st_nlink, 2u);
}

TEST(StatTest, SubdirectoryAddsLinkToParent) {
  ScratchDir dir;
  if (!CountsDirectoryLinks(dir.path())) GTEST_SKIP() << "filesystem does not count dir links";
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeDir(dir.Path("d/a")));
  ASSERT_TRUE(MakeDir(dir.Path("d/b")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  EXPECT_EQ(StatOrFail(dir.Path("d")).st_nlink, 4u);
  ASSERT_SYSCALL_SUCCEEDS(rmdir(dir.Path("d/a").c_str()));
  EXPECT_EQ(StatOrFail(dir.Path("d")).st_nlink, 3u);
}

TEST(StatTest, MissingPathFails) {
  ScratchDir dir;
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, dir.Path("missing").c_str(), &st), ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_lstat, dir.Path("missing").c_str(), &st), ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, "", &st), ENOENT);
}

TEST(StatTest, DanglingSymlinkFailsOnlyWhenFollowed) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("link")));
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, dir.Path("link").c_str(), &st), ENOENT);
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_lstat, dir.Path("link").c_str(), &st));
}

TEST(StatTest, FileAsPathComponentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, dir.Path("f/x").c_str(), &st), ENOTDIR);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, (dir.Path("f") + "/").c_str(), &st), ENOTDIR);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_lstat, (dir.Path("f") + "/").c_str(), &st), ENOTDIR);
}

TEST(StatTest, BadPointersFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, reinterpret_cast<char*>(1), &st), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, dir.Path("f").c_str(), reinterpret_cast<void*>(1)),
                            EFAULT);
}

TEST(StatTest, FstatBadFdFails) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, -1, &st), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, 100000, &st), EBADF);
}

TEST(StatTest, StatOfDotAndDotDot) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_EQ(StatOrFail(dir.Path("d/.")).st_ino, StatOrFail(dir.Path("d")).st_ino);
  EXPECT_EQ(StatOrFail(dir.Path("d/..")).st_ino, StatOrFail(dir.path()).st_ino);
  EXPECT_EQ(StatOrFail(dir.Path("d//.//")).st_ino, StatOrFail(dir.Path("d")).st_ino);
}

TEST(NewfstatatTest, RelativeToDirfd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "12345"));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_newfstatat, dfd.get(), "f", &st, 0));
  EXPECT_EQ(st.st_size, 5);
}

TEST(NewfstatatTest, EmptyPathStatsTheFd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "12345"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_newfstatat, fd.get(), "", &st, AT_EMPTY_PATH));
  EXPECT_EQ(st.st_size, 5);
  EXPECT_EQ(st.st_ino, StatOrFail(dir.Path("f")).st_ino);
}

TEST(NewfstatatTest, EmptyPathWithAtFdcwdStatsCwd) {
  struct stat by_empty, by_dot;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_newfstatat, AT_FDCWD, "", &by_empty, AT_EMPTY_PATH));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_newfstatat, AT_FDCWD, ".", &by_dot, 0));
  EXPECT_EQ(by_empty.st_ino, by_dot.st_ino);
}

TEST(NewfstatatTest, EmptyPathWithoutFlagFails) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, fd.get(), "", &st, 0), ENOENT);
}

TEST(NewfstatatTest, SymlinkNofollow) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("link")));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(
      syscall(SYS_newfstatat, AT_FDCWD, dir.Path("link").c_str(), &st, AT_SYMLINK_NOFOLLOW));
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_newfstatat, AT_FDCWD, dir.Path("link").c_str(), &st, 0));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST(NewfstatatTest, InvalidFlagsFail) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, AT_FDCWD, "/dev/null", &st, 0x1), EINVAL);
}

TEST(NewfstatatTest, BadDirfdFails) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, 100000, "x", &st, 0), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, -1, "", &st, AT_EMPTY_PATH), EBADF);
}

TEST(StatxTest, BasicStatsMatchStat) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "12345", 0640));
  struct statx stx = {};
  ASSERT_SYSCALL_SUCCEEDS(RawStatx(AT_FDCWD, dir.Path("f").c_str(), 0, STATX_BASIC_STATS, &stx));
  const unsigned needed =
      STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_INO | STATX_SIZE;
  EXPECT_EQ(stx.stx_mask & needed, needed);
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_EQ(stx.stx_size, 5u);
  EXPECT_EQ(stx.stx_mode, st.st_mode);
  EXPECT_EQ(stx.stx_ino, st.st_ino);
  EXPECT_EQ(stx.stx_nlink, 1u);
  EXPECT_EQ(stx.stx_uid, geteuid());
}

TEST(StatxTest, TypeOnlyMaskStillReportsType) {
  struct statx stx = {};
  ASSERT_SYSCALL_SUCCEEDS(RawStatx(AT_FDCWD, "/dev/null", 0, STATX_TYPE, &stx));
  EXPECT_TRUE(stx.stx_mask & STATX_TYPE);
  EXPECT_TRUE(S_ISCHR(stx.stx_mode));
  EXPECT_EQ(stx.stx_rdev_major, 1u);
  EXPECT_EQ(stx.stx_rdev_minor, 3u);
}

TEST(StatxTest, EmptyPathStatsTheFd) {
  UniqueFd fd(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct statx stx = {};
  ASSERT_SYSCALL_SUCCEEDS(RawStatx(fd.get(), "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx));
  EXPECT_EQ(stx.stx_ino, StatOrFail("/etc/passwd").st_ino);
}

TEST(StatxTest, SymlinkNofollow) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("somewhere", dir.Path("link")));
  struct statx stx = {};
  ASSERT_SYSCALL_SUCCEEDS(
      RawStatx(AT_FDCWD, dir.Path("link").c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx));
  EXPECT_TRUE(S_ISLNK(stx.stx_mode));
  EXPECT_EQ(stx.stx_size, 9u);
  EXPECT_SYSCALL_FAILS_WITH(
      RawStatx(AT_FDCWD, dir.Path("link").c_str(), 0, STATX_BASIC_STATS, &stx), ENOENT);
}

TEST(StatxTest, ReservedMaskBitFails) {
  struct statx stx = {};
  EXPECT_SYSCALL_FAILS_WITH(RawStatx(AT_FDCWD, "/dev/null", 0, STATX__RESERVED, &stx), EINVAL);
}

TEST(StatxTest, InvalidFlagsFail) {
  struct statx stx = {};
  EXPECT_SYSCALL_FAILS_WITH(RawStatx(AT_FDCWD, "/dev/null", 0x1, STATX_BASIC_STATS, &stx), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(
      RawStatx(AT_FDCWD, "/dev/null", AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, STATX_BASIC_STATS,
               &stx),
      EINVAL);
}

TEST(StatxTest, MissingPathFails) {
  ScratchDir dir;
  struct statx stx = {};
  EXPECT_SYSCALL_FAILS_WITH(
      RawStatx(AT_FDCWD, dir.Path("missing").c_str(), 0, STATX_BASIC_STATS, &stx), ENOENT);
}

}  // namespace
}  // namespace sentry::conformance
