#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(DevTest, NullReadsEof) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[16];
  EXPECT_EQ(read(fd.get(), buf, sizeof(buf)), 0);
}

TEST(DevTest, NullSwallowsWrites) {
  UniqueFd fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  const std::string data(100000, 'x');
  EXPECT_EQ(write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
}

TEST(DevTest, ZeroReadsZeros) {
  UniqueFd fd(open("/dev/zero", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[256];
  std::fill(buf, buf + sizeof(buf), 'x');
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  EXPECT_EQ(std::string(buf, sizeof(buf)), std::string(sizeof(buf), '\0'));
}

TEST(DevTest, UrandomGivesBytes) {
  UniqueFd fd(open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[64] = {};
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  // 64 zero bytes from a working generator would be a 2^-512 event.
  EXPECT_NE(std::string(buf, sizeof(buf)), std::string(sizeof(buf), '\0'));
}

TEST(DevTest, FullRejectsWrites) {
  UniqueFd fd(open("/dev/full", O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(write(fd.get(), "x", 1), ENOSPC);
}

TEST(DevTest, FullReadsZeros) {
  UniqueFd fd(open("/dev/full", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), 8);
  EXPECT_EQ(std::string(buf, 8), std::string(8, '\0'));
}

TEST(DevTest, DeviceNumbers) {
  const struct {
    const char* path;
    unsigned minor;
  } devices[] = {{"/dev/null", 3}, {"/dev/zero", 5}, {"/dev/full", 7}, {"/dev/urandom", 9}};
  for (const auto& dev : devices) {
    SCOPED_TRACE(dev.path);
    const struct stat st = StatOrFail(dev.path);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(major(st.st_rdev), 1u);
    EXPECT_EQ(minor(st.st_rdev), dev.minor);
    EXPECT_EQ(st.st_mode & 0777, 0666u);
  }
}

TEST(DevTest, NullSeeksToZero) {
  UniqueFd fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(lseek(fd.get(), 100, SEEK_SET), 0);
}

}  // namespace
}  // namespace sentry::conformance
