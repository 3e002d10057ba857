// The overlay: host entries shown read-only, copy-up on write, whiteouts on
// removal, merged listings. The host directory must never change.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

using Strings = std::vector<std::string>;

class OverlayTest : public VfsTest {
 protected:
  const Strings kHostEntries = {"dir", "empty", "hello.txt", "link"};
};

TEST_F(OverlayTest, LowerEntriesAreListed) {
  EXPECT_EQ(Names(Get("/lower")), kHostEntries);
  EXPECT_EQ(Names(Get("/lower/dir")), Strings{"inner.txt"});
  EXPECT_EQ(Names(Get("/lower/empty")), Strings{});
}

TEST_F(OverlayTest, LowerNodesReflectTheHost) {
  NodeRef hello = Get("/lower/hello.txt");
  ASSERT_NE(hello, nullptr);
  EXPECT_TRUE(hello->IsLowerFile());
  struct stat host;
  ASSERT_EQ(stat((lower_dir_ + "/hello.txt").c_str(), &host), 0);
  struct stat st = v().Stat(*hello);
  EXPECT_EQ(st.st_size, host.st_size);
  EXPECT_EQ(st.st_mode, host.st_mode);
  EXPECT_EQ(st.st_uid, host.st_uid);
  EXPECT_EQ(st.st_dev, kVfsDev);
  EXPECT_EQ(Read(*hello), "host data\n");
  EXPECT_TRUE(Get("/lower/dir")->IsDir());
  EXPECT_EQ(Get("/lower/link"), hello);
}

TEST_F(OverlayTest, CreatedFileShadowsNothing) {
  ASSERT_EQ(ErrnoOf(MakeFile("/lower/new.txt", "guest data")), "OK");
  ASSERT_EQ(ErrnoOf(Mkdir("/lower/dir/newdir")), "OK");
  Strings expected = {"dir", "empty", "hello.txt", "link", "new.txt"};
  EXPECT_EQ(Names(Get("/lower")), expected);
  EXPECT_EQ(Names(Get("/lower/dir")), (Strings{"inner.txt", "newdir"}));
  EXPECT_EQ(Read(*Get("/lower/hello.txt")), "host data\n");
  EXPECT_EQ(Read(*Get("/lower/new.txt")), "guest data");
  EXPECT_TRUE(Get("/lower/new.txt")->IsUpperFile());
  // Nothing reached the host.
  EXPECT_EQ(HostNames(""), kHostEntries);
  EXPECT_EQ(HostNames("dir"), Strings{"inner.txt"});
  // A host name is taken.
  EXPECT_EQ(ErrnoOf(MakeFile("/lower/hello.txt")), "EEXIST");
  EXPECT_EQ(ErrnoOf(Mkdir("/lower/dir")), "EEXIST");
}

