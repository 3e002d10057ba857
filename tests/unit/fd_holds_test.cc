// FdHolds: references kept for tokens, hints that only ever point at the
// reference they were made for, and bounds on both.
#include "sentry/kernel/fd_holds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace sentry {
namespace {

struct stat Obj(ino_t ino) {
  struct stat st {};
  st.st_dev = 9;
  st.st_ino = ino;
  return st;
}

UniqueFd DevNull() { return UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC)); }

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) >= 0; }

TEST(FdHoldsTest, HintLeadsToTheKeptReference) {
  FdHolds holds;
  UniqueFd fd = DevNull();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), 100, 5);
  auto held = holds.Hinted(100, 5);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->fd, raw);
  EXPECT_EQ(held->st.st_ino, 1u);
  EXPECT_FALSE(holds.Hinted(100, 6).has_value());  // another fd
  EXPECT_FALSE(holds.Hinted(101, 5).has_value());  // another process
}

TEST(FdHoldsTest, OneReferencePerObject) {
  FdHolds holds;
  holds.Keep(DevNull(), Obj(1), 100, 5);
  UniqueFd second = DevNull();
  int raw = second.get();
  holds.Keep(std::move(second), Obj(1), 200, 7);  // a forked child's copy
  EXPECT_EQ(holds.held(), 1u);
  EXPECT_FALSE(IsOpen(raw));  // the copy was closed, not kept
  EXPECT_EQ(holds.Hinted(200, 7)->fd, holds.Hinted(100, 5)->fd);
}

TEST(FdHoldsTest, OldestReferenceClosedPastTheCapAndItsHintsMiss) {
  FdHolds holds;
  UniqueFd first = DevNull();
  int raw = first.get();
  holds.Keep(std::move(first), Obj(1), 100, 3);
  for (size_t i = 1; i < FdHolds::kMaxHeld; ++i) holds.Keep(DevNull(), Obj(1 + i), 100, 4);
  EXPECT_TRUE(IsOpen(raw));
  holds.Keep(DevNull(), Obj(100000), 100, 4);
  EXPECT_EQ(holds.held(), FdHolds::kMaxHeld);
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_FALSE(holds.Hinted(100, 3).has_value());
  EXPECT_FALSE(holds.OfObject(Obj(1)).has_value());
  // Its slot holds the newest object now, which no old hint reaches.
  EXPECT_TRUE(holds.OfObject(Obj(100000)).has_value());
}

TEST(FdHoldsTest, HintsStayBounded) {
  FdHolds holds;
  holds.Keep(DevNull(), Obj(1), 100, 0);
  for (int fd = 1; fd < static_cast<int>(FdHolds::kMaxHints) * 3; ++fd) {
    ASSERT_TRUE(holds.Hint(100, fd, Obj(1)));
  }
  EXPECT_FALSE(holds.Hint(100, 1, Obj(2)));  // nothing held for it
  int found = 0;
  for (int fd = 0; fd < static_cast<int>(FdHolds::kMaxHints) * 3; ++fd) {
    found += holds.Hinted(100, fd).has_value();
  }
  EXPECT_GT(found, 0);
  EXPECT_LE(found, static_cast<int>(FdHolds::kMaxHints));
}

TEST(FdHoldsTest, DisabledKeepsNothing) {
  FdHolds holds;
  holds.set_enabled(false);
  UniqueFd fd = DevNull();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), 100, 5);
  EXPECT_EQ(holds.held(), 0u);
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_FALSE(holds.Hinted(100, 5).has_value());
}

}  // namespace
}  // namespace sentry
