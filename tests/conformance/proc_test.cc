#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

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

}  // namespace
}  // namespace sentry::conformance
