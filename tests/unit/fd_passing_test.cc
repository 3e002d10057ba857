// Fds over a unix socket with their payload (sentry/base/fd_passing.h).
#include "sentry/base/fd_passing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

namespace sentry {
namespace {

class FdPassingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    a_ = UniqueFd(sv[0]);
    b_ = UniqueFd(sv[1]);
  }
  // The inode of an fd, to tell which file came.
  static ino_t Ino(int fd) {
    struct stat st {};
    fstat(fd, &st);
    return st.st_ino;
  }
  UniqueFd a_, b_;
};

TEST_F(FdPassingTest, PayloadAndFdsArriveInOrder) {
  UniqueFd null(open("/dev/null", O_RDONLY | O_CLOEXEC)), root(open("/", O_PATH | O_CLOEXEC));
  const int fds[2] = {null.get(), root.get()};
  char out = 'x';
  ASSERT_EQ(SendWithFds(a_.get(), &out, 1, fds), 1);
  char in = 0;
  std::array<UniqueFd, 2> got;
  Received r = ReceiveWithFds(b_.get(), &in, 1, got);
  EXPECT_EQ(r.bytes, 1);
  EXPECT_FALSE(r.too_many);
  EXPECT_EQ(in, 'x');
  ASSERT_TRUE(got[0] && got[1]);
  EXPECT_EQ(Ino(got[0].get()), Ino(null.get()));
  EXPECT_EQ(Ino(got[1].get()), Ino(root.get()));
  EXPECT_EQ(fcntl(got[0].get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST_F(FdPassingTest, FdsBeyondTheSpanAreClosedAndSaidSo) {
  UniqueFd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int fds[3] = {null.get(), null.get(), null.get()};
  char out = 'y', in = 0;
  ASSERT_EQ(SendWithFds(a_.get(), &out, 1, fds), 1);
  std::array<UniqueFd, 1> got;
  Received r = ReceiveWithFds(b_.get(), &in, 1, got);
  EXPECT_EQ(r.bytes, 1);
  EXPECT_TRUE(r.too_many);
  EXPECT_TRUE(got[0]);
  // The two it had no room for are closed: the next open gets the fd after ours.
  UniqueFd next(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(next.get(), got[0].get() + 1);
}

TEST_F(FdPassingTest, NoFdsAndEndOfFile) {
  uint32_t out = 42, in = 0;
  ASSERT_EQ(SendWithFds(a_.get(), &out, sizeof(out), {}), static_cast<ssize_t>(sizeof(out)));
  std::array<UniqueFd, 1> got;
  Received r = ReceiveWithFds(b_.get(), &in, sizeof(in), got);
  EXPECT_EQ(r.bytes, static_cast<ssize_t>(sizeof(in)));
  EXPECT_EQ(in, 42u);
  EXPECT_FALSE(got[0]);
  a_.Reset();
  EXPECT_EQ(ReceiveWithFds(b_.get(), &in, sizeof(in), got).bytes, 0);
}

TEST_F(FdPassingTest, TooManyToSendIsRefused) {
  int fds[kMaxPassedFds + 1];
  for (int& fd : fds) fd = 0;
  char out = 'z';
  EXPECT_EQ(SendWithFds(a_.get(), &out, 1, fds), -1);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace sentry
