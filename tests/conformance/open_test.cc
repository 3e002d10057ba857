#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

long Openat2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve,
             uint64_t mode = 0) {
  open_how how = {};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof(how));
}

// A descriptor number that is certainly not open.
int ClosedFd() {
  const int fd = dup(STDERR_FILENO);
  close(fd);
  return fd;
}

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

TEST(OpenTest, CreateAppliesModeAndUmask) {
  ScratchDir dir;
  UmaskGuard mask(022);
  const std::string path = dir.Path("f");
  UniqueFd fd(syscall(SYS_open, path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  const struct stat st = StatOrFail(path);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_size, 0);
}

TEST(OpenTest, OpenatRelativeToDirfd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "hello"));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  UniqueFd fd(syscall(SYS_openat, dfd.get(), "f", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[8] = {};
  EXPECT_EQ(read(fd.get(), buf, sizeof(buf)), 5);
  EXPECT_STREQ(buf, "hello");
}

TEST(OpenTest, AbsolutePathIgnoresDirfd) {
  UniqueFd fd(syscall(SYS_openat, ClosedFd(), "/etc/passwd", O_RDONLY | O_CLOEXEC));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(OpenTest, CreatExclOnExistingFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("f").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST);
}

TEST(OpenTest, CreatExclOnDirectoryFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(open(dir.path().c_str(), O_CREAT | O_EXCL | O_RDONLY, 0600), EEXIST);
}

TEST(OpenTest, CreatExclOnDanglingSymlinkFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("link").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600),
                            EEXIST);
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("target").c_str(), F_OK), ENOENT);
}

TEST(OpenTest, CreatThroughDanglingSymlinkCreatesTarget) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  UniqueFd fd(open(dir.Path("link").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_TRUE(S_ISREG(StatOrFail(dir.Path("target")).st_mode));
}

TEST(OpenTest, DirectoryFlagOnFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("f").c_str(), O_RDONLY | O_DIRECTORY), ENOTDIR);
}

TEST(OpenTest, DirectoryFlagOnDirectorySucceeds) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(OpenTest, NofollowOnSymlinkFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("link").c_str(), O_RDONLY | O_NOFOLLOW), ELOOP);
}

TEST(OpenTest, NofollowOnlyAppliesToLastComponent) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("link")));
  UniqueFd fd(open(dir.Path("link/f").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(OpenTest, TruncEmptiesFile) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "some data"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 0);
}

TEST(OpenTest, AppendWritesAtEnd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(lseek(fd.get(), 0, SEEK_SET));
  ASSERT_EQ(write(fd.get(), "de", 2), 2);
  EXPECT_EQ(ReadFile(dir.Path("f")).value_or(""), "abcde");
}

TEST(OpenTest, WriteOnlyOnDirectoryFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(open(dir.path().c_str(), O_WRONLY), EISDIR);
  EXPECT_SYSCALL_FAILS_WITH(open(dir.path().c_str(), O_RDWR), EISDIR);
}

TEST(OpenTest, MissingFileFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("missing").c_str(), O_RDONLY), ENOENT);
}

TEST(OpenTest, MissingParentFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("missing/f").c_str(), O_CREAT | O_WRONLY, 0600), ENOENT);
}

TEST(OpenTest, EmptyPathFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat, AT_FDCWD, "", O_RDONLY), ENOENT);
}

TEST(OpenTest, FileAsPathComponentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("f/x").c_str(), O_RDONLY), ENOTDIR);
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("f/x").c_str(), O_CREAT | O_WRONLY, 0600), ENOTDIR);
}

TEST(OpenTest, TrailingSlashOnFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(open((dir.Path("f") + "/").c_str(), O_RDONLY), ENOTDIR);
}

TEST(OpenTest, TrailingSlashOnDirectorySucceeds) {
  ScratchDir dir;
  UniqueFd fd(open((dir.path() + "/").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(OpenTest, CreateWithTrailingSlashFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(open((dir.Path("new") + "/").c_str(), O_CREAT | O_WRONLY, 0600),
                            EISDIR);
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("new").c_str(), F_OK), ENOENT);
}

TEST(OpenTest, NameComponentTooLongFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path(LongName()).c_str(), O_RDONLY), ENAMETOOLONG);
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path(LongName()).c_str(), O_CREAT | O_WRONLY, 0600),
                            ENAMETOOLONG);
}

TEST(OpenTest, NameComponentOfMaxLengthSucceeds) {
  ScratchDir dir;
  const std::string path = dir.Path(std::string(NAME_MAX, 'm'));
  UniqueFd fd(open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(OpenTest, PathTooLongFails) {
  EXPECT_SYSCALL_FAILS_WITH(open(LongPath().c_str(), O_RDONLY), ENAMETOOLONG);
}

TEST(OpenTest, SymlinkLoopFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("b", dir.Path("a")));
  ASSERT_TRUE(MakeSymlink("a", dir.Path("b")));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("a").c_str(), O_RDONLY), ELOOP);
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("a/x").c_str(), O_RDONLY), ELOOP);
}

