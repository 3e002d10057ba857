#include <dirent.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

std::string Readlink(const std::string& path) {
  char buf[PATH_MAX];
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

TEST(ProcTest, SelfExeIsThisBinary) {
  const std::string exe = Readlink("/proc/self/exe");
  ASSERT_FALSE(exe.empty()) << ErrnoString();
  EXPECT_EQ(exe[0], '/');
  EXPECT_EQ(StatOrFail(exe).st_ino, StatOrFail("/proc/self/exe").st_ino);
}

TEST(ProcTest, SelfIsOurPid) { EXPECT_EQ(Readlink("/proc/self"), std::to_string(getpid())); }

TEST(ProcTest, SelfFdListsOpenedFd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  const auto names = ListDir("/proc/self/fd");
  EXPECT_NE(std::find(names.begin(), names.end(), std::to_string(fd.get())), names.end());
  EXPECT_EQ(Readlink("/proc/self/fd/" + std::to_string(fd.get())), dir.Path("f"));
}

TEST(ProcTest, SelfFdForgetsClosedFd) {
  int number;
  {
    UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_SYSCALL_SUCCEEDS(fd.get());
    number = fd.get();
  }
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(lstat(("/proc/self/fd/" + std::to_string(number)).c_str(), &st),
                            ENOENT);
}

TEST(ProcTest, SelfCwdMatchesGetcwd) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  char buf[PATH_MAX];
  ASSERT_NE(getcwd(buf, sizeof(buf)), nullptr);
  EXPECT_EQ(Readlink("/proc/self/cwd"), buf);
}

TEST(ProcTest, SelfStatStartsWithPid) {
  const auto stat = ReadFile("/proc/self/stat");
  ASSERT_TRUE(stat.has_value()) << ErrnoString();
  EXPECT_EQ(stat->substr(0, stat->find(' ')), std::to_string(getpid()));
}

// How CPython's subprocess closes fds in a child (_close_open_fds_safe): one
// entry per getdents64 call, closing each fd before reading on.
TEST(ProcTest, ClosingFdsWhileListingSelfFdSkipsNone) {
  std::vector<int> opened;
  for (int i = 0; i < 12; ++i) {
    const int fd = open("/dev/null", O_RDONLY);
    ASSERT_SYSCALL_SUCCEEDS(fd);
    opened.push_back(fd);
  }
  const int lowest = *std::min_element(opened.begin(), opened.end());
  UniqueFd dir(open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dir.get());
  alignas(8) char buf[sizeof(struct dirent64)];
  long n;
  while ((n = syscall(SYS_getdents64, dir.get(), buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
      int fd = -1;
      if (sscanf(entry->d_name, "%d", &fd) == 1 && fd >= lowest && fd != dir.get()) close(fd);
      off += entry->d_reclen;
    }
  }
  for (int fd : opened) {
    EXPECT_SYSCALL_FAILS_WITH(fcntl(fd, F_GETFD), EBADF) << "fd " << fd << " left open";
  }
}

// bash's <(cmd) hands programs /dev/fd/N of a pipe: opening it opens the pipe
// anew (fs/proc/fd.c), not a file named "pipe:[ino]".
TEST(ProcTest, SelfFdOfAPipeReopensThePipe) {
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]), w(p[1]);
  const std::string wpath = "/proc/self/fd/" + std::to_string(w.get());
  EXPECT_EQ(Readlink(wpath).rfind("pipe:[", 0), 0u);
  UniqueFd w2(open(wpath.c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(w2.get());
  ASSERT_EQ(write(w2.get(), "abc", 3), 3);
  UniqueFd r2(open(("/dev/fd/" + std::to_string(r.get())).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(r2.get());
  char buf[8];
  ASSERT_EQ(read(r2.get(), buf, sizeof(buf)), 3);
  EXPECT_EQ(std::string(buf, 3), "abc");
  // A new open file description: its flags are its own.
  EXPECT_EQ(fcntl(r2.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(fcntl(r2.get(), F_GETFD), 1);
}

TEST(ProcTest, SelfFdOfAPipeStatsAsTheCallersFifo) {
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]), w(p[1]);
  struct stat by_fd, by_path, link;
  ASSERT_SYSCALL_SUCCEEDS(fstat(r.get(), &by_fd));
  const std::string path = "/proc/self/fd/" + std::to_string(r.get());
  ASSERT_SYSCALL_SUCCEEDS(stat(path.c_str(), &by_path));
  ASSERT_SYSCALL_SUCCEEDS(lstat(path.c_str(), &link));
  EXPECT_TRUE(S_ISFIFO(by_fd.st_mode));
  EXPECT_EQ(by_fd.st_uid, getuid());
  EXPECT_EQ(by_fd.st_gid, getgid());
  EXPECT_TRUE(S_ISFIFO(by_path.st_mode));
  EXPECT_EQ(by_path.st_ino, by_fd.st_ino);
  EXPECT_EQ(by_path.st_uid, getuid());
  EXPECT_TRUE(S_ISLNK(link.st_mode));
  EXPECT_EQ(link.st_uid, getuid());
  EXPECT_SYSCALL_FAILS_WITH(open((path + "/x").c_str(), O_RDONLY), ENOTDIR);
}

}  // namespace
}  // namespace sentry::conformance
