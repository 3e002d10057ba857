#include <fcntl.h>
#include <linux/aio_abi.h>
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

// Under sentry both are answered without flushing the host (the guest's
// files are in memory); what the guest sees is the same.
TEST(SyncTest, SyncfsOnAnyOpenFdSucceeds) {
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  UniqueFd r(fds[0]), w(fds[1]);
  EXPECT_SYSCALL_SUCCEEDS(syncfs(w.get()));
  ScratchDir dir;
  UniqueFd d(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(d.get());
  EXPECT_SYSCALL_SUCCEEDS(syncfs(d.get()));
  UniqueFd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(null.get());
  EXPECT_SYSCALL_SUCCEEDS(syncfs(null.get()));
  EXPECT_SYSCALL_FAILS_WITH(syncfs(1 << 20), EBADF);
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_sync));
}

// io_setup traps (its events count against the host's fs.aio-nr): a small
// context is made and destroyed as natively; 0 events is EINVAL, a context
// pointer that is not 0 EINVAL, a bad one EFAULT.
TEST(AioTest, IoSetupAndDestroy) {
  aio_context_t ctx = 0;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_io_setup, 8, &ctx));
  EXPECT_NE(ctx, 0u);
  aio_context_t again = ctx;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_io_setup, 8, &again), EINVAL);
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_io_destroy, ctx));
  aio_context_t zero = 0;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_io_setup, 0, &zero), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_io_setup, 8, reinterpret_cast<void*>(8)), EFAULT);
}

}  // namespace
}  // namespace sentry::conformance
