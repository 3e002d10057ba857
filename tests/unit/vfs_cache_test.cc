// The lower-layer cache (vfs/vfs_cache.cc) and the metadata budget: what can
// be looked up again is dropped past the cache's budget, what is held or was
// changed stays, and what the guest makes is charged and refunded exactly.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

class VfsCacheTest : public VfsTest {};

TEST_F(VfsCacheTest, AbsentNamesAreForgottenPastTheBudget) {
  v().set_cache_limit(64 << 10);
  NodeRef lower = Get("/lower");
  for (int i = 0; i < 20000; ++i) {
    EXPECT_EQ(ErrnoOf(Lookup("/lower/absent" + std::to_string(i))), "ENOENT");
  }
  // A shrink leaves none; at most the budget's worth came after it.
  EXPECT_LE(lower->host_absent.size() * kAbsentCost, 64u << 10);
  EXPECT_LE(v().cache_bytes(), 64u << 10);
  // Still absent, looked up again.
  EXPECT_EQ(ErrnoOf(Lookup("/lower/absent7")), "ENOENT");
}

TEST_F(VfsCacheTest, CleanUnheldLowerNodesAreDroppedAndComeBackTheSame) {
  NodeRef hello = Get("/lower/dir/inner.txt");
  ino_t ino = hello->attr().ino;
  hello.reset();
  ASSERT_EQ(Get("/lower")->children.count("dir"), 1u);
  v().ShrinkCache();
  // dir held only inner.txt: both went.
  EXPECT_EQ(Get("/lower")->children.count("dir"), 0u);
  NodeRef again = Get("/lower/dir/inner.txt");
  EXPECT_EQ(again->attr().ino, ino);
  EXPECT_EQ(Read(*again), "inner\n");
}

TEST_F(VfsCacheTest, HeldChangedAndGuestMadeNodesStay) {
  NodeRef held = Get("/lower/hello.txt");  // an fd or a cwd holds it
  ResolveOpts nofollow;
  nofollow.follow_final = false;
  ASSERT_TRUE(v().Chown(*Must(Lookup("/lower/link", kRoot, nofollow)), 5, 5, kRoot).ok());
  NodeRef dir = Get("/lower/dir");
  ASSERT_TRUE(v().Chmod(*dir, 0700, kRoot).ok());  // changed: stays
  dir.reset();
  ASSERT_TRUE(MakeFile("/lower/empty/new", "x").ok());  // made in a cached dir
  v().ShrinkCache();
  NodeRef lower = Get("/lower");
  EXPECT_EQ(lower->children.at("hello.txt"), held);
  EXPECT_EQ(lower->children.at("link")->attr().uid, 5u);
  EXPECT_EQ(lower->children.at("dir")->attr().mode & 07777, 0700u);
  EXPECT_EQ(Read(*Get("/lower/empty/new")), "x");
}

TEST_F(VfsCacheTest, ListingsSurviveAShrinkWithTheSameEntries) {
  NodeRef lower = Get("/lower");
  std::vector<std::string> before;
  for (const auto& e : v().Listing(lower)) before.emplace_back(e.name);
  Get("/lower/hello.txt");
  Get("/lower/dir/inner.txt");
  v().ShrinkCache();
  std::vector<std::string> after;
  for (const auto& e : v().Listing(lower)) after.emplace_back(e.name);
  EXPECT_EQ(before, after);
  NodeRef dir = Get("/lower/dir");
  std::vector<std::string> inner;
  for (const auto& e : v().Listing(dir)) inner.emplace_back(e.name);
  v().ShrinkCache();  // dir is held here: its listing may go, its node not
  std::vector<std::string> inner_after;
  for (const auto& e : v().Listing(dir)) inner_after.emplace_back(e.name);
  EXPECT_EQ(inner, inner_after);
  EXPECT_EQ(v().Stat(*dir).st_nlink, 2u);
}

