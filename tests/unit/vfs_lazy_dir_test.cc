// Lower directory nodes whose host fd is opened at first use
// (vfs/host_dir_fd.h): a lookup that does not walk through makes none, a
// walk through or a listing opens one (the listing's own open kept), and a
// directory replaced on the host after its lookup is never opened: it reads
// as empty, whatever now stands at its name.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

// A directory node made by a lookup that does not walk through it (what a
// listing's fill makes: VfsTest::Looked).
class VfsLazyDirTest : public VfsTest {};

TEST_F(VfsLazyDirTest, LookupOpensNothingUntilAWalkGoesThrough) {
  NodeRef dir = Looked("dir");
  ASSERT_TRUE(dir);
  EXPECT_FALSE(dir->host_dir->fd.opened());
  NodeRef inner = Get("/lower/dir/inner.txt");
  EXPECT_TRUE(dir->host_dir->fd.opened());
  EXPECT_EQ(Read(*inner), "inner\n");
}

TEST_F(VfsLazyDirTest, AWalkThroughANewNameOpensItAtOnce) {
  NodeRef inner = Get("/lower/dir/inner.txt");
  EXPECT_TRUE(Get("/lower/dir")->host_dir->fd.opened());
  EXPECT_EQ(Read(*inner), "inner\n");
}

TEST_F(VfsLazyDirTest, AListingsOpenBecomesTheDirectorysFd) {
  NodeRef dir = Looked("dir");
  ASSERT_TRUE(dir);
  EXPECT_EQ(Listed(dir), std::vector<std::string>{"inner.txt"});
  EXPECT_TRUE(dir->host_dir->fd.opened());
  EXPECT_EQ(Read(*Get("/lower/dir/inner.txt")), "inner\n");
  // Listed again (a write-through relist opens "." anew): the same names.
  EXPECT_EQ(Listed(dir), std::vector<std::string>{"inner.txt"});
}

TEST_F(VfsLazyDirTest, ReplacedByAnotherDirectoryReadsEmpty) {
  NodeRef dir = Looked("dir");
  NodeRef empty = Looked("empty");
  ASSERT_TRUE(dir && empty);
  ASSERT_EQ(rename((lower_dir_ + "/dir").c_str(), (lower_dir_ + "/dir.old").c_str()), 0);
  ASSERT_EQ(mkdir((lower_dir_ + "/dir").c_str(), 0755), 0);
  int fd = open((lower_dir_ + "/dir/planted.txt").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(ErrnoOf(Lookup("/lower/dir/planted.txt")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/dir/inner.txt")), "ENOENT");
  EXPECT_FALSE(dir->host_dir->fd.opened());
  EXPECT_TRUE(Listed(dir).empty());
  // By a listing first (its "." proves the inode, or an fstat refutes it).
  ASSERT_EQ(rename((lower_dir_ + "/empty").c_str(), (lower_dir_ + "/empty.old").c_str()), 0);
  ASSERT_EQ(rename((lower_dir_ + "/dir").c_str(), (lower_dir_ + "/empty").c_str()), 0);
  EXPECT_TRUE(Listed(empty).empty());
  EXPECT_FALSE(empty->host_dir->fd.opened());
  EXPECT_EQ(ErrnoOf(Lookup("/lower/empty/planted.txt")), "ENOENT");
}

TEST_F(VfsLazyDirTest, ReplacedByASymlinkNeverLeadsOut) {
  NodeRef dir = Looked("dir");
  NodeRef empty = Looked("empty");
  ASSERT_TRUE(dir && empty);
  // host_dir_ holds lower/ itself: through the link, lower/hello.txt would
  // be dir/lower/hello.txt.
  for (const char* name : {"dir", "empty"}) {
    std::string at = lower_dir_ + "/" + name;
    ASSERT_EQ(rename(at.c_str(), (at + ".old").c_str()), 0);
    ASSERT_EQ(symlink(host_dir_.c_str(), at.c_str()), 0);
  }
  EXPECT_EQ(ErrnoOf(Lookup("/lower/dir/lower/hello.txt")), "ENOENT");
  EXPECT_TRUE(Listed(dir).empty());
  EXPECT_TRUE(Listed(empty).empty());
  EXPECT_EQ(ErrnoOf(Lookup("/lower/empty/lower")), "ENOENT");
  EXPECT_FALSE(dir->host_dir->fd.opened());
  EXPECT_FALSE(empty->host_dir->fd.opened());
}

// A listing read in many batches (ListHost reads 32 KiB at a time) has every
// name once, whether its end is told by ext4's EOF cookie in the last batch
// (node.h HostDir::list_end) or by a getdents64 that returns 0; a
// subdirectory on the same device inherits how its listings end.
TEST_F(VfsLazyDirTest, AListingOfManyBatchesHasEveryNameOnce) {
  std::string big = lower_dir_ + "/big";
  ASSERT_EQ(mkdir(big.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((big + "/sub").c_str(), 0755), 0);
  constexpr int kFiles = 3000;  // 64-byte records: about six batches
  std::string pad(40, 'x');
  for (int i = 0; i < kFiles; ++i) {
    std::string name = big + "/" + pad + std::to_string(i);
    int fd = open(name.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  NodeRef dir = Looked("big");
  ASSERT_TRUE(dir);
  std::vector<std::string> names = Listed(dir);
  ASSERT_EQ(names.size(), static_cast<size_t>(kFiles) + 1);
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
  EXPECT_TRUE(unique.count("sub"));
  EXPECT_TRUE(unique.count(pad + "0") && unique.count(pad + std::to_string(kFiles - 1)));
  struct statfs sf;
  ASSERT_EQ(statfs(big.c_str(), &sf), 0);
  HostDir::ListEnd want =
      sf.f_type == EXT4_SUPER_MAGIC ? HostDir::ListEnd::kExt4Cookie : HostDir::ListEnd::kReadToZero;
  EXPECT_EQ(dir->host_dir->list_end, want);
  NodeRef sub = v().Child(dir, "sub");
  ASSERT_TRUE(sub && sub->host_dir);
  EXPECT_EQ(sub->host_dir->list_end, want);  // made after its parent's listing
  EXPECT_TRUE(Listed(sub).empty());
}

}  // namespace
}  // namespace sentry::vfs
