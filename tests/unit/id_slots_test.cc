// Blocks of host ids, one sandbox each (sentry/run/id_slots.h).
#include "sentry/run/id_slots.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace sentry {
namespace {

class IdSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/id-slots-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    parent_ = templ;
    dir_ = parent_ + "/ids";  // made by Take
  }
  void TearDown() override {
    for (int k = 0; k < 8; ++k) unlink((dir_ + "/" + std::to_string(k) + ".lock").c_str());
    rmdir(dir_.c_str());
    rmdir(parent_.c_str());
  }
  std::string parent_, dir_;
};

TEST_F(IdSlotTest, EachHolderGetsItsOwnBlockAndTheDirectoryIsPrivate) {
  auto a = IdSlot::Take(dir_, 5000, 4);
  auto b = IdSlot::Take(dir_, 5000, 4);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->index(), 0u);
  EXPECT_EQ(a->base(), 5000u);
  EXPECT_EQ(b->index(), 1u);
  EXPECT_EQ(b->base(), 5000u + kIdsPerSlot);
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(IdSlotTest, AllHeldIsResourceExhaustedNamingTheCount) {
  auto a = IdSlot::Take(dir_, 5000, 2);
  auto b = IdSlot::Take(dir_, 5000, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = IdSlot::Take(dir_, 5000, 2);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("all 2 "), std::string::npos) << c.status();
}

TEST_F(IdSlotTest, ReleasedByTheDestructorAndMovesKeepIt) {
  {
    auto a = IdSlot::Take(dir_, 5000, 1);
    ASSERT_TRUE(a.ok());
    IdSlot moved = std::move(*a);
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(IdSlot::Take(dir_, 5000, 1).ok());
  }
  EXPECT_TRUE(IdSlot::Take(dir_, 5000, 1).ok());
}

TEST_F(IdSlotTest, ReleasedWhenTheHolderIsKilled) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto a = IdSlot::Take(dir_, 5000, 1);
    char c = a.ok() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(IdSlot::Take(dir_, 5000, 1).ok());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  auto again = IdSlot::Take(dir_, 5000, 1);
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(IdSlotTest, RefusesADirectoryOthersMayWriteOrThatIsNotOne) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0777), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  EXPECT_EQ(IdSlot::Take(dir_, 5000, 1).status().code(), absl::StatusCode::kFailedPrecondition);
  rmdir(dir_.c_str());
  ASSERT_EQ(symlink("/tmp", dir_.c_str()), 0);
  EXPECT_EQ(IdSlot::Take(dir_, 5000, 1).status().code(), absl::StatusCode::kFailedPrecondition);
  unlink(dir_.c_str());
  if (geteuid() == 0) {
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
    ASSERT_EQ(chown(dir_.c_str(), 12345, 12345), 0);
    EXPECT_EQ(IdSlot::Take(dir_, 5000, 1).status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace sentry