TEST(OpenTest, BadPathPointerFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat, AT_FDCWD, reinterpret_cast<char*>(1), O_RDONLY),
                            EFAULT);
}

TEST(OpenTest, BadDirfdFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat, ClosedFd(), "relative", O_RDONLY), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat, -1, "relative", O_RDONLY), EBADF);
}

TEST(OpenTest, DirfdThatIsAFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat, fd.get(), "x", O_RDONLY), ENOTDIR);
}

TEST(OpenTest, ModeZeroFileIsNotReadable) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "secret", 0000));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("f").c_str(), O_RDONLY), EACCES);
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("f").c_str(), O_WRONLY), EACCES);
}

TEST(OpenTest, DirectoryWithoutSearchPermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("d").c_str(), 0600));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("d/f").c_str(), O_RDONLY), EACCES);
}

TEST(OpenTest, ReadOnlySystemFileNotWritable) {
  SKIP_IF_ROOT();
  EXPECT_SYSCALL_FAILS_WITH(open("/etc/passwd", O_WRONLY), EACCES);
  EXPECT_SYSCALL_FAILS_WITH(open("/usr/bin/true", O_RDWR), EACCES);
}

TEST(OpenTest, CloexecFlagIsVisible) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
  UniqueFd plain(open("/dev/null", O_RDONLY));
  ASSERT_SYSCALL_SUCCEEDS(plain.get());
  EXPECT_EQ(fcntl(plain.get(), F_GETFD), 0);
}

TEST(OpenTest, LowestFreeDescriptorIsUsed) {
  UniqueFd first(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(first.get());
  const int number = first.get();
  first.reset();
  UniqueFd second(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(second.get(), number);
}

TEST(CreatTest, CreatesWriteOnlyAndTruncates) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "old contents"));
  UniqueFd fd(creat(dir.Path("f").c_str(), 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_size, 0);
  EXPECT_EQ(fcntl(fd.get(), F_GETFL) & O_ACCMODE, O_WRONLY);
  char c;
  EXPECT_SYSCALL_FAILS_WITH(read(fd.get(), &c, 1), EBADF);
}

TEST(CreatTest, RawCreatCreatesFile) {
  ScratchDir dir;
  UmaskGuard mask(077);
  UniqueFd fd(syscall(SYS_creat, dir.Path("f").c_str(), 0666));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_mode & 07777, 0600u);
}

TEST(Openat2Test, PlainOpenSucceeds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(Openat2(AT_FDCWD, dir.Path("f"), O_RDONLY | O_CLOEXEC, 0));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(Openat2Test, CreateUsesMode) {
  ScratchDir dir;
  UmaskGuard mask(0);
  UniqueFd fd(Openat2(AT_FDCWD, dir.Path("f"), O_CREAT | O_WRONLY | O_CLOEXEC, 0, 0640));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_mode & 07777, 0640u);
}

TEST(Openat2Test, ResolveBeneathAllowsInside) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  ASSERT_TRUE(MakeSymlink("d/f", dir.Path("link")));
  UniqueFd root(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(root.get());
  UniqueFd a(Openat2(root.get(), "d/../d/f", O_RDONLY | O_CLOEXEC, RESOLVE_BENEATH));
  EXPECT_SYSCALL_SUCCEEDS(a.get());
  UniqueFd b(Openat2(root.get(), "link", O_RDONLY | O_CLOEXEC, RESOLVE_BENEATH));
  EXPECT_SYSCALL_SUCCEEDS(b.get());
}