TEST_F(VfsCacheTest, GuestMadeNodesAreChargedAndRefundedExactly) {
  uint64_t start = v().metadata_bytes();
  ASSERT_TRUE(MakeFile("/tmp/f").ok());
  ASSERT_TRUE(Mkdir("/tmp/d").ok());
  ASSERT_TRUE(MakeSymlink("/tmp/s", std::string(1000, 'x')).ok());
  ASSERT_TRUE(Link("/tmp/f", "/tmp/g").ok());
  ASSERT_TRUE(Rename("/tmp/g", "/tmp/h").ok());
  ASSERT_TRUE(v().SetXattr(*Get("/tmp/f"), "user.a", std::string(100, 'v'), 0, kRoot).ok());
  EXPECT_GT(v().metadata_bytes(), start + 3 * kNodeCost + 1000);
  ASSERT_TRUE(Unlink("/tmp/f").ok());
  ASSERT_TRUE(Unlink("/tmp/h").ok());
  ASSERT_TRUE(Unlink("/tmp/s").ok());
  ASSERT_TRUE(Rmdir("/tmp/d").ok());
  EXPECT_EQ(v().metadata_bytes(), start);
}

TEST_F(VfsCacheTest, RemovingHostNamesChargesTheirWhiteouts) {
  // Host names were never charged: removing them refunds nothing, and the
  // whiteouts they leave are charged as names.
  ASSERT_TRUE(MakeFile("/tmp/f").ok());
  uint64_t with_one = v().metadata_bytes();
  ASSERT_TRUE(Unlink("/lower/hello.txt").ok());
  ASSERT_TRUE(Unlink("/lower/dir/inner.txt").ok());
  ASSERT_TRUE(Rmdir("/lower/empty").ok());
  ASSERT_TRUE(Rename("/lower/link", "/tmp/link").ok());
  EXPECT_EQ(v().metadata_bytes(),
            with_one + 5 * kNameCost + std::string("hello.txtinner.txtemptylinklink").size());
  // Past the budget, removing a host name fails as overlayfs does.
  v().set_metadata_limit(v().metadata_bytes());
  EXPECT_EQ(ErrnoOf(Unlink("/lower/dir2")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/dir")), "ENOSPC");
  EXPECT_TRUE(Lookup("/lower/dir").ok());
}

TEST_F(VfsCacheTest, NamesRemovedFromAHostDirectoryStayCharged) {
  uint64_t start = v().metadata_bytes();
  for (int i = 0; i < 100; ++i) {
    std::string path = "/lower/n" + std::to_string(i);
    ASSERT_TRUE(MakeFile(path).ok());
    ASSERT_TRUE(Unlink(path).ok());
  }
  // Each left a whiteout, which the sentry holds.
  EXPECT_GE(v().metadata_bytes(), start + 100 * kNameCost);
  // The same name again leaves no new whiteout and costs nothing more.
  uint64_t now = v().metadata_bytes();
  ASSERT_TRUE(MakeFile("/lower/n1").ok());
  ASSERT_TRUE(Unlink("/lower/n1").ok());
  EXPECT_EQ(v().metadata_bytes(), now);
}

TEST_F(VfsCacheTest, PastTheMetadataBudgetCreationFailsWithEnospc) {
  v().set_metadata_limit(1 << 20);
  int made = 0;
  SysResult<NodeRef> r = Errno{EINVAL};  // replaced by the first Mkdir
  while ((r = Mkdir("/tmp/d" + std::to_string(made))).ok()) ++made;
  EXPECT_EQ(ErrnoOf(r), "ENOSPC");
  EXPECT_GT(made, 500);
  EXPECT_LT(made, 2000);
  EXPECT_LE(v().metadata_bytes(), 1u << 20);
  // Removing one makes room for one.
  ASSERT_TRUE(Rmdir("/tmp/d0").ok());
  EXPECT_TRUE(Mkdir("/tmp/again").ok());
}

TEST_F(VfsCacheTest, TheBudgetHasAFixedCeiling) {
  v().set_metadata_limit(64ull << 30);  // --disk 512g
  int made = 0;
  while (Mkdir("/tmp/d" + std::to_string(made)).ok()) ++made;
  EXPECT_LE(v().metadata_bytes(), kMaxMetadataBytes);
  EXPECT_LT(made, static_cast<int>(kMaxMetadataBytes / kNodeCost));
}

TEST_F(VfsCacheTest, ShrinkWalksADeepTreeWithoutRecursion) {
  v().set_metadata_limit(0);  // the ceiling
  NodeRef dir = Get("/tmp");
  for (int i = 0; i < 20000; ++i) {
    Resolved at{dir, "d", nullptr};
    dir = Must(v().Create(at, NodeKind::kDir, 0755, kRoot));
  }
  NodeRef deep = dir;
  dir.reset();
  v().ShrinkCache();
  EXPECT_TRUE(v().PathOf(deep).ok());
}

}  // namespace
}  // namespace sentry::vfs