TEST_F(OverlayTest, OpenForWriteCopiesUp) {
  struct stat before;
  ASSERT_EQ(stat((lower_dir_ + "/hello.txt").c_str(), &before), 0);
  NodeRef hello = Get("/lower/hello.txt");
  Write(*hello, "GUEST");
  EXPECT_TRUE(hello->IsUpperFile());
  EXPECT_EQ(Read(*hello), "GUESTdata\n");
  EXPECT_EQ(Read(*Get("/lower/hello.txt")), "GUESTdata\n");
  EXPECT_EQ(Read(*Get("/lower/link")), "GUESTdata\n");
  EXPECT_EQ(v().Stat(*hello).st_size, 10);
  // The host file is untouched: same data, same inode, same mtime.
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
  struct stat after;
  ASSERT_EQ(stat((lower_dir_ + "/hello.txt").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

TEST_F(OverlayTest, ReadOnlyOpenDoesNotCopyUp) {
  NodeRef hello = Get("/lower/hello.txt");
  auto fd = v().OpenData(*hello, O_RDONLY);
  ASSERT_TRUE(fd.ok());
  EXPECT_TRUE(hello->IsLowerFile());
  EXPECT_EQ(StoreFileCount(), 0u);
  // The donated fd cannot write the host file.
  EXPECT_EQ(write(fd->get(), "x", 1), -1);
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
}

TEST_F(OverlayTest, TruncateCopiesUp) {
  NodeRef hello = Get("/lower/hello.txt");
  ASSERT_EQ(ErrnoOf(v().Truncate(*hello, 4, kRoot)), "OK");
  EXPECT_EQ(Read(*hello), "host");
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
}

TEST_F(OverlayTest, UnlinkLeavesAWhiteout) {
  EXPECT_EQ(Names(Get("/lower")), kHostEntries);  // listed before, then removed
  ASSERT_EQ(ErrnoOf(Unlink("/lower/hello.txt")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/hello.txt")), "ENOENT");
  EXPECT_EQ(v().Child(Get("/lower"), "hello.txt"), nullptr);
  EXPECT_EQ(Names(Get("/lower")), (Strings{"dir", "empty", "link"}));
  EXPECT_EQ(ErrnoOf(Lookup("/lower/link")), "ENOENT");  // now dangling
  EXPECT_TRUE(HostExists("hello.txt"));
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
}

TEST_F(OverlayTest, UnlinkBeforeAnyListingLeavesAWhiteout) {
  ASSERT_EQ(ErrnoOf(Unlink("/lower/dir/inner.txt")), "OK");
  EXPECT_EQ(Names(Get("/lower/dir")), Strings{});
  EXPECT_EQ(ErrnoOf(Lookup("/lower/dir/inner.txt")), "ENOENT");
  EXPECT_TRUE(HostExists("dir/inner.txt"));
}

TEST_F(OverlayTest, RecreatingAWhitedOutNameGivesANewFile) {
  ASSERT_EQ(ErrnoOf(Unlink("/lower/hello.txt")), "OK");
  auto again = MakeFile("/lower/hello.txt", "second");
  ASSERT_EQ(ErrnoOf(again), "OK");
  EXPECT_EQ(Read(*Get("/lower/hello.txt")), "second");
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
  ASSERT_EQ(ErrnoOf(Unlink("/lower/hello.txt")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/hello.txt")), "ENOENT");
}

TEST_F(OverlayTest, UnlinkOfASymlinkIsNotAFile) {
  ASSERT_EQ(ErrnoOf(Unlink("/lower/link")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/link", kRoot, {.follow_final = false})), "ENOENT");
  EXPECT_EQ(Read(*Get("/lower/hello.txt")), "host data\n");
  EXPECT_TRUE(HostExists("link"));
}

TEST_F(OverlayTest, RmdirOfANonEmptyLowerDirIsEnotempty) {
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/dir")), "ENOTEMPTY");
  EXPECT_EQ(ErrnoOf(Unlink("/lower/dir")), "EISDIR");
  ASSERT_EQ(ErrnoOf(Unlink("/lower/dir/inner.txt")), "OK");
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/dir")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/dir")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/empty")), "OK");
  EXPECT_EQ(Names(Get("/lower")), (Strings{"hello.txt", "link"}));
  EXPECT_TRUE(HostExists("dir/inner.txt"));
  EXPECT_TRUE(HostExists("empty"));
}

TEST_F(OverlayTest, RmdirOfADirHoldingOnlyAnUpperFileIsEnotempty) {
  ASSERT_EQ(ErrnoOf(MakeFile("/lower/empty/x")), "OK");
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/empty")), "ENOTEMPTY");
}

TEST_F(OverlayTest, ListMergesLowerAndUpperWithoutDuplicates) {
  Write(*Get("/lower/hello.txt"), "copied");  // now upper, same name
  ASSERT_EQ(ErrnoOf(MakeFile("/lower/zz.txt")), "OK");
  ASSERT_EQ(ErrnoOf(MakeFile("/lower/aa.txt")), "OK");
  ASSERT_EQ(ErrnoOf(Mkdir("/lower/mm")), "OK");
  ASSERT_EQ(ErrnoOf(Unlink("/lower/link")), "OK");
  Strings expected = {"aa.txt", "dir", "empty", "hello.txt", "mm", "zz.txt"};
  EXPECT_EQ(Names(Get("/lower")), expected);
  EXPECT_EQ(Names(Get("/lower")), expected);  // and again, from the cache
  std::set<uint64_t> inos;
  for (const auto& [name, node] : v().List(Get("/lower"))) inos.insert(node->attr().ino);
  EXPECT_EQ(inos.size(), expected.size());
}

// getdents of a host directory must not cost a host lookup per entry: the
// listing shows readdir's names, inode numbers and types, and a name becomes
// a node only when something looks it up.
TEST_F(OverlayTest, ListingShowsHostEntriesWithoutLookingThemUp) {
  NodeRef lower = Get("/lower");
  std::vector<Vfs::DirEntry> entries = v().Listing(lower);
  Strings names;
  for (const Vfs::DirEntry& e : entries) names.emplace_back(e.name);
  EXPECT_EQ(names, kHostEntries);
  EXPECT_TRUE(lower->children.empty());
  EXPECT_EQ(lower->host_unlooked.size(), kHostEntries.size());
  for (const Vfs::DirEntry& e : entries) {
    struct stat host;
    ASSERT_EQ(lstat((lower_dir_ + "/" + std::string(e.name)).c_str(), &host), 0);
    EXPECT_EQ(e.ino, host.st_ino) << e.name;
    EXPECT_EQ(e.type, IFTODT(host.st_mode)) << e.name;
  }
  // A lookup makes the node, which then lists as itself.
  NodeRef hello = Get("/lower/hello.txt");
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(lower->children.size(), 1u);
  EXPECT_EQ(lower->host_unlooked.count("hello.txt"), 0u);
  EXPECT_EQ(Names(lower), kHostEntries);
  // A name the listing did not show is not looked up on the host at all.
  EXPECT_EQ(ErrnoOf(Lookup("/lower/absent")), "ENOENT");
}

// getdents resumes a listing after the last name it returned: the visit
// starts at the next name of either map (host entries not looked up, and
// nodes), and stops when asked, so a call costs the entries it returns.
TEST_F(OverlayTest, VisitListingResumesAfterANameAcrossBothMaps) {
  NodeRef lower = Get("/lower");
  ASSERT_EQ(ErrnoOf(MakeFile("/lower/f-made", "x")), "OK");  // a node
  ASSERT_NE(Get("/lower/hello.txt"), nullptr);               // looked up: a node
  auto from = [&](std::string_view after, size_t max) {
    Strings names;
    v().VisitListing(lower, after, /*relist=*/false, [&](const Vfs::DirEntry& e) {
      names.emplace_back(e.name);
      return names.size() < max;
    });
    return names;
  };
  EXPECT_EQ(from("", 100), (Strings{"dir", "empty", "f-made", "hello.txt", "link"}));
  EXPECT_EQ(from("dir", 2), (Strings{"empty", "f-made"}));
  EXPECT_EQ(from("f-made", 100), (Strings{"hello.txt", "link"}));
  // A name that is gone (or never was) still places the cursor.
  EXPECT_EQ(from("ea", 1), (Strings{"empty"}));
  EXPECT_EQ(from("link", 100), Strings{});
}

TEST_F(OverlayTest, HostFifosAreNeitherListedNorFound) {
  ASSERT_EQ(mkfifo((lower_dir_ + "/empty/fifo").c_str(), 0644), 0);
  EXPECT_TRUE(v().Listing(Get("/lower/empty")).empty());
  EXPECT_EQ(ErrnoOf(Lookup("/lower/empty/fifo")), "ENOENT");
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/empty")), "OK");
}

TEST_F(OverlayTest, ListedDirectoryCountsUnlookedSubdirsInNlink) {
  NodeRef lower = Get("/lower");
  struct stat before = v().Stat(*lower);
  v().Listing(lower);
  struct stat after = v().Stat(*lower);
  EXPECT_EQ(after.st_nlink, before.st_nlink);  // 2 + "dir" + "empty"
  EXPECT_EQ(after.st_nlink, 4u);
}

TEST_F(OverlayTest, ListedButUnlookedEntriesKeepADirectoryNonEmpty) {
  ASSERT_EQ(ErrnoOf(Mkdir("/tmp/d")), "OK");
  v().Listing(Get("/lower/dir"));
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/dir")), "ENOTEMPTY");
  EXPECT_EQ(ErrnoOf(Rename("/tmp/d", "/lower/dir")), "ENOTEMPTY");
  ASSERT_EQ(ErrnoOf(Unlink("/lower/dir/inner.txt")), "OK");
  EXPECT_EQ(ErrnoOf(Rmdir("/lower/dir")), "OK");
  EXPECT_TRUE(HostExists("dir/inner.txt"));
}

TEST_F(OverlayTest, RenameOfALowerFileLeavesTheHostAlone) {
  ASSERT_EQ(ErrnoOf(Rename("/lower/hello.txt", "/tmp/moved")), "OK");
  EXPECT_EQ(ErrnoOf(Lookup("/lower/hello.txt")), "ENOENT");
  EXPECT_EQ(Read(*Get("/tmp/moved")), "host data\n");
  EXPECT_EQ(Names(Get("/lower")), (Strings{"dir", "empty", "link"}));
  EXPECT_EQ(HostNames(""), kHostEntries);
  Write(*Get("/tmp/moved"), "HOST");
  EXPECT_EQ(Read(*Get("/tmp/moved")), "HOST data\n");
  EXPECT_EQ(HostRead("hello.txt"), "host data\n");
}

TEST_F(OverlayTest, DotDotFromALowerDirectory) {
  EXPECT_EQ(Get("/lower/dir/.."), Get("/lower"));
  EXPECT_EQ(Get("/lower/dir/../empty/../.."), v().root());
  EXPECT_EQ(Must(v().PathOf(Get("/lower/dir"))), "/lower/dir");
}

TEST_F(OverlayTest, DirectoryLinkCountCountsSubdirectories) {
  // A directory's st_nlink is 2 plus its subdirectories, whichever layer they
  // are in (the host's count for an untouched lower dir follows the same rule).
  ASSERT_TRUE(Mkdir("/m").ok());
  ASSERT_TRUE(Mkdir("/m/a").ok());
  ASSERT_TRUE(MakeFile("/m/f").ok());
  EXPECT_EQ(v().Stat(*Get("/m")).st_nlink, 3u);
  EXPECT_EQ(v().Stat(*Get("/lower")).st_nlink, 4u);  // ., .., dir, empty
  ASSERT_EQ(ErrnoOf(Mkdir("/lower/empty/sub")), "OK");
  ASSERT_EQ(ErrnoOf(Mkdir("/lower/new")), "OK");
  EXPECT_EQ(v().Stat(*Get("/lower/empty")).st_nlink, 3u);
  EXPECT_EQ(v().Stat(*Get("/lower")).st_nlink, 5u);
  ASSERT_EQ(ErrnoOf(Unlink("/lower/dir/inner.txt")), "OK");
  ASSERT_EQ(ErrnoOf(Rmdir("/lower/dir")), "OK");
  EXPECT_EQ(v().Stat(*Get("/lower")).st_nlink, 4u);
}

TEST_F(OverlayTest, ChmodOfALowerNodeStaysInMemory) {
  NodeRef hello = Get("/lower/hello.txt");
  ASSERT_EQ(ErrnoOf(v().Chmod(*hello, 0600, kRoot)), "OK");
  EXPECT_EQ(v().Stat(*hello).st_mode & 07777, 0600u);
  struct stat host;
  ASSERT_EQ(stat((lower_dir_ + "/hello.txt").c_str(), &host), 0);
  EXPECT_EQ(host.st_mode & 07777, 0644u);
}

}  // namespace
}  // namespace sentry::vfs
