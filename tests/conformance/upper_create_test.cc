// A created file's fd as the guest sees it. Under sentry a create that asks
// for write-only access is donated a description its store made ahead
// (vfs/store_stash.h), and every open of a file the store made takes that
// file's identity from the store instead of an fstat (Store::Identity):
// these cases fail if such a description carried another access mode or
// status flag, kept the wrong time, named another file, or outlived the
// call that took it (a writer left behind: ETXTBSY at exec).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

int RunFile(const std::string& path) {
  return RunInChild([&path] {
    char* const argv[] = {const_cast<char*>(path.c_str()), nullptr};
    char* const env[] = {nullptr};
    syscall(SYS_execve, path.c_str(), argv, env);
    return 100 + errno;
  });
}

// Python's "wb": the fd is write-only with no other status flag, at 0, and
// is the file the name leads to.
TEST(UpperCreateTest, WriteOnlyCreateIsThatFileWriteOnly) {
  UmaskGuard mask(022);
  ScratchDir dir;
  std::string path = dir.Path("f");
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  int fl = fcntl(fd.get(), F_GETFL);
  ASSERT_SYSCALL_SUCCEEDS(fl);
  EXPECT_EQ(fl & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | O_DIRECT), O_WRONLY);
  EXPECT_EQ(lseek(fd.get(), 0, SEEK_CUR), 0);
  char c;
  EXPECT_SYSCALL_FAILS_WITH(read(fd.get(), &c, 1), EBADF);
  ASSERT_EQ(write(fd.get(), "hello", 5), 5);
  struct stat by_fd, by_path;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &by_fd));
  ASSERT_SYSCALL_SUCCEEDS(stat(path.c_str(), &by_path));
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_EQ(by_fd.st_dev, by_path.st_dev);
  EXPECT_EQ(by_fd.st_size, 5);
  EXPECT_EQ(by_fd.st_mode & 07777, 0644u);
  EXPECT_EQ(ReadFile(path).value_or(""), "hello");
}

// The other access modes and flags get what they asked for, not the
// store's write-only description.
TEST(UpperCreateTest, OtherCreatesGetTheirOwnFlags) {
  ScratchDir dir;
  struct Case {
    int flags;
    int want;
  } cases[] = {{O_RDWR, O_RDWR},
               {O_WRONLY | O_APPEND, O_WRONLY | O_APPEND},
               {O_WRONLY | O_NONBLOCK, O_WRONLY | O_NONBLOCK},
               {O_RDONLY, O_RDONLY}};
  int i = 0;
  for (const Case& k : cases) {
    std::string path = dir.Path("f" + std::to_string(i++));
    UniqueFd fd(open(path.c_str(), k.flags | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_SYSCALL_SUCCEEDS(fd.get());
    int fl = fcntl(fd.get(), F_GETFL);
    ASSERT_SYSCALL_SUCCEEDS(fl);
    EXPECT_EQ(fl & (O_ACCMODE | O_APPEND | O_NONBLOCK), k.want) << path;
  }
}

// A made-ahead file takes the create's times, not the time it was made.
TEST(UpperCreateTest, CreateTimesAreTheCreates) {
  ScratchDir dir;
  // Let any file made ahead age first.
  usleep(1100 * 1000);
  struct timespec before;
  ASSERT_SYSCALL_SUCCEEDS(clock_gettime(CLOCK_REALTIME_COARSE, &before));
  std::string path = dir.Path("f");
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_GE(st.st_mtim.tv_sec, before.tv_sec);
  EXPECT_GE(st.st_atim.tv_sec, before.tv_sec);
  EXPECT_GE(st.st_ctim.tv_sec, before.tv_sec);
}

// Many creates in a row (past what a store makes ahead) and their reopens:
// every fd is its own file, and a name removed and made again is a new one.
TEST(UpperCreateTest, ManyCreatesAndReopensAreEachTheirFile) {
  ScratchDir dir;
  std::set<ino_t> inos;
  for (int i = 0; i < 100; ++i) {
    std::string path = dir.Path("f" + std::to_string(i));
    UniqueFd w(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    ASSERT_SYSCALL_SUCCEEDS(w.get());
    std::string body = std::to_string(i);
    ASSERT_EQ(write(w.get(), body.data(), body.size()), static_cast<ssize_t>(body.size()));
    struct stat ws;
    ASSERT_SYSCALL_SUCCEEDS(fstat(w.get(), &ws));
    UniqueFd r(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_SYSCALL_SUCCEEDS(r.get());
    struct stat rs;
    ASSERT_SYSCALL_SUCCEEDS(fstat(r.get(), &rs));
    EXPECT_EQ(rs.st_ino, ws.st_ino) << path;
    EXPECT_EQ(rs.st_size, static_cast<off_t>(body.size())) << path;
    EXPECT_TRUE(inos.insert(ws.st_ino).second) << path;
  }
  std::string path = dir.Path("f0");
  ino_t old = StatOrFail(path).st_ino;
  UniqueFd held(open(path.c_str(), O_RDONLY | O_CLOEXEC));  // keeps the old inode alive
  ASSERT_SYSCALL_SUCCEEDS(held.get());
  ASSERT_SYSCALL_SUCCEEDS(unlink(path.c_str()));
  UniqueFd again(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  ASSERT_SYSCALL_SUCCEEDS(again.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(again.get(), &st));
  EXPECT_NE(st.st_ino, old);
  EXPECT_EQ(st.st_size, 0);
  UniqueFd r(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(r.get());
  ASSERT_SYSCALL_SUCCEEDS(fstat(r.get(), &st));
  EXPECT_NE(st.st_ino, old);
  ASSERT_SYSCALL_SUCCEEDS(fstat(held.get(), &st));
  EXPECT_EQ(st.st_ino, old);
}

// A file created write-only, written, closed, then made executable runs:
// no writable description of it is left with the sentry (ETXTBSY).
TEST(UpperCreateTest, CreatedWriteOnlyThenChmodRuns) {
  ScratchDir dir;
  const auto contents = ReadFile("/usr/bin/true");
  ASSERT_TRUE(contents.has_value());
  std::string path = dir.Path("mytrue");
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  ASSERT_EQ(write(fd, contents->data(), contents->size()), static_cast<ssize_t>(contents->size()));
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  ASSERT_SYSCALL_SUCCEEDS(chmod(path.c_str(), 0755));
  int status = RunFile(path);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "100 + errno of execve";
}

// Creates that open nothing (mknod) or open another way (O_RDWR) leave no
// description behind either: the file, filled and made executable, runs.
TEST(UpperCreateTest, MknodAndReadWriteCreatesThenRun) {
  ScratchDir dir;
  const auto contents = ReadFile("/usr/bin/true");
  ASSERT_TRUE(contents.has_value());
  std::string made = dir.Path("made");
  ASSERT_SYSCALL_SUCCEEDS(mknod(made.c_str(), S_IFREG | 0644, 0));
  std::string rw = dir.Path("rw");
  for (const std::string& path : {made, rw}) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_SYSCALL_SUCCEEDS(fd);
    ASSERT_EQ(write(fd, contents->data(), contents->size()),
              static_cast<ssize_t>(contents->size()));
    ASSERT_SYSCALL_SUCCEEDS(close(fd));
    ASSERT_SYSCALL_SUCCEEDS(chmod(path.c_str(), 0755));
    int status = RunFile(path);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << path << ": 100 + errno of execve";
  }
}

// Whether an fd's fstat is the stat of the name it was opened by, field by
// field ("" if so, else what differs).
std::string FstatIsStat(int fd, const std::string& path) {
  struct stat f, p;
  if (fstat(fd, &f) != 0) return "fstat: " + std::to_string(errno);
  if (stat(path.c_str(), &p) != 0) return "stat: " + std::to_string(errno);
  std::string diff;
  auto check = [&diff](const char* what, long long a, long long b) {
    if (a != b) diff += std::string(what) + " " + std::to_string(a) + "/" + std::to_string(b) + " ";
  };
  check("ino", f.st_ino, p.st_ino);
  check("dev", f.st_dev, p.st_dev);
  check("mode", f.st_mode, p.st_mode);
  check("nlink", f.st_nlink, p.st_nlink);
  check("uid", f.st_uid, p.st_uid);
  check("gid", f.st_gid, p.st_gid);
  check("size", f.st_size, p.st_size);
  check("blocks", f.st_blocks, p.st_blocks);
  check("blksize", f.st_blksize, p.st_blksize);
  check("atime", f.st_atim.tv_sec * 1000000000LL + f.st_atim.tv_nsec,
        p.st_atim.tv_sec * 1000000000LL + p.st_atim.tv_nsec);
  check("mtime", f.st_mtim.tv_sec * 1000000000LL + f.st_mtim.tv_nsec,
        p.st_mtim.tv_sec * 1000000000LL + p.st_mtim.tv_nsec);
  check("ctime", f.st_ctim.tv_sec * 1000000000LL + f.st_ctim.tv_nsec,
        p.st_ctim.tv_sec * 1000000000LL + p.st_ctim.tv_nsec);
  return diff;
}

// The fstat right after a create (Python's open for writing makes one: the
// sentry answers it from its library, fastmeta/region.h SENTRY_FM_FRESH),
// then after each change that leaves the file's size alone or moves it
// (a write, a pwrite, ftruncate back to empty, fallocate, fchmod, futimens,
// a write through a dup): always the stat of the name.
TEST(UpperCreateTest, FstatAfterACreateAndEachChangeIsTheNamesStat) {
  ScratchDir dir;
  using Step = std::pair<const char*, std::function<int(int)>>;
  const std::vector<Step> steps = {
      {"write", [](int fd) { return write(fd, "abc", 3) == 3 ? 0 : -1; }},
      {"ftruncate0", [](int fd) { return ftruncate(fd, 0); }},
      {"pwrite", [](int fd) { return pwrite(fd, "xy", 2, 10) == 2 ? 0 : -1; }},
      {"fallocate", [](int fd) { return posix_fallocate(fd, 0, 8192); }},
      {"fchmod", [](int fd) { return fchmod(fd, 0600); }},
      {"futimens",
       [](int fd) {
         struct timespec ts[2] = {{1, 2}, {3, 4}};
         return futimens(fd, ts);
       }},
      {"dup_write",
       [](int fd) {
         UniqueFd d(dup(fd));
         return write(d.get(), "z", 1) == 1 ? 0 : -1;
       }},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    // Each step on a file just made, after its first fstat (the fresh one).
    std::string path = dir.Path("f" + std::to_string(i));
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    ASSERT_SYSCALL_SUCCEEDS(fd.get());
    EXPECT_EQ(FstatIsStat(fd.get(), path), "") << "fresh";
    usleep(2000);  // so that a time the step sets differs from the create's
    ASSERT_SYSCALL_SUCCEEDS(steps[i].second(fd.get()));
    EXPECT_EQ(FstatIsStat(fd.get(), path), "") << steps[i].first;
  }
}

// A create by a name relative to the working directory, and one with
// O_EXCL; a child that writes through the description it shares with its
// parent: the parent's fstat then is the name's stat.
TEST(UpperCreateTest, FstatAfterARelativeCreateAndAChildsWrite) {
  ScratchDir dir;
  CwdGuard cwd;
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  UniqueFd rel(open("rel", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(rel.get());
  EXPECT_EQ(FstatIsStat(rel.get(), "rel"), "");
  std::string path = dir.Path("shared");
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(FstatIsStat(fd.get(), path), "");
  int status = RunInChild([&fd] { return write(fd.get(), "child", 5) == 5 ? 0 : 1; });
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(FstatIsStat(fd.get(), path), "");
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_size, 5);
}

}  // namespace
}  // namespace sentry::conformance
