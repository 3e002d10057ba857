// Path resolution: ".", "..", trailing slashes, symlinks, ELOOP, ENAMETOOLONG,
// ENOTDIR and openat2's RESOLVE_BENEATH / RESOLVE_IN_ROOT, as fs/namei.c does.
#include <string>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

class ResolveTest : public VfsTest {
 protected:
  void SetUp() override {
    VfsTest::SetUp();
    a_ = Must(Mkdir("/a"));
    b_ = Must(Mkdir("/a/b"));
    f_ = Must(MakeFile("/a/f", "data"));
    ASSERT_TRUE(MakeSymlink("/a/rel", "b").ok());
    ASSERT_TRUE(MakeSymlink("/a/abs", "/a/b").ok());
    ASSERT_TRUE(MakeSymlink("/a/up", "../a/b").ok());
    ASSERT_TRUE(MakeSymlink("/a/chain", "rel").ok());
    ASSERT_TRUE(MakeSymlink("/a/tofile", "f").ok());
    ASSERT_TRUE(MakeSymlink("/a/toroot", "/").ok());
    ASSERT_TRUE(MakeSymlink("/a/dangling", "nowhere").ok());
  }
  NodeRef a_, b_, f_;
};

TEST_F(ResolveTest, DotAndDotDot) {
  EXPECT_EQ(Get("/a/./b/../b/."), b_);
  EXPECT_EQ(Get("/a/b/.."), a_);
  EXPECT_EQ(Get("/.."), v().root());
  EXPECT_EQ(Get("/../../a"), a_);
  EXPECT_EQ(Get("/."), v().root());
  EXPECT_EQ(Must(LookupAt(a_, "b/..", {})), a_);
  EXPECT_EQ(Must(LookupAt(b_, "../../a/b", {})), b_);
  EXPECT_EQ(Must(LookupAt(a_, ".", {})), a_);
}

TEST_F(ResolveTest, DotAndDotDotAreNotCreatable) {
  auto dot = Walk("/a/.");
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot->node, a_);
  EXPECT_FALSE(dot->Creatable());
  EXPECT_EQ(ErrnoOf(v().Create(*dot, NodeKind::kDir, 0755, kRoot)), "EEXIST");
  auto root = Walk("/");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->node, v().root());
  EXPECT_FALSE(root->Creatable());
  EXPECT_EQ(ErrnoOf(Walk("")), "ENOENT");
}

TEST_F(ResolveTest, RelativeToStart) {
  EXPECT_EQ(Must(LookupAt(a_, "b", {})), b_);
  EXPECT_EQ(Must(LookupAt(a_, "/a", {})), a_);
}

TEST_F(ResolveTest, TrailingSlashes) {
  EXPECT_EQ(Get("/a/"), a_);
  EXPECT_EQ(Get("//a//b//"), b_);
  EXPECT_EQ(ErrnoOf(Lookup("/a/f/")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Lookup("/a/tofile/")), "ENOTDIR");
  EXPECT_EQ(Get("/a/f"), f_);

  auto missing = Walk("/a/new/");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->parent, a_);
  EXPECT_EQ(missing->name, "new");
  EXPECT_EQ(missing->node, nullptr);
  EXPECT_TRUE(missing->trailing_slash);
  // creat("new/") fails; mkdir("new/") works.
  EXPECT_EQ(ErrnoOf(v().Create(*missing, NodeKind::kFile, 0644, kRoot)), "ENOENT");
  EXPECT_EQ(ErrnoOf(Mkdir("/a/new/")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/a/missing/")), "ENOENT");
}

TEST_F(ResolveTest, TrailingSlashFollowsFinalSymlink) {
  EXPECT_EQ(Must(Lookup("/a/rel/", kRoot, {.follow_final = false})), b_);
  NodeRef link = Must(Lookup("/a/rel", kRoot, {.follow_final = false}));
  EXPECT_EQ(link->kind(), NodeKind::kSymlink);
}

TEST_F(ResolveTest, Symlinks) {
  EXPECT_EQ(Get("/a/rel"), b_);
  EXPECT_EQ(Get("/a/abs"), b_);
  EXPECT_EQ(Get("/a/up"), b_);
  EXPECT_EQ(Get("/a/chain"), b_);
  EXPECT_EQ(Get("/a/tofile"), f_);
  EXPECT_EQ(Get("/a/toroot"), v().root());
  EXPECT_EQ(Get("/a/toroot/a/rel/.."), a_);
  EXPECT_EQ(Get("/a/rel/../f"), f_);  // ".." after a link leaves the link's target
  EXPECT_EQ(ErrnoOf(Lookup("/a/dangling")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Lookup("/a/rel", kRoot, {.no_symlinks = true})), "ELOOP");
}

TEST_F(ResolveTest, LowerSymlinkFollowsToLowerFile) {
  NodeRef via_link = Get("/lower/link");
  ASSERT_NE(via_link, nullptr);
  EXPECT_EQ(via_link, Get("/lower/hello.txt"));
  EXPECT_EQ(Read(*via_link), "host data\n");
}

TEST_F(ResolveTest, FortySymlinksResolveTheFortyFirstIsEloop) {
  ASSERT_TRUE(Mkdir("/l").ok());
  NodeRef target = Must(MakeFile("/l/s0"));
  for (int i = 1; i <= 41; ++i) {
    ASSERT_TRUE(MakeSymlink("/l/s" + std::to_string(i), "s" + std::to_string(i - 1)).ok());
  }
  EXPECT_EQ(Get("/l/s40"), target);
  EXPECT_EQ(ErrnoOf(Lookup("/l/s41")), "ELOOP");
  // The count is per resolution, across components.
  ASSERT_TRUE(MakeSymlink("/l/d", ".").ok());
  EXPECT_EQ(ErrnoOf(Lookup("/l/d/s40")), "ELOOP");
  EXPECT_EQ(Get("/l/d/s39"), target);
}

TEST_F(ResolveTest, SymlinkLoopIsEloop) {
  ASSERT_TRUE(MakeSymlink("/a/self", "self").ok());
  ASSERT_TRUE(MakeSymlink("/a/ping", "pong").ok());
  ASSERT_TRUE(MakeSymlink("/a/pong", "ping").ok());
  EXPECT_EQ(ErrnoOf(Lookup("/a/self")), "ELOOP");
  EXPECT_EQ(ErrnoOf(Lookup("/a/ping/x")), "ELOOP");
  // Not followed: the link itself is found.
  EXPECT_EQ(ErrnoOf(Lookup("/a/self", kRoot, {.follow_final = false})), "OK");
}

TEST_F(ResolveTest, NameTooLong) {
  std::string name255(255, 'n');
  std::string name256(256, 'n');
  EXPECT_EQ(ErrnoOf(Lookup("/a/" + name256)), "ENAMETOOLONG");
  EXPECT_EQ(ErrnoOf(Walk("/a/" + name256)), "ENAMETOOLONG");
  EXPECT_EQ(ErrnoOf(Walk("/a/" + name256 + "/x")), "ENAMETOOLONG");
  EXPECT_EQ(ErrnoOf(Lookup("/a/" + name255)), "ENOENT");
  EXPECT_EQ(ErrnoOf(MakeFile("/a/" + name255)), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/a/" + name255)), "OK");
}

TEST_F(ResolveTest, PathTooLong) {
  // PATH_MAX counts the NUL: 4095 bytes resolve, 4096 do not.
  std::string path = "/a";
  while (path.size() < 4092) path += "/.";
  path += "//b";
  ASSERT_EQ(path.size(), 4095u);
  EXPECT_EQ(Get(path), b_);
  path += "/";
  ASSERT_EQ(path.size(), 4096u);
  EXPECT_EQ(ErrnoOf(Lookup(path)), "ENAMETOOLONG");
  EXPECT_EQ(ErrnoOf(Walk(std::string(5000, '/'))), "ENAMETOOLONG");
}

TEST_F(ResolveTest, NotADirectoryThroughAFile) {
  EXPECT_EQ(ErrnoOf(Lookup("/a/f/x")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Walk("/a/f/x")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Lookup("/a/f/.")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Lookup("/a/f/..")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Lookup("/a/tofile/x")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/hello.txt/x")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Lookup("/a/missing/x")), "ENOENT");
}

TEST_F(ResolveTest, ResolveBeneath) {
  ResolveOpts beneath{.beneath = true};
  EXPECT_EQ(Must(LookupAt(a_, "b", beneath)), b_);
  EXPECT_EQ(Must(LookupAt(a_, "b/..", beneath)), a_);
  EXPECT_EQ(Must(LookupAt(a_, "rel", beneath)), b_);
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "..", beneath)), "EXDEV");
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "b/../..", beneath)), "EXDEV");
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "/a/b", beneath)), "EXDEV");
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "abs", beneath)), "EXDEV");
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "up", beneath)), "EXDEV");
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "toroot", beneath)), "EXDEV");
}

TEST_F(ResolveTest, ResolveInRootClampsDotDot) {
  ResolveOpts in_root{.in_root = true};
  EXPECT_EQ(Must(LookupAt(a_, "..", in_root)), a_);
  EXPECT_EQ(Must(LookupAt(a_, "../../b", in_root)), b_);
  EXPECT_EQ(Must(LookupAt(a_, "/b", in_root)), b_);
  EXPECT_EQ(Must(LookupAt(a_, "b/../../../f", in_root)), f_);
  // An absolute symlink is resolved from the start directory too.
  ASSERT_TRUE(MakeSymlink("/a/rootlink", "/b").ok());
  EXPECT_EQ(Must(LookupAt(a_, "rootlink", in_root)), b_);
  EXPECT_EQ(Must(LookupAt(a_, "toroot", in_root)), a_);
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "abs", in_root)), "ENOENT");  // "/a/b" is a/a/b here
  // Without the flag the same link leaves a.
  EXPECT_EQ(ErrnoOf(LookupAt(a_, "rootlink", {})), "ENOENT");
}

TEST_F(ResolveTest, SearchPermissionOnEveryDirectory) {
  ASSERT_TRUE(Mkdir("/p", 0755).ok());
  ASSERT_TRUE(Mkdir("/p/q", 0754).ok());  // others may list it but not search it
  ASSERT_TRUE(Mkdir("/p/q/r", 0777).ok());
  ASSERT_TRUE(MakeFile("/p/q/r/f", "x", 0666).ok());
  EXPECT_EQ(ErrnoOf(Lookup("/p/q", kUser)), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/p/q/r", kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Lookup("/p/q/r/f", kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Lookup("/p/q/..", kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Lookup("/p/q/r/f", kRoot)), "OK");
  // Relative to a start inside: only the directories walked through count.
  NodeRef r = Get("/p/q/r");
  EXPECT_EQ(ErrnoOf(LookupAt(r, "f", {}, kUser)), "OK");
}

}  // namespace
}  // namespace sentry::vfs
