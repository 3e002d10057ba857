// rename(2) and renameat2(2) rules, as fs/namei.c's do_renameat2 and vfs_rename
// apply them, and the paths of directories that moved or were removed.
#include <linux/fs.h>

#include <string>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

class RenameTest : public VfsTest {
 protected:
  void SetUp() override {
    VfsTest::SetUp();
    ASSERT_TRUE(Mkdir("/r").ok());
    file_a_ = Must(MakeFile("/r/a", "A"));
    file_b_ = Must(MakeFile("/r/b", "B"));
    dir_d_ = Must(Mkdir("/r/d"));
    ASSERT_TRUE(Mkdir("/r/d/sub").ok());
    ASSERT_TRUE(Mkdir("/r/e").ok());  // empty
    ASSERT_TRUE(Mkdir("/r/full").ok());
    ASSERT_TRUE(MakeFile("/r/full/x").ok());
  }
  NodeRef file_a_, file_b_, dir_d_;
};

TEST_F(RenameTest, MovesAFile) {
  ASSERT_EQ(ErrnoOf(Rename("/r/a", "/r/d/a2")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/r/a")), "ENOENT");
  EXPECT_EQ(Get("/r/d/a2"), file_a_);
  EXPECT_EQ(Read(*file_a_), "A");
}

TEST_F(RenameTest, ReplacesAFile) {
  ASSERT_EQ(ErrnoOf(Rename("/r/a", "/r/b")), "OK");
  EXPECT_EQ(Get("/r/b"), file_a_);
  EXPECT_EQ(ErrnoOf(Lookup("/r/a")), "ENOENT");
  EXPECT_EQ(file_b_->nlink, 0u);
}

TEST_F(RenameTest, NoReplaceIsEexist) {
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/r/b", RENAME_NOREPLACE)), "EEXIST");
  EXPECT_EQ(Get("/r/a"), file_a_);
  EXPECT_EQ(Get("/r/b"), file_b_);
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/r/c", RENAME_NOREPLACE)), "OK");
  EXPECT_EQ(ErrnoOf(Rename("/r/b", "/r/c", RENAME_NOREPLACE | RENAME_EXCHANGE)), "EINVAL");
}

TEST_F(RenameTest, ExchangeSwaps) {
  ASSERT_EQ(ErrnoOf(Rename("/r/a", "/r/b", RENAME_EXCHANGE)), "OK");
  EXPECT_EQ(Get("/r/a"), file_b_);
  EXPECT_EQ(Get("/r/b"), file_a_);
  // A file and a directory may be exchanged.
  ASSERT_EQ(ErrnoOf(Rename("/r/a", "/r/d", RENAME_EXCHANGE)), "OK");
  EXPECT_EQ(Get("/r/a"), dir_d_);
  EXPECT_EQ(Get("/r/d"), file_b_);
  EXPECT_EQ(Get("/r/a/sub")->IsDir(), true);
  EXPECT_EQ(Must(v().PathOf(dir_d_)), "/r/a");
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/r/missing", RENAME_EXCHANGE)), "ENOENT");
}

TEST_F(RenameTest, ExchangeWithAnAncestorIsEinval) {
  // Linux: "source should not be ancestor of target" and, for an exchange,
  // the target being the source's ancestor is EINVAL too (not ENOTEMPTY).
  EXPECT_EQ(ErrnoOf(Rename("/r/d", "/r/d/sub", RENAME_EXCHANGE)), "EINVAL");
  EXPECT_EQ(ErrnoOf(Rename("/r/d/sub", "/r/d", RENAME_EXCHANGE)), "EINVAL");
}

TEST_F(RenameTest, FileOverDirIsEisdir) {
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/r/e")), "EISDIR");
  EXPECT_EQ(Get("/r/a"), file_a_);
}

TEST_F(RenameTest, DirOverFileIsEnotdir) {
  EXPECT_EQ(ErrnoOf(Rename("/r/e", "/r/a")), "ENOTDIR");
  EXPECT_EQ(Get("/r/a"), file_a_);
}

TEST_F(RenameTest, TrailingSlashOnAFileIsEnotdir) {
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/r/new/")), "ENOTDIR");
  EXPECT_EQ(ErrnoOf(Rename("/r/e", "/r/e2/")), "OK");
}

TEST_F(RenameTest, DirIntoItsOwnSubdirIsEinval) {
  EXPECT_EQ(ErrnoOf(Rename("/r/d", "/r/d/sub/x")), "EINVAL");
  EXPECT_EQ(ErrnoOf(Rename("/r/d", "/r/d/x")), "EINVAL");
  EXPECT_EQ(Get("/r/d"), dir_d_);
}

TEST_F(RenameTest, OverAnAncestorIsEnotempty) {
  EXPECT_EQ(ErrnoOf(Rename("/r/d/sub", "/r/d")), "ENOTEMPTY");
}

TEST_F(RenameTest, OverANonEmptyDirIsEnotempty) {
  EXPECT_EQ(ErrnoOf(Rename("/r/d", "/r/full")), "ENOTEMPTY");
  EXPECT_EQ(ErrnoOf(Rename("/r/e", "/r/full")), "ENOTEMPTY");
  EXPECT_EQ(ErrnoOf(Rename("/r/e", "/lower/dir")), "ENOTEMPTY");  // full on the host
}

TEST_F(RenameTest, OverAnEmptyDirReplacesIt) {
  NodeRef empty = Get("/r/e");
  ASSERT_EQ(ErrnoOf(Rename("/r/d", "/r/e")), "OK");
  EXPECT_EQ(Get("/r/e"), dir_d_);
  EXPECT_EQ(ErrnoOf(Lookup("/r/d")), "ENOENT");
  EXPECT_EQ(ErrnoOf(v().PathOf(empty)), "ENOENT");
  EXPECT_EQ(Must(v().PathOf(dir_d_)), "/r/e");
}

TEST_F(RenameTest, SameInodeIsANoOp) {
  ASSERT_EQ(ErrnoOf(Link("/r/a", "/r/a2")), "OK");
  ASSERT_EQ(ErrnoOf(Rename("/r/a", "/r/a2")), "OK");
  // Both names stay, as vfs_rename does nothing when source and target are one.
  EXPECT_EQ(Get("/r/a"), file_a_);
  EXPECT_EQ(Get("/r/a2"), file_a_);
  EXPECT_EQ(file_a_->nlink, 2u);
  ASSERT_EQ(ErrnoOf(Rename("/r/a", "/r/a")), "OK");
  EXPECT_EQ(Get("/r/a"), file_a_);
}

TEST_F(RenameTest, MissingSourceIsEnoent) {
  EXPECT_EQ(ErrnoOf(Rename("/r/nope", "/r/x")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/r/nodir/x")), "ENOENT");
}

TEST_F(RenameTest, StickyDirectoryProtectsOtherUsersEntries) {
  ASSERT_EQ(ErrnoOf(MakeFile("/tmp/mine", "m", 0666, kUser)), "OK");
  ASSERT_EQ(ErrnoOf(MakeFile("/tmp/theirs", "t", 0666, kOther)), "OK");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/mine", "/tmp/stolen", 0, kOther)), "EPERM");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/theirs", "/tmp/mine", 0, kOther)), "EPERM");  // replaces mine
  EXPECT_EQ(ErrnoOf(Unlink("/tmp/mine", kOther)), "EPERM");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/mine", "/tmp/mine2", 0, kUser)), "OK");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/theirs", "/tmp/x", 0, kRoot)), "OK");  // root may
  EXPECT_EQ(ErrnoOf(Unlink("/tmp/mine2", kUser)), "OK");
}

TEST_F(RenameTest, NeedsWriteOnBothDirectories) {
  ASSERT_EQ(ErrnoOf(Mkdir("/tmp/u", 0755, kUser)), "OK");
  ASSERT_EQ(ErrnoOf(MakeFile("/tmp/u/f", "", 0644, kUser)), "OK");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/u/f", "/r/f", 0, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Rename("/r/a", "/tmp/u/a", 0, kUser)), "EACCES");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/u/f", "/tmp/u/g", 0, kUser)), "OK");
}

TEST_F(RenameTest, RootAndDotsCannotBeRenamed) {
  // fs/namei.c: a last component that is not a plain name ("/", ".", "..") on
  // either side is EBUSY.
  EXPECT_EQ(ErrnoOf(Rename("/", "/r/x")), "EBUSY");
  EXPECT_EQ(ErrnoOf(Rename("/r/d/.", "/r/x")), "EBUSY");
  EXPECT_EQ(ErrnoOf(Rename("/r/d", "/r/d/sub/..")), "EBUSY");
  EXPECT_EQ(ErrnoOf(Rename("/r/d/sub", "/r/d/sub/.")), "EBUSY");
}

TEST_F(RenameTest, PathOfFollowsRenames) {
  NodeRef z = Must(Mkdir("/r/d/sub/z"));
  EXPECT_EQ(Must(v().PathOf(z)), "/r/d/sub/z");
  ASSERT_EQ(ErrnoOf(Rename("/r/d/sub", "/q")), "OK");
  EXPECT_EQ(Must(v().PathOf(z)), "/q/z");
  ASSERT_EQ(ErrnoOf(Rename("/q", "/r/e/q2")), "OK");
  EXPECT_EQ(Must(v().PathOf(z)), "/r/e/q2/z");
  EXPECT_EQ(Must(v().PathOf(v().root())), "/");
  EXPECT_EQ(Must(v().PathOf(Get("/lower/dir"))), "/lower/dir");
}

TEST_F(RenameTest, PathOfARemovedDirIsEnoent) {
  NodeRef sub = Get("/r/d/sub");
  ASSERT_EQ(ErrnoOf(Rmdir("/r/d/sub")), "OK");
  EXPECT_EQ(ErrnoOf(v().PathOf(sub)), "ENOENT");
  ASSERT_EQ(ErrnoOf(Rmdir("/r/d")), "OK");
  EXPECT_EQ(ErrnoOf(v().PathOf(dir_d_)), "ENOENT");
  // Nothing can be created in a removed directory.
  EXPECT_EQ(ErrnoOf(v().Walk(sub, "new", {}, kRoot)), "ENOENT");
}

}  // namespace
}  // namespace sentry::vfs
