// FdHolds: references kept for tokens, hints that only ever point at the
// reference they were made for, and bounds on both.
#include "sentry/kernel/fd_holds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <vector>

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

// This process plays the guest: `guest` is its fd, and the sentry's
// reference is a dup of it (the same description, as a donated fd is).
struct Donation {
  UniqueFd guest = DevNull();
  UniqueFd Reference() const { return UniqueFd(dup(guest.get())); }
};

TEST(FdHoldsTest, HintLeadsToTheKeptReference) {
  FdHolds holds;
  Donation d;
  UniqueFd fd = d.Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), d.guest.get());
  auto held = holds.Hinted(getpid(), d.guest.get());
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->fd, raw);
  EXPECT_EQ(held->st.st_ino, 1u);
  EXPECT_FALSE(holds.Hinted(getpid(), d.guest.get() + 1).has_value());  // another fd
  EXPECT_FALSE(holds.Hinted(getpid() + 1, d.guest.get()).has_value());  // another process
}

TEST(FdHoldsTest, OneReferencePerObject) {
  FdHolds holds;
  Donation d;
  holds.Keep(d.Reference(), Obj(1), getpid(), d.guest.get());
  UniqueFd second = d.Reference();
  int raw = second.get();
  holds.Keep(std::move(second), Obj(1), getpid(), 1000);  // a copy seen elsewhere
  EXPECT_EQ(holds.held(), 1u);
  EXPECT_FALSE(IsOpen(raw));  // the copy was closed, not kept
  EXPECT_EQ(holds.Hinted(getpid(), 1000)->fd, holds.Hinted(getpid(), d.guest.get())->fd);
}

TEST(FdHoldsTest, ReferenceTheGuestClosedIsReleasedBySweep) {
  FdHolds holds;
  auto first = std::make_unique<Donation>();
  UniqueFd fd = first->Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), first->guest.get());
  Donation second;
  holds.Keep(second.Reference(), Obj(2), getpid(), second.guest.get());
  EXPECT_EQ(holds.held(), 2u);  // both still open in the "guest"
  EXPECT_TRUE(IsOpen(raw));
  first.reset();  // the guest closes its fd
  // Opened and closed in a loop: what is held stays within a sweep's
  // interval of what the guest keeps open (the second, and the last one).
  for (int i = 0; i < 200; ++i) {
    Donation churn;
    holds.Keep(churn.Reference(), Obj(3 + i), getpid(), churn.guest.get());
    EXPECT_LE(holds.held(), FdHolds::kSweepEvery + 2) << i;
  }
  // (raw's number may be a later reference's by now: the object says.)
  EXPECT_FALSE(holds.OfObject(Obj(1)).has_value());
  EXPECT_TRUE(holds.OfObject(Obj(2)).has_value());
}

TEST(FdHoldsTest, SweepsStaySparseWhenManyAreOpen) {
  // 40 the guest keeps open: each sweep keeps them all, and the next waits
  // for 40 Keeps, so the references stay held (no reference is lost) and
  // the bound holds.
  FdHolds holds;
  std::vector<Donation> open(40);
  for (size_t i = 0; i < open.size(); ++i) {
    holds.Keep(open[i].Reference(), Obj(1 + i), getpid(), open[i].guest.get());
  }
  EXPECT_EQ(holds.held(), 40u);
  for (size_t i = 0; i < open.size(); ++i) {
    EXPECT_TRUE(holds.OfObject(Obj(1 + i)).has_value()) << i;
  }
}

TEST(FdHoldsTest, OldestReferenceClosedPastTheCapAndItsHintsMiss) {
  FdHolds holds;
  std::vector<Donation> guests(FdHolds::kMaxHeld + 1);
  UniqueFd first = guests[0].Reference();
  int raw = first.get();
  holds.Keep(std::move(first), Obj(1), getpid(), guests[0].guest.get());
  for (size_t i = 1; i < FdHolds::kMaxHeld; ++i) {
    holds.Keep(guests[i].Reference(), Obj(1 + i), getpid(), guests[i].guest.get());
  }
  EXPECT_EQ(holds.held(), FdHolds::kMaxHeld);
  EXPECT_TRUE(IsOpen(raw));
  Donation& last = guests[FdHolds::kMaxHeld];
  holds.Keep(last.Reference(), Obj(100000), getpid(), last.guest.get());
  EXPECT_EQ(holds.held(), FdHolds::kMaxHeld);
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_FALSE(holds.Hinted(getpid(), guests[0].guest.get()).has_value());
  EXPECT_FALSE(holds.OfObject(Obj(1)).has_value());
  EXPECT_TRUE(holds.OfObject(Obj(100000)).has_value());
}

TEST(FdHoldsTest, HintsStayBounded) {
  FdHolds holds;
  Donation d;
  holds.Keep(d.Reference(), Obj(1), getpid(), d.guest.get());
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

// A lower file: each open is a description of its own. The newest donation
// is held; the older one's hints miss, its reference is closed.
TEST(FdHoldsTest, SharedObjectHoldsTheNewestDescription) {
  FdHolds holds;
  Donation first, second;
  UniqueFd fd = first.Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), first.guest.get(), /*shared=*/true);
  EXPECT_TRUE(holds.kept_shared());
  UniqueFd next = second.Reference();
  int raw_next = next.get();
  holds.Keep(std::move(next), Obj(1), getpid(), second.guest.get(), /*shared=*/true);
  EXPECT_EQ(holds.held(), 1u);
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_FALSE(holds.Hinted(getpid(), first.guest.get()).has_value());
  ASSERT_TRUE(holds.Hinted(getpid(), second.guest.get()).has_value());
  EXPECT_EQ(holds.Hinted(getpid(), second.guest.get())->fd, raw_next);
}

// With a closer (the store's stash in a run): a released token's reference
// goes to it, still open; a lower file's (shared) is closed at once, so
// that a flock on its description goes with the guest's last fd.
TEST(FdHoldsTest, ReleasedTokensGoToTheCloserLowerFilesCloseAtOnce) {
  FdHolds holds;
  std::vector<UniqueFd> handed;
  holds.set_close_later([&handed](UniqueFd fd) { handed.push_back(std::move(fd)); });
  std::vector<Donation> guests(FdHolds::kMaxHeld + 2);
  UniqueFd token = guests[0].Reference();
  int token_raw = token.get();
  holds.Keep(std::move(token), Obj(1), getpid(), guests[0].guest.get());
  UniqueFd file = guests[1].Reference();
  int file_raw = file.get();
  holds.Keep(std::move(file), Obj(2), getpid(), guests[1].guest.get(), /*shared=*/true);
  // Past the cap, the two oldest go.
  for (size_t i = 2; i < guests.size(); ++i) {
    holds.Keep(guests[i].Reference(), Obj(1 + i), getpid(), guests[i].guest.get());
  }
  EXPECT_FALSE(holds.OfObject(Obj(1)).has_value());
  EXPECT_FALSE(holds.OfObject(Obj(2)).has_value());
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed[0].get(), token_raw);
  EXPECT_TRUE(IsOpen(token_raw));
  EXPECT_NE(file_raw, token_raw);
  EXPECT_FALSE(IsOpen(file_raw));
}

// A lock is about to be taken: the reference goes, and the object is never
// held again (a later donation's fd is closed at once).
TEST(FdHoldsTest, RefusedObjectIsReleasedAndNeverHeldAgain) {
  FdHolds holds;
  Donation d;
  UniqueFd fd = d.Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), d.guest.get(), /*shared=*/true);
  holds.Refuse(Obj(1));
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_EQ(holds.held(), 0u);
  EXPECT_FALSE(holds.Hinted(getpid(), d.guest.get()).has_value());
  Donation again;
  UniqueFd fd2 = again.Reference();
  int raw2 = fd2.get();
  holds.Keep(std::move(fd2), Obj(1), getpid(), again.guest.get(), /*shared=*/true);
  EXPECT_EQ(holds.held(), 0u);
  EXPECT_FALSE(IsOpen(raw2));
  // Another lower file is still held.
  holds.Keep(again.Reference(), Obj(2), getpid(), again.guest.get(), /*shared=*/true);
  EXPECT_EQ(holds.held(), 1u);
}

