#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

constexpr time_t kPast = 1000000000;  // 2001-09-09

long Utimensat(int dirfd, const char* path, const timespec* times, int flags) {
  return syscall(SYS_utimensat, dirfd, path, times, flags);
}

time_t Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}

// Sets both times of `path` far into the past, so that "now" is unmistakable.
bool AgeFile(const std::string& path) {
  const timespec times[2] = {{kPast, 0}, {kPast, 0}};
  if (Utimensat(AT_FDCWD, path.c_str(), times, 0) == 0) return true;
  ADD_FAILURE() << "utimensat " << path << ": " << ErrnoString();
  return false;
}

TEST(UtimensatTest, SetsExactTimes) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  const timespec times[2] = {{kPast, 0}, {kPast + 100, 0}};
  ASSERT_SYSCALL_SUCCEEDS(Utimensat(AT_FDCWD, dir.Path("f").c_str(), times, 0));
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_EQ(st.st_atim.tv_sec, kPast);
  EXPECT_EQ(st.st_mtim.tv_sec, kPast + 100);
  EXPECT_EQ(st.st_mtim.tv_nsec, 0);
}

TEST(UtimensatTest, NowSetsCurrentTime) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(AgeFile(dir.Path("f")));
  const time_t before = Now();
  const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  ASSERT_SYSCALL_SUCCEEDS(Utimensat(AT_FDCWD, dir.Path("f").c_str(), times, 0));
  const time_t after = Now();
  const struct stat st = StatOrFail(dir.Path("f"));
  // One second of slack: file times come from the coarse clock.
  EXPECT_GE(st.st_mtim.tv_sec, before - 1);
  EXPECT_LE(st.st_mtim.tv_sec, after + 1);
  EXPECT_GE(st.st_atim.tv_sec, before - 1);
}

TEST(UtimensatTest, OmitLeavesTimeUnchanged) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(AgeFile(dir.Path("f")));
  const timespec times[2] = {{0, UTIME_OMIT}, {kPast + 5, 0}};
  ASSERT_SYSCALL_SUCCEEDS(Utimensat(AT_FDCWD, dir.Path("f").c_str(), times, 0));
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_EQ(st.st_atim.tv_sec, kPast);
  EXPECT_EQ(st.st_mtim.tv_sec, kPast + 5);
}

TEST(UtimensatTest, NullTimesMeansNow) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(AgeFile(dir.Path("f")));
  const time_t before = Now();
  ASSERT_SYSCALL_SUCCEEDS(Utimensat(AT_FDCWD, dir.Path("f").c_str(), nullptr, 0));
  EXPECT_GE(StatOrFail(dir.Path("f")).st_mtim.tv_sec, before - 1);
}

TEST(UtimensatTest, NullPathChangesTheFd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  const timespec times[2] = {{kPast, 0}, {kPast, 0}};
  ASSERT_SYSCALL_SUCCEEDS(Utimensat(fd.get(), nullptr, times, 0));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_mtim.tv_sec, kPast);
}

TEST(UtimensatTest, SymlinkNofollowChangesTheLink) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  const time_t file_mtime = StatOrFail(dir.Path("f")).st_mtim.tv_sec;
  const timespec times[2] = {{kPast, 0}, {kPast, 0}};
  ASSERT_SYSCALL_SUCCEEDS(
      Utimensat(AT_FDCWD, dir.Path("link").c_str(), times, AT_SYMLINK_NOFOLLOW));
  EXPECT_EQ(LstatOrFail(dir.Path("link")).st_mtim.tv_sec, kPast);
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_mtim.tv_sec, file_mtime);
}

TEST(UtimensatTest, InvalidNanosecondsFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  const timespec times[2] = {{kPast, 1000000000}, {kPast, 0}};
  EXPECT_SYSCALL_FAILS_WITH(Utimensat(AT_FDCWD, dir.Path("f").c_str(), times, 0), EINVAL);
  const timespec negative[2] = {{kPast, 0}, {kPast, -5}};
  EXPECT_SYSCALL_FAILS_WITH(Utimensat(AT_FDCWD, dir.Path("f").c_str(), negative, 0), EINVAL);
}

TEST(UtimensatTest, InvalidFlagsFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Utimensat(AT_FDCWD, dir.Path("f").c_str(), nullptr, AT_REMOVEDIR),
                            EINVAL);
}

TEST(UtimensatTest, MissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(Utimensat(AT_FDCWD, dir.Path("missing").c_str(), nullptr, 0), ENOENT);
}

TEST(UtimensatTest, ExplicitTimesOnOthersFileFail) {
  SKIP_IF_ROOT();
  const timespec times[2] = {{kPast, 0}, {kPast, 0}};
  EXPECT_SYSCALL_FAILS_WITH(Utimensat(AT_FDCWD, "/etc/passwd", times, 0), EPERM);
}

TEST(UtimensatTest, NowOnUnwritableOthersFileFails) {
  SKIP_IF_ROOT();
  EXPECT_SYSCALL_FAILS_WITH(Utimensat(AT_FDCWD, "/etc/passwd", nullptr, 0), EACCES);
}

TEST(UtimeTest, SetsTimes) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  const utimbuf buf = {kPast, kPast + 7};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_utime, dir.Path("f").c_str(), &buf));
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_EQ(st.st_atim.tv_sec, kPast);
  EXPECT_EQ(st.st_mtim.tv_sec, kPast + 7);
}

TEST(UtimesTest, SetsTimesWithMicroseconds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  const timeval tv[2] = {{kPast, 0}, {kPast + 9, 0}};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_utimes, dir.Path("f").c_str(), tv));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_mtim.tv_sec, kPast + 9);
  const timeval bad[2] = {{kPast, 1000000}, {kPast, 0}};
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_utimes, dir.Path("f").c_str(), bad), EINVAL);
}

TEST(FutimesatTest, RelativeToDirfd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  const timeval tv[2] = {{kPast, 0}, {kPast + 3, 0}};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_futimesat, dfd.get(), "f", tv));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_mtim.tv_sec, kPast + 3);
}

TEST(FileTimesTest, WriteUpdatesModificationTime) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(AgeFile(dir.Path("f")));
  UniqueFd fd(open(dir.Path("f").c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_EQ(write(fd.get(), "x", 1), 1);
  EXPECT_GT(StatOrFail(dir.Path("f")).st_mtim.tv_sec, kPast);
}

TEST(FileTimesTest, CreatingAnEntryUpdatesDirectoryTime) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(AgeFile(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  EXPECT_GT(StatOrFail(dir.Path("d")).st_mtim.tv_sec, kPast);
}

}  // namespace
}  // namespace sentry::conformance
