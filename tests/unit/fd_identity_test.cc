// FdIdentity: lookups by host identity, and a table that stays bounded however
// many fresh objects (directory tokens, /proc memfds) a guest opens.
#include "sentry/kernel/fd_identity.h"

#include <gtest/gtest.h>

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
  ids.Register(Host(1, 2), OpenObject{node, true, "/tmp"});
  const OpenObject* o = ids.Find(Host(1, 2));
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->node, node);
  EXPECT_TRUE(o->dir_token);
  EXPECT_EQ(ids.Find(Host(1, 3)), nullptr);
  EXPECT_EQ(ids.Find(Host(2, 2)), nullptr);
}

TEST(FdIdentityTest, StaysBoundedAndKeepsTheNewest) {
  FdIdentity ids;
  auto node = std::make_shared<vfs::Node>(vfs::NodeKind::kFile, vfs::Attr{});
  size_t n = FdIdentity::kMaxEntries + 1000;
  for (size_t i = 0; i < n; ++i) ids.Register(Host(7, i), OpenObject{node});
  EXPECT_EQ(ids.size(), FdIdentity::kMaxEntries);
  EXPECT_EQ(ids.Find(Host(7, 0)), nullptr);
  EXPECT_NE(ids.Find(Host(7, n - 1)), nullptr);
  // Registering a known object again neither grows the table nor evicts.
  ids.Register(Host(7, n - 1), OpenObject{node});
  EXPECT_EQ(ids.size(), FdIdentity::kMaxEntries);
  EXPECT_NE(ids.Find(Host(7, 1000)), nullptr);
}

TEST(Sha256Test, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

}  // namespace
}  // namespace sentry