// Past kMaxRefused refusals no lower file is held at all: the set of
// refused objects stays bounded and no refused one comes back.
TEST(FdHoldsTest, RefusalsPastTheBoundStopHoldingLowerFiles) {
  FdHolds holds;
  for (size_t i = 0; i <= FdHolds::kMaxRefused; ++i) holds.Refuse(Obj(1 + i));
  Donation d;
  holds.Keep(d.Reference(), Obj(1), getpid(), d.guest.get(), /*shared=*/true);
  holds.Keep(d.Reference(), Obj(100000), getpid(), d.guest.get(), /*shared=*/true);
  EXPECT_EQ(holds.held(), 0u);
  // Tokens still are.
  holds.Keep(d.Reference(), Obj(100001), getpid(), d.guest.get());
  EXPECT_EQ(holds.held(), 1u);
}

// The last Keep's reference is offered once as a guess for an fd not hinted
// (a directory fd moved to another number), to its own process only, and
// never once its slot was reused.
TEST(FdHoldsTest, LastKeepIsGuessedOncePerKeep) {
  FdHolds holds;
  Donation d;
  UniqueFd fd = d.Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), d.guest.get());
  EXPECT_FALSE(holds.Guess(getpid() + 1).has_value());  // another process
  auto guess = holds.Guess(getpid());
  ASSERT_TRUE(guess.has_value());
  EXPECT_EQ(guess->fd, raw);
  EXPECT_EQ(guess->st.st_ino, 1u);
  EXPECT_FALSE(holds.Guess(getpid()).has_value());  // once
  // A Keep of an object held already offers it again.
  holds.Keep(d.Reference(), Obj(1), getpid(), 1000);
  EXPECT_EQ(holds.Guess(getpid())->fd, raw);
  // A reference let go since (its slot's generation moved) is not offered.
  Donation second;
  holds.Keep(second.Reference(), Obj(2), getpid(), second.guest.get());
  holds.Refuse(Obj(2));
  EXPECT_FALSE(holds.Guess(getpid()).has_value());
}

TEST(FdHoldsTest, DisabledGuessesNothing) {
  FdHolds holds;
  holds.set_enabled(false);
  Donation d;
  holds.Keep(d.Reference(), Obj(1), getpid(), d.guest.get());
  EXPECT_FALSE(holds.Guess(getpid()).has_value());
}

// A hinted reference whose kcmp missed where it was last seen is let go at
// once (as the sweep would); one last seen elsewhere stays.
TEST(FdHoldsTest, MissWhereLastSeenReleasesTheReference) {
  FdHolds holds;
  Donation d;
  UniqueFd fd = d.Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), d.guest.get());
  ASSERT_TRUE(holds.Hint(getpid(), 1000, Obj(1)));  // last seen as 1000 now
  holds.Missed(getpid(), d.guest.get());            // not where it was last seen
  EXPECT_EQ(holds.held(), 1u);
  EXPECT_FALSE(holds.Hinted(getpid(), d.guest.get()).has_value());
  holds.Missed(getpid(), 1000);
  EXPECT_EQ(holds.held(), 0u);
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_FALSE(holds.Hinted(getpid(), 1000).has_value());
}

// A donation under a number lets go, without a kcmp, of the reference last
// seen under it: that number is the new description now.
TEST(FdHoldsTest, DonationUnderANumberReleasesWhatWasLastSeenThere) {
  FdHolds holds;
  Donation first, second, elsewhere;
  UniqueFd fd = first.Reference();
  int raw = fd.get();
  holds.Keep(std::move(fd), Obj(1), getpid(), 77);
  holds.Keep(elsewhere.Reference(), Obj(3), getpid() + 1, 77);  // another process's 77
  holds.Keep(second.Reference(), Obj(2), getpid(), 77);
  EXPECT_EQ(holds.held(), 2u);
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_EQ(holds.Hinted(getpid(), 77)->st.st_ino, 2u);
  EXPECT_EQ(holds.Hinted(getpid() + 1, 77)->st.st_ino, 3u);
}

}  // namespace
}  // namespace sentry
