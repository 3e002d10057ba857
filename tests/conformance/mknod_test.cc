#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(MkfifoTest, CreatesFifo) {
  ScratchDir dir;
  UmaskGuard mask(022);
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(dir.Path("fifo").c_str(), 0666));
  const struct stat st = StatOrFail(dir.Path("fifo"));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(MkfifoTest, ExistingNameFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(mkfifo(dir.Path("f").c_str(), 0600), EEXIST);
}

TEST(MkfifoTest, MissingParentFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(mkfifo(dir.Path("missing/fifo").c_str(), 0600), ENOENT);
}

TEST(MkfifoTest, NonblockingOpens) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(dir.Path("fifo").c_str(), 0600));
  // No reader yet: a non-blocking writer cannot open.
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("fifo").c_str(), O_WRONLY | O_NONBLOCK), ENXIO);
  UniqueFd r(open(dir.Path("fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(r.get());
  UniqueFd w(open(dir.Path("fifo").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(w.get());
  ASSERT_EQ(write(w.get(), "hi", 2), 2);
  char buf[4] = {};
  EXPECT_EQ(read(r.get(), buf, sizeof(buf)), 2);
  EXPECT_STREQ(buf, "hi");
}

TEST(MknodTest, FifoViaMknod) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_mknod, dir.Path("fifo").c_str(), S_IFIFO | 0600, 0));
  EXPECT_TRUE(S_ISFIFO(StatOrFail(dir.Path("fifo")).st_mode));
}

TEST(MknodTest, RegularFileViaMknod) {
  ScratchDir dir;
  UmaskGuard mask(0);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_mknod, dir.Path("f").c_str(), S_IFREG | 0640, 0));
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_size, 0);
}

TEST(MknodTest, ZeroTypeMeansRegularFile) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_mknod, dir.Path("f").c_str(), 0600, 0));
  EXPECT_TRUE(S_ISREG(StatOrFail(dir.Path("f")).st_mode));
}

TEST(MknodTest, CharDeviceAsNonRootFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_mknod, dir.Path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("null").c_str(), F_OK), ENOENT);
}

TEST(MknodTest, DirectoryTypeFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_mknod, dir.Path("d").c_str(), S_IFDIR | 0755, 0), EPERM);
}

TEST(MknodTest, InvalidTypeFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_mknod, dir.Path("x").c_str(), 0170000 | 0600, 0), EINVAL);
}

TEST(MknodatTest, RelativeToDirfd) {
  ScratchDir dir;
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_mknodat, dfd.get(), "fifo", S_IFIFO | 0600, 0));
  EXPECT_TRUE(S_ISFIFO(StatOrFail(dir.Path("fifo")).st_mode));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_mknodat, dfd.get(), "fifo", S_IFIFO | 0600, 0), EEXIST);
}

}  // namespace
}  // namespace sentry::conformance
