#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

char* const kEmptyEnv[] = {nullptr};

// Runs execve(path, {path, args...}) in a child. Returns the child's wait
// status; if execve fails, the child exits with the errno.
int ExecInChild(const std::string& path, const std::vector<std::string>& args = {}) {
  return RunInChild([&] {
    std::vector<char*> argv = {const_cast<char*>(path.c_str())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    syscall(SYS_execve, path.c_str(), argv.data(), kEmptyEnv);
    return errno;
  });
}

// The errno execve gave in a child, or -1 if the child did not exit normally.
int ExecErrno(const std::string& path) {
  const int status = ExecInChild(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ExecveTest, TrueExitsZero) {
  const int status = ExecInChild("/bin/true");
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ExecveTest, FalseExitsOne) {
  const int status = ExecInChild("/usr/bin/false");
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

TEST(ExecveTest, ArgumentsArePassed) {
  const int status = ExecInChild("/bin/sh", {"-c", "exit 42"});
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

TEST(ExecveTest, ScriptInScratchDirRuns) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("script"), "#!/bin/sh\nexit 7\n", 0755));
  const int status = ExecInChild(dir.Path("script"));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

TEST(ExecveTest, CopiedBinaryInScratchDirRuns) {
  ScratchDir dir;
  const auto contents = ReadFile("/usr/bin/true");
  ASSERT_TRUE(contents.has_value());
  ASSERT_TRUE(WriteFile(dir.Path("mytrue"), *contents, 0755));
  const int status = ExecInChild(dir.Path("mytrue"));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ExecveTest, SymlinkToBinaryRuns) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("/bin/true", dir.Path("link")));
  const int status = ExecInChild(dir.Path("link"));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ExecveTest, MissingFileFails) {
  ScratchDir dir;
  EXPECT_EQ(ExecErrno(dir.Path("missing")), ENOENT);
}

TEST(ExecveTest, EmptyPathFails) { EXPECT_EQ(ExecErrno(""), ENOENT); }

TEST(ExecveTest, DirectoryFails) {
  ScratchDir dir;
  EXPECT_EQ(ExecErrno(dir.path()), EACCES);
  EXPECT_EQ(ExecErrno("/usr/bin"), EACCES);
}

TEST(ExecveTest, NonExecutableFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("script"), "#!/bin/sh\nexit 0\n", 0644));
  EXPECT_EQ(ExecErrno(dir.Path("script")), EACCES);
}

TEST(ExecveTest, FileAsPathComponentFails) { EXPECT_EQ(ExecErrno("/bin/true/x"), ENOTDIR); }

TEST(ExecveTest, UnknownFormatFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("garbage"), std::string(64, '\x01'), 0755));
  EXPECT_EQ(ExecErrno(dir.Path("garbage")), ENOEXEC);
}

TEST(ExecveTest, MissingInterpreterFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("script"), "#!" + dir.Path("no-such-shell") + "\n", 0755));
  EXPECT_EQ(ExecErrno(dir.Path("script")), ENOENT);
}

TEST(ExecveTest, EmptyFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("empty"), "", 0755));
  EXPECT_EQ(ExecErrno(dir.Path("empty")), ENOEXEC);
}

TEST(ExecveTest, SymlinkLoopFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("b", dir.Path("a")));
  ASSERT_TRUE(MakeSymlink("a", dir.Path("b")));
  EXPECT_EQ(ExecErrno(dir.Path("a")), ELOOP);
}

TEST(ExecveTest, InterpreterThatIsAScriptLoopFails) {
  // binfmt_script recursion: a script whose interpreter is itself.
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("self"), "#!" + dir.Path("self") + "\n", 0755));
  EXPECT_EQ(ExecErrno(dir.Path("self")), ELOOP);
}

// One string past MAX_ARG_STRLEN (32 pages), and a total past the stack limit.
TEST(ExecveTest, ArgumentTooLongFails) {
  EXPECT_EQ(WEXITSTATUS(ExecInChild("/bin/true", {std::string(200 * 1024, 'x')})), E2BIG);
}

TEST(ExecveTest, ArgumentsTooLargeInTotalFails) {
  std::vector<std::string> args(100, std::string(100 * 1024, 'x'));
  EXPECT_EQ(WEXITSTATUS(ExecInChild("/bin/true", args)), E2BIG);
}

TEST(ExecveTest, BadPathPointerFails) {
  const int status = RunInChild([] {
    syscall(SYS_execve, reinterpret_cast<char*>(1), kEmptyEnv, kEmptyEnv);
    return errno;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), EFAULT);
}

TEST(ExecveatTest, EmptyPathRunsTheFd) {
  const int status = RunInChild([] {
    const int fd = open("/bin/true", O_RDONLY);
    if (fd < 0) return 100;
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    syscall(SYS_execveat, fd, "", argv, kEmptyEnv, AT_EMPTY_PATH);
    return errno;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ExecveatTest, RelativeToDirfd) {
  const int status = RunInChild([] {
    const int dfd = open("/usr/bin", O_RDONLY | O_DIRECTORY);
    if (dfd < 0) return 100;
    char* const argv[] = {const_cast<char*>("false"), nullptr};
    syscall(SYS_execveat, dfd, "false", argv, kEmptyEnv, 0);
    return errno;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

TEST(ExecveatTest, SymlinkNofollowFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("/bin/true", dir.Path("link")));
  const std::string link = dir.Path("link");
  const int status = RunInChild([&] {
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    syscall(SYS_execveat, AT_FDCWD, link.c_str(), argv, kEmptyEnv, AT_SYMLINK_NOFOLLOW);
    return errno;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), ELOOP);
}

TEST(ExecveatTest, InvalidFlagsFail) {
  const int status = RunInChild([] {
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, kEmptyEnv, AT_REMOVEDIR);
    return errno;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance
