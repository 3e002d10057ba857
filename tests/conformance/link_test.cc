#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

long Link(const std::string& from, const std::string& to) {
  return syscall(SYS_link, from.c_str(), to.c_str());
}

long Symlink(const std::string& target, const std::string& path) {
  return syscall(SYS_symlink, target.c_str(), path.c_str());
}

TEST(LinkTest, SharesInodeAndCountsLinks) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "data"));
  ASSERT_SYSCALL_SUCCEEDS(Link(dir.Path("a"), dir.Path("b")));
  const struct stat a = StatOrFail(dir.Path("a"));
  const struct stat b = StatOrFail(dir.Path("b"));
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_nlink, 2u);
  EXPECT_EQ(ReadFile(dir.Path("b")).value_or(""), "data");
}

TEST(LinkTest, UnlinkDecrementsCountAndKeepsData) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "data"));
  ASSERT_SYSCALL_SUCCEEDS(Link(dir.Path("a"), dir.Path("b")));
  ASSERT_SYSCALL_SUCCEEDS(Link(dir.Path("a"), dir.Path("c")));
  EXPECT_EQ(StatOrFail(dir.Path("a")).st_nlink, 3u);
  ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path("a").c_str()));
  EXPECT_EQ(StatOrFail(dir.Path("b")).st_nlink, 2u);
  EXPECT_EQ(ReadFile(dir.Path("c")).value_or(""), "data");
}

TEST(LinkTest, WritesAreSeenThroughEveryName) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "old"));
  ASSERT_SYSCALL_SUCCEEDS(Link(dir.Path("a"), dir.Path("b")));
  ASSERT_TRUE(WriteFile(dir.Path("b"), "new!"));
  EXPECT_EQ(ReadFile(dir.Path("a")).value_or(""), "new!");
}

TEST(LinkTest, DirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(Link(dir.Path("d"), dir.Path("e")), EPERM);
}

TEST(LinkTest, ExistingNameFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  ASSERT_TRUE(WriteFile(dir.Path("b"), ""));
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("dangling")));
  EXPECT_SYSCALL_FAILS_WITH(Link(dir.Path("a"), dir.Path("b")), EEXIST);
  EXPECT_SYSCALL_FAILS_WITH(Link(dir.Path("a"), dir.Path("dangling")), EEXIST);
}

TEST(LinkTest, MissingSourceFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(Link(dir.Path("missing"), dir.Path("b")), ENOENT);
}

TEST(LinkTest, MissingDestinationParentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Link(dir.Path("a"), dir.Path("missing/b")), ENOENT);
}

// link(2) does not follow a symlink given as the source: the new name is a
// second link to the symlink itself.
TEST(LinkTest, DoesNotFollowSourceSymlink) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(Link(dir.Path("link"), dir.Path("hard")));
  EXPECT_TRUE(S_ISLNK(LstatOrFail(dir.Path("hard")).st_mode));
  EXPECT_EQ(LstatOrFail(dir.Path("hard")).st_ino, LstatOrFail(dir.Path("link")).st_ino);
}

TEST(LinkTest, BadPointerFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_link, reinterpret_cast<char*>(1), dir.Path("b").c_str()),
                            EFAULT);
}

TEST(LinkatTest, SymlinkFollowLinksTheTarget) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_linkat, AT_FDCWD, dir.Path("link").c_str(), AT_FDCWD,
                                  dir.Path("hard").c_str(), AT_SYMLINK_FOLLOW));
  EXPECT_TRUE(S_ISREG(LstatOrFail(dir.Path("hard")).st_mode));
  EXPECT_EQ(StatOrFail(dir.Path("hard")).st_ino, StatOrFail(dir.Path("f")).st_ino);
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_nlink, 2u);
}

TEST(LinkatTest, RelativeToDirfds) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd root(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd sub(open(dir.Path("d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(root.get());
  ASSERT_SYSCALL_SUCCEEDS(sub.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_linkat, root.get(), "f", sub.get(), "g", 0));
  EXPECT_EQ(StatOrFail(dir.Path("d/g")).st_ino, StatOrFail(dir.Path("f")).st_ino);
}

TEST(LinkatTest, InvalidFlagsFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_linkat, AT_FDCWD, dir.Path("f").c_str(), AT_FDCWD,
                                    dir.Path("g").c_str(), AT_REMOVEDIR),
                            EINVAL);
}

TEST(SymlinkTest, CreatesLinkWithTarget) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(Symlink("any/target", dir.Path("link")));
  const struct stat st = LstatOrFail(dir.Path("link"));
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_size, 10);
  EXPECT_EQ(st.st_uid, geteuid());
}

TEST(SymlinkTest, RelativeTargetResolvesFromLinkDirectory) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeDir(dir.Path("other")));
  ASSERT_TRUE(WriteFile(dir.Path("other/f"), "relative"));
  ASSERT_SYSCALL_SUCCEEDS(Symlink("../other/f", dir.Path("d/link")));
  EXPECT_EQ(ReadFile(dir.Path("d/link")).value_or(""), "relative");
}

TEST(SymlinkTest, AbsoluteTargetIsFollowed) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "absolute"));
  ASSERT_SYSCALL_SUCCEEDS(Symlink(dir.Path("f"), dir.Path("link")));
  EXPECT_EQ(ReadFile(dir.Path("link")).value_or(""), "absolute");
}

TEST(SymlinkTest, DirectoryLinkInMiddleOfPath) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(Symlink("/usr", dir.Path("usr")));
  EXPECT_EQ(StatOrFail(dir.Path("usr/bin/true")).st_ino, StatOrFail("/usr/bin/true").st_ino);
  EXPECT_EQ(StatOrFail(dir.Path("usr/..")).st_ino, StatOrFail("/").st_ino);
}

TEST(SymlinkTest, DanglingLinkFailsToOpenButLstatWorks) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(Symlink("missing", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("link").c_str(), O_RDONLY), ENOENT);
  EXPECT_TRUE(S_ISLNK(LstatOrFail(dir.Path("link")).st_mode));
}

TEST(SymlinkTest, ExistingNameFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Symlink("x", dir.Path("f")), EEXIST);
  EXPECT_SYSCALL_FAILS_WITH(Symlink("x", dir.path()), EEXIST);
}

TEST(SymlinkTest, EmptyTargetFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(Symlink("", dir.Path("link")), ENOENT);
}

TEST(SymlinkTest, MissingParentFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(Symlink("x", dir.Path("missing/link")), ENOENT);
}

TEST(SymlinkTest, TargetLongerThanPathMaxFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(Symlink(LongPath(), dir.Path("link")), ENAMETOOLONG);
}

TEST(SymlinkTest, FortySymlinksAreFollowedButNotFortyOne) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "end"));
  // l0 -> f, l1 -> l0, ...: opening l<k> follows k+1 symlinks.
  ASSERT_TRUE(MakeSymlink("f", dir.Path("l0")));
  for (int i = 1; i <= 40; ++i) {
    ASSERT_TRUE(MakeSymlink("l" + std::to_string(i - 1), dir.Path("l" + std::to_string(i))));
  }
  EXPECT_EQ(ReadFile(dir.Path("l39")).value_or(""), "end");
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("l40").c_str(), O_RDONLY), ELOOP);
}

TEST(SymlinkTest, BadPointerFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_symlink, reinterpret_cast<char*>(1), dir.Path("link").c_str()), EFAULT);
}

TEST(SymlinkatTest, RelativeToDirfd) {
  ScratchDir dir;
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_symlinkat, "target", dfd.get(), "link"));
  EXPECT_TRUE(S_ISLNK(LstatOrFail(dir.Path("link")).st_mode));
}

TEST(SymlinkatTest, BadDirfdFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_symlinkat, "target", 100000, "link"), EBADF);
}

}  // namespace
}  // namespace sentry::conformance
