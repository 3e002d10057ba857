#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(SyncTest, FsyncAndFdatasyncOnFile) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_EQ(write(fd.get(), "data", 4), 4);
  EXPECT_SYSCALL_SUCCEEDS(fsync(fd.get()));
  EXPECT_SYSCALL_SUCCEEDS(fdatasync(fd.get()));
}

TEST(SyncTest, FsyncOnReadOnlyFdSucceeds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "data"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(fsync(fd.get()));
}

TEST(SyncTest, FsyncOnDirectorySucceeds) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(fsync(fd.get()));
}

TEST(SyncTest, FsyncOnPipeFails) {
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  UniqueFd r(fds[0]), w(fds[1]);
  EXPECT_SYSCALL_FAILS_WITH(fsync(w.get()), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(fdatasync(r.get()), EINVAL);
}

TEST(SyncTest, FsyncBadFdFails) {
  EXPECT_SYSCALL_FAILS_WITH(fsync(-1), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(fdatasync(-1), EBADF);
}

TEST(SyncTest, SyncAndSyncfsSucceed) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "data"));
  sync();
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(syncfs(fd.get()));
  EXPECT_SYSCALL_FAILS_WITH(syncfs(-1), EBADF);
}

}  // namespace
}  // namespace sentry::conformance