TEST(Openat2Test, ResolveBeneathRejectsEscapes) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("../f", dir.Path("d/up")));
  ASSERT_TRUE(MakeSymlink(dir.Path("f"), dir.Path("d/abs")));
  UniqueFd root(open(dir.Path("d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(root.get());
  EXPECT_SYSCALL_FAILS_WITH(Openat2(root.get(), "../f", O_RDONLY, RESOLVE_BENEATH), EXDEV);
  EXPECT_SYSCALL_FAILS_WITH(Openat2(root.get(), dir.Path("f"), O_RDONLY, RESOLVE_BENEATH), EXDEV);
  EXPECT_SYSCALL_FAILS_WITH(Openat2(root.get(), "up", O_RDONLY, RESOLVE_BENEATH), EXDEV);
  EXPECT_SYSCALL_FAILS_WITH(Openat2(root.get(), "abs", O_RDONLY, RESOLVE_BENEATH), EXDEV);
}

TEST(Openat2Test, ResolveNoSymlinksRejectsAnySymlink) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("dlink")));
  ASSERT_TRUE(MakeSymlink("d/f", dir.Path("flink")));
  UniqueFd root(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(root.get());
  EXPECT_SYSCALL_FAILS_WITH(Openat2(root.get(), "dlink/f", O_RDONLY, RESOLVE_NO_SYMLINKS), ELOOP);
  EXPECT_SYSCALL_FAILS_WITH(Openat2(root.get(), "flink", O_RDONLY, RESOLVE_NO_SYMLINKS), ELOOP);
  UniqueFd fd(Openat2(root.get(), "d/f", O_RDONLY | O_CLOEXEC, RESOLVE_NO_SYMLINKS));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(Openat2Test, ResolveInRootTreatsDirfdAsRoot) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("root")));
  ASSERT_TRUE(WriteFile(dir.Path("root/f"), "inside"));
  ASSERT_TRUE(WriteFile(dir.Path("f"), "outside"));
  ASSERT_TRUE(MakeSymlink("/f", dir.Path("root/abs")));
  ASSERT_TRUE(MakeSymlink("../../../f", dir.Path("root/up")));
  UniqueFd root(open(dir.Path("root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(root.get());
  for (const char* path : {"abs", "up", "/f", "../f", "/../../f"}) {
    SCOPED_TRACE(path);
    UniqueFd fd(Openat2(root.get(), path, O_RDONLY | O_CLOEXEC, RESOLVE_IN_ROOT));
    ASSERT_SYSCALL_SUCCEEDS(fd.get());
    char buf[16] = {};
    EXPECT_EQ(read(fd.get(), buf, sizeof(buf) - 1), 6);
    EXPECT_STREQ(buf, "inside");
  }
}

TEST(Openat2Test, ResolveNoMagiclinksRejectsProcFdLinks) {
  UniqueFd target(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(target.get());
  const std::string path = "/proc/self/fd/" + std::to_string(target.get());
  UniqueFd plain(Openat2(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0));
  EXPECT_SYSCALL_SUCCEEDS(plain.get());
  EXPECT_SYSCALL_FAILS_WITH(Openat2(AT_FDCWD, path, O_RDONLY, RESOLVE_NO_MAGICLINKS), ELOOP);
}

TEST(Openat2Test, ResolveNoMagiclinksAllowsOrdinarySymlinks) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  UniqueFd fd(Openat2(AT_FDCWD, dir.Path("link"), O_RDONLY | O_CLOEXEC, RESOLVE_NO_MAGICLINKS));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(Openat2Test, UnknownFlagsFail) {
  EXPECT_SYSCALL_FAILS_WITH(Openat2(AT_FDCWD, "/dev/null", O_RDONLY | (1ULL << 40), 0), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(Openat2(AT_FDCWD, "/dev/null", O_RDONLY, 1ULL << 40), EINVAL);
}

TEST(Openat2Test, ModeWithoutCreateFails) {
  EXPECT_SYSCALL_FAILS_WITH(Openat2(AT_FDCWD, "/dev/null", O_RDONLY, 0, 0644), EINVAL);
}

TEST(Openat2Test, BeneathAndInRootTogetherFail) {
  EXPECT_SYSCALL_FAILS_WITH(
      Openat2(AT_FDCWD, "/dev/null", O_RDONLY, RESOLVE_BENEATH | RESOLVE_IN_ROOT), EINVAL);
}

TEST(Openat2Test, BadHowSizeFails) {
  open_how how = {};
  how.flags = O_RDONLY;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat2, AT_FDCWD, "/dev/null", &how, 8), EINVAL);
  struct {
    open_how how;
    uint64_t extra;
  } big = {};
  big.extra = 1;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_openat2, AT_FDCWD, "/dev/null", &big, sizeof(big)), E2BIG);
  big.extra = 0;
  UniqueFd fd(syscall(SYS_openat2, AT_FDCWD, "/dev/null", &big, sizeof(big)));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
}

TEST(CloseRangeTest, ClosesEveryDescriptorInRange) {
  UniqueFd src(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(src.get());
  // Three adjacent free numbers, wherever inherited descriptors left a gap.
  int lo = 10;
  while (IsOpen(lo) || IsOpen(lo + 1) || IsOpen(lo + 2)) ++lo;
  for (int fd = lo; fd <= lo + 2; ++fd) ASSERT_EQ(dup2(src.get(), fd), fd);
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_close_range, lo, lo + 2, 0));
  for (int fd = lo; fd <= lo + 2; ++fd) EXPECT_SYSCALL_FAILS_WITH(fcntl(fd, F_GETFD), EBADF);
  EXPECT_SYSCALL_SUCCEEDS(fcntl(src.get(), F_GETFD));
}

TEST(CloseRangeTest, CloexecFlagMarksInsteadOfClosing) {
  UniqueFd fd(open("/dev/null", O_RDONLY));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_close_range, fd.get(), fd.get(), CLOSE_RANGE_CLOEXEC));
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
}

TEST(CloseRangeTest, FirstAboveLastFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_close_range, 10, 5, 0), EINVAL);
}

TEST(CloseRangeTest, UnknownFlagFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_close_range, 1000, 1001, 1u << 10), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance
