#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

long Renameat2(const std::string& from, const std::string& to, unsigned flags) {
  return syscall(SYS_renameat2, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), flags);
}

long Rename(const std::string& from, const std::string& to) {
  return syscall(SYS_rename, from.c_str(), to.c_str());
}

TEST(RenameTest, MovesFile) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "contents"));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("a"), dir.Path("b")));
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("a").c_str(), F_OK), ENOENT);
  EXPECT_EQ(ReadFile(dir.Path("b")).value_or(""), "contents");
}

TEST(RenameTest, KeepsInodeNumber) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("sub")));
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  const ino_t before = StatOrFail(dir.Path("a")).st_ino;
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("a"), dir.Path("sub/b")));
  EXPECT_EQ(StatOrFail(dir.Path("sub/b")).st_ino, before);
}

TEST(RenameTest, ReplacesExistingFile) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "new"));
  ASSERT_TRUE(WriteFile(dir.Path("b"), "old"));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("a"), dir.Path("b")));
  EXPECT_EQ(ReadFile(dir.Path("b")).value_or(""), "new");
  EXPECT_EQ(ListDir(dir.path()).size(), 3u);
}

TEST(RenameTest, MovesDirectoryWithContents) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), "x"));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("d"), dir.Path("e")));
  EXPECT_EQ(ReadFile(dir.Path("e/f")).value_or(""), "x");
  EXPECT_EQ(StatOrFail(dir.Path("e/..")).st_ino, StatOrFail(dir.path()).st_ino);
}

TEST(RenameTest, DirectoryReplacesEmptyDirectory) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("a")));
  ASSERT_TRUE(WriteFile(dir.Path("a/f"), ""));
  ASSERT_TRUE(MakeDir(dir.Path("b")));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("a"), dir.Path("b")));
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("b/f").c_str(), F_OK));
}

TEST(RenameTest, FileOverDirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("f"), dir.Path("d")), EISDIR);
}

TEST(RenameTest, DirectoryOverNonEmptyDirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("a")));
  ASSERT_TRUE(MakeDir(dir.Path("b")));
  ASSERT_TRUE(WriteFile(dir.Path("b/f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("a"), dir.Path("b")), ENOTEMPTY);
}

TEST(RenameTest, DirectoryOverFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("d"), dir.Path("f")), ENOTDIR);
}

TEST(RenameTest, DirectoryIntoItsOwnSubdirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeDir(dir.Path("d/sub")));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("d"), dir.Path("d/sub/d")), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("d"), dir.Path("d/x")), EINVAL);
}

TEST(RenameTest, ParentOverItsDescendantFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeDir(dir.Path("d/sub")));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("d/sub"), dir.path()), ENOTEMPTY);
}

TEST(RenameTest, SameNameIsANoOp) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "x"));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("f"), dir.Path("f")));
  EXPECT_EQ(ReadFile(dir.Path("f")).value_or(""), "x");
}

// POSIX: if both names are links to the same file, rename does nothing.
TEST(RenameTest, HardLinksOfSameFileAreLeftAlone) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "x"));
  ASSERT_SYSCALL_SUCCEEDS(link(dir.Path("a").c_str(), dir.Path("b").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("a"), dir.Path("b")));
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("a").c_str(), F_OK));
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("b").c_str(), F_OK));
  EXPECT_EQ(StatOrFail(dir.Path("a")).st_nlink, 2u);
}

TEST(RenameTest, SymlinkIsRenamedNotItsTarget) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(Rename(dir.Path("link"), dir.Path("link2")));
  EXPECT_TRUE(S_ISLNK(LstatOrFail(dir.Path("link2")).st_mode));
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("f").c_str(), F_OK));
}

TEST(RenameTest, MissingSourceFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("missing"), dir.Path("b")), ENOENT);
}

TEST(RenameTest, MissingDestinationParentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("a"), dir.Path("missing/b")), ENOENT);
}

TEST(RenameTest, TrailingSlashOnFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("a") + "/", dir.Path("b")), ENOTDIR);
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("a"), dir.Path("b") + "/"), ENOTDIR);
}

TEST(RenameTest, TrailingSlashOnDirectoryIsAllowed) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("a")));
  EXPECT_SYSCALL_SUCCEEDS(Rename(dir.Path("a") + "/", dir.Path("b") + "/"));
  EXPECT_TRUE(S_ISDIR(StatOrFail(dir.Path("b")).st_mode));
}

TEST(RenameTest, DotAndDotDotAreBusy) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("d/."), dir.Path("e")), EBUSY);
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("d/.."), dir.Path("e")), EBUSY);
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("e"), dir.Path("d/.")), EBUSY);
}

TEST(RenameTest, BadPointerFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rename, reinterpret_cast<char*>(1), dir.Path("b").c_str()),
                            EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rename, dir.Path("a").c_str(), reinterpret_cast<char*>(1)),
                            EFAULT);
}

TEST(RenameTest, ParentWithoutWritePermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("ro")));
  ASSERT_TRUE(WriteFile(dir.Path("ro/f"), ""));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("ro").c_str(), 0555));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("ro/f"), dir.Path("f")), EACCES);
  ASSERT_TRUE(WriteFile(dir.Path("g"), ""));
  EXPECT_SYSCALL_FAILS_WITH(Rename(dir.Path("g"), dir.Path("ro/g")), EACCES);
}

TEST(RenameatTest, RelativeToDirfds) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("from")));
  ASSERT_TRUE(MakeDir(dir.Path("to")));
  ASSERT_TRUE(WriteFile(dir.Path("from/f"), "x"));
  UniqueFd from(open(dir.Path("from").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd to(open(dir.Path("to").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(from.get());
  ASSERT_SYSCALL_SUCCEEDS(to.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_renameat, from.get(), "f", to.get(), "g"));
  EXPECT_EQ(ReadFile(dir.Path("to/g")).value_or(""), "x");
}

TEST(RenameatTest, BadDirfdFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_renameat, AT_FDCWD, dir.Path("a").c_str(), 100000, "b"),
                            EBADF);
}

TEST(Renameat2Test, NoReplaceOnExistingFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "a"));
  ASSERT_TRUE(WriteFile(dir.Path("b"), "b"));
  EXPECT_SYSCALL_FAILS_WITH(Renameat2(dir.Path("a"), dir.Path("b"), RENAME_NOREPLACE), EEXIST);
  EXPECT_EQ(ReadFile(dir.Path("b")).value_or(""), "b");
}

TEST(Renameat2Test, NoReplaceOnNewNameSucceeds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "a"));
  EXPECT_SYSCALL_SUCCEEDS(Renameat2(dir.Path("a"), dir.Path("b"), RENAME_NOREPLACE));
  EXPECT_EQ(ReadFile(dir.Path("b")).value_or(""), "a");
}

TEST(Renameat2Test, ExchangeSwapsNames) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "a"));
  ASSERT_TRUE(MakeDir(dir.Path("b")));
  ASSERT_SYSCALL_SUCCEEDS(Renameat2(dir.Path("a"), dir.Path("b"), RENAME_EXCHANGE));
  EXPECT_TRUE(S_ISDIR(StatOrFail(dir.Path("a")).st_mode));
  EXPECT_EQ(ReadFile(dir.Path("b")).value_or(""), "a");
}

TEST(Renameat2Test, ExchangeWithMissingNameFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), "a"));
  EXPECT_SYSCALL_FAILS_WITH(Renameat2(dir.Path("a"), dir.Path("b"), RENAME_EXCHANGE), ENOENT);
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("a").c_str(), F_OK));
}

TEST(Renameat2Test, ConflictingFlagsFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  ASSERT_TRUE(WriteFile(dir.Path("b"), ""));
  EXPECT_SYSCALL_FAILS_WITH(
      Renameat2(dir.Path("a"), dir.Path("b"), RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(Renameat2(dir.Path("a"), dir.Path("b"), 1u << 10), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance
