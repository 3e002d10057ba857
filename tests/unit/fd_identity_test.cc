// FdIdentity: lookups by host identity; a table that stays bounded however
// many fresh objects (directory tokens, /proc memfds) a guest opens, and that
// never forgets an object the guest still holds.
#include "sentry/kernel/fd_identity.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "sentry/base/sha256.h"

namespace sentry {
namespace {

struct stat Host(dev_t dev, ino_t ino) {
  struct stat st {};
  st.st_dev = dev;
  st.st_ino = ino;
  return st;
}

TEST(FdIdentityTest, FindsWhatWasRegistered) {
  FdIdentity ids;
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kDir, vfs::Attr{});
  ASSERT_TRUE(ids.Register(Host(1, 2), OpenObject{node, true, "/tmp"}).ok());
  const OpenObject* o = ids.Find(Host(1, 2));
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->node, node);
  EXPECT_TRUE(o->dir_token);
  EXPECT_EQ(ids.Find(Host(1, 3)), nullptr);
  EXPECT_EQ(ids.Find(Host(2, 2)), nullptr);
}

// The hole-5 shape: one object held, many fresh ones opened and closed. The
// held one is never forgotten and the table stays near the sweep floor.
TEST(FdIdentityTest, SweepKeepsWhatTheGuestHolds) {
  FdIdentity ids;
  std::vector<FdIdentity::Key> held = {{1, 42}};
  ids.set_held_keys([&] { return std::optional(held); });
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kFile, vfs::Attr{});
  ASSERT_TRUE(ids.Register(Host(1, 42), OpenObject{node, false, "/usr/lib/x"}).ok());
  for (ino_t i = 0; i < 70000; ++i) ASSERT_TRUE(ids.Register(Host(7, i), OpenObject{node}).ok());
  const OpenObject* o = ids.Find(Host(1, 42));
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->path, "/usr/lib/x");
  EXPECT_LE(ids.size(), FdIdentity::kSweepFloor);
  EXPECT_GE(ids.sweeps(), 70000 / FdIdentity::kSweepFloor);
  // A sweep drops what no task holds: the newest fresh object is gone after
  // the next one.
  EXPECT_EQ(ids.Find(Host(7, 0)), nullptr);
}

// Full of objects the guest holds: the next donation fails with ENFILE and
// nothing held is dropped; once the guest lets go, donations work again.
TEST(FdIdentityTest, FullOfHeldObjectsRefusesTheNewOne) {
  FdIdentity ids;
  bool hold_all = true;
  std::vector<FdIdentity::Key> held;
  ids.set_held_keys([&] {
    return hold_all ? std::optional(held) : std::optional(std::vector<FdIdentity::Key>{});
  });
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kFile, vfs::Attr{});
  for (ino_t i = 0; i < FdIdentity::kMaxEntries; ++i) {
    held.push_back({7, i});
    ASSERT_TRUE(ids.Register(Host(7, i), OpenObject{node}).ok()) << i;
  }
  auto r = ids.Register(Host(8, 1), OpenObject{node});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), ENFILE);
  EXPECT_EQ(ids.size(), FdIdentity::kMaxEntries);
  EXPECT_NE(ids.Find(Host(7, 0)), nullptr);
  // A known object registered again (a lower file opened twice) still works.
  EXPECT_TRUE(ids.Register(Host(7, 5), OpenObject{node}).ok());
  hold_all = false;
  std::this_thread::sleep_for(FdIdentity::kFullSweepInterval);
  EXPECT_TRUE(ids.Register(Host(8, 1), OpenObject{node}).ok());
  EXPECT_EQ(ids.size(), 1u);
}

// When what the guest holds cannot be read, nothing is dropped.
TEST(FdIdentityTest, UnknownHoldingsDropNothing) {
  FdIdentity ids;
  ids.set_held_keys([] { return std::optional<std::vector<FdIdentity::Key>>(); });
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kFile, vfs::Attr{});
  for (ino_t i = 0; i < FdIdentity::kMaxEntries; ++i) {
    ASSERT_TRUE(ids.Register(Host(7, i), OpenObject{node}).ok());
  }
  EXPECT_EQ(ids.Register(Host(8, 1), OpenObject{node}).error(), ENFILE);
  EXPECT_NE(ids.Find(Host(7, 0)), nullptr);
}

// Paths are charged: PATH_MAX-long paths fill the byte budget long before
// the entry cap.
TEST(FdIdentityTest, LongPathsAreCharged) {
  FdIdentity ids;
  std::vector<FdIdentity::Key> held;
  ids.set_held_keys([&] { return std::optional(held); });
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kFile, vfs::Attr{});
  std::string path(4095, 'p');
  size_t ok = 0;
  for (ino_t i = 0; i < FdIdentity::kMaxEntries; ++i) {
    held.push_back({7, i});
    if (!ids.Register(Host(7, i), OpenObject{node, false, path}).ok()) break;
    ++ok;
  }
  EXPECT_EQ(ok, FdIdentity::kMaxBytes / (FdIdentity::kEntryBytes + path.size()));
  EXPECT_LE(ids.bytes(), FdIdentity::kMaxBytes);
}

// Generated memfd text is charged while the guest holds it: ENOMEM past
// kMaxDataBytes, room again once it lets go.
TEST(FdIdentityTest, GeneratedTextIsCharged) {
  FdIdentity ids;
  std::vector<FdIdentity::Key> held;
  ids.set_held_keys([&] { return std::optional(held); });
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kFile, vfs::Attr{});
  OpenObject big{node};
  big.data_bytes = 5 << 20;
  size_t ok = 0;
  for (ino_t i = 0; i < 100; ++i) {
    held.push_back({9, i});
    auto r = ids.Register(Host(9, i), big);
    if (!r.ok()) {
      EXPECT_EQ(r.error(), ENOMEM);
      break;
    }
    ++ok;
  }
  EXPECT_EQ(ok, FdIdentity::kMaxDataBytes / big.data_bytes);
  held.clear();
  std::this_thread::sleep_for(FdIdentity::kFullSweepInterval);
  EXPECT_TRUE(ids.Register(Host(9, 1000), big).ok());
  EXPECT_EQ(ids.data_bytes(), big.data_bytes);
}

TEST(FdIdentityTest, CallerObjectsAreKnownApart) {
  FdIdentity ids;
  ids.TrustCallerObject(Host(3, 4));
  EXPECT_TRUE(ids.IsCallerObject(Host(3, 4)));
  EXPECT_FALSE(ids.IsCallerObject(Host(3, 5)));
  EXPECT_EQ(ids.Find(Host(3, 4)), nullptr);
}

TEST(Sha256Test, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

}  // namespace
}  // namespace sentry
