#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

using Names = std::vector<std::string>;

Names Sorted(Names names) {
  std::sort(names.begin(), names.end());
  return names;
}

// name -> d_type for every entry of `path`.
std::map<std::string, unsigned char> DirTypes(const std::string& path) {
  std::map<std::string, unsigned char> types;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return types;
  alignas(8) char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
      types[entry->d_name] = entry->d_type;
      off += entry->d_reclen;
    }
  }
  return types;
}

TEST(GetdentsTest, EmptyDirectoryHasDotAndDotDot) {
  ScratchDir dir;
  EXPECT_EQ(Sorted(ListDir(dir.path())), (Names{".", ".."}));
}

TEST(GetdentsTest, ListsCreatedEntries) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("file"), ""));
  ASSERT_TRUE(MakeDir(dir.Path("sub")));
  ASSERT_TRUE(MakeSymlink("file", dir.Path("link")));
  EXPECT_EQ(Sorted(ListDir(dir.path())), (Names{".", "..", "file", "link", "sub"}));
}

TEST(GetdentsTest, UnlinkedEntryDisappears) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("a"), ""));
  ASSERT_TRUE(WriteFile(dir.Path("b"), ""));
  ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path("a").c_str()));
  EXPECT_EQ(Sorted(ListDir(dir.path())), (Names{".", "..", "b"}));
}

TEST(GetdentsTest, ManyEntriesAcrossSeveralCalls) {
  ScratchDir dir;
  Names expected = {".", ".."};
  for (int i = 0; i < 300; ++i) {
    const std::string name = "entry-with-a-longish-name-" + std::to_string(i);
    ASSERT_TRUE(WriteFile(dir.Path(name), ""));
    expected.push_back(name);
  }
  EXPECT_EQ(Sorted(ListDir(dir.path())), Sorted(expected));
}

// Reads one small batch at a time and removes what it read before the next
// call (what `find -delete` and C rm -r loops do): nothing may be skipped.
Names ListRemovingAsWeGo(const std::string& path) {
  Names seen;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return seen;
  alignas(8) char buf[512];
  long n;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
      const std::string name = entry->d_name;
      if (name != "." && name != "..") {
        seen.push_back(name);
        unlink((path + "/" + name).c_str());
      }
      off += entry->d_reclen;
    }
  }
  return seen;
}

TEST(GetdentsTest, RemovingReadEntriesSkipsNone) {
  ScratchDir dir;
  Names expected;
  for (int i = 0; i < 100; ++i) {
    const std::string name = "entry-with-a-longish-name-" + std::to_string(i);
    ASSERT_TRUE(WriteFile(dir.Path(name), ""));
    expected.push_back(name);
  }
  EXPECT_EQ(Sorted(ListRemovingAsWeGo(dir.path())), Sorted(expected));
  EXPECT_EQ(Sorted(ListDir(dir.path())), (Names{".", ".."}));
}

// d_type may be DT_UNKNOWN on filesystems that do not store it; when it is
// given, it must be right.
TEST(GetdentsTest, EntryTypesAreRight) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("file"), ""));
  ASSERT_TRUE(MakeDir(dir.Path("sub")));
  ASSERT_TRUE(MakeSymlink("file", dir.Path("link")));
  const auto types = DirTypes(dir.path());
  ASSERT_EQ(types.size(), 5u);
  const std::map<std::string, unsigned char> expected = {
      {".", DT_DIR}, {"..", DT_DIR}, {"file", DT_REG}, {"link", DT_LNK}, {"sub", DT_DIR}};
  for (const auto& [name, type] : expected) {
    SCOPED_TRACE(name);
    ASSERT_EQ(types.count(name), 1u);
    if (types.at(name) != DT_UNKNOWN) {
      EXPECT_EQ(types.at(name), type);
    }
  }
}

TEST(GetdentsTest, InodeNumbersMatchStat) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("file"), ""));
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  alignas(8) char buf[4096];
  const long n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf));
  ASSERT_GT(n, 0);
  bool found = false;
  for (long off = 0; off < n;) {
    const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
    if (std::string(entry->d_name) == "file") {
      found = true;
      EXPECT_EQ(entry->d_ino, StatOrFail(dir.Path("file")).st_ino);
    }
    off += entry->d_reclen;
  }
  EXPECT_TRUE(found);
}

// A large directory of the host (under sentry: the read-only lower layer,
// listed without a lookup per entry), read a few entries at a time: every
// name once, each with the type and inode number that lstat then gives, and
// every name found again by lstat.
TEST(GetdentsTest, HostDirectoryInSmallChunksMatchesLstat) {
  const std::string path = "/usr/lib/python3.11";
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  std::map<std::string, std::pair<unsigned char, uint64_t>> seen;
  alignas(8) char buf[512];
  long n;
  int calls = 0;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf))) > 0) {
    ++calls;
    for (long off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
      EXPECT_TRUE(seen.emplace(entry->d_name, std::make_pair(entry->d_type, entry->d_ino)).second)
          << entry->d_name << " listed twice";
      off += entry->d_reclen;
    }
  }
  ASSERT_EQ(n, 0);
  EXPECT_GT(calls, 10);
  EXPECT_GT(seen.size(), 100u);
  for (const auto& [name, type_ino] : seen) {
    if (name == "." || name == "..") continue;
    SCOPED_TRACE(name);
    struct stat st;
    ASSERT_SYSCALL_SUCCEEDS(lstat((path + "/" + name).c_str(), &st));
    EXPECT_EQ(type_ino.first, IFTODT(st.st_mode));
    EXPECT_EQ(type_ino.second, st.st_ino);
  }
}

TEST(GetdentsTest, ReturnsZeroAtEndAndRewindsWithLseek) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(ListDirFd(fd.get()).size(), 3u);
  alignas(8) char buf[4096];
  EXPECT_EQ(syscall(SYS_getdents64, fd.get(), buf, sizeof(buf)), 0);
  ASSERT_SYSCALL_SUCCEEDS(lseek(fd.get(), 0, SEEK_SET));
  EXPECT_EQ(ListDirFd(fd.get()).size(), 3u);
}

TEST(GetdentsTest, BufferTooSmallFails) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  alignas(8) char buf[8];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getdents64, fd.get(), buf, sizeof(buf)), EINVAL);
}

TEST(GetdentsTest, BadBufferFails) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getdents64, fd.get(), UnmappedAddress(), 4096), EFAULT);
}

TEST(GetdentsTest, BadFdFails) {
  alignas(8) char buf[4096];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getdents64, 100000, buf, sizeof(buf)), EBADF);
}

TEST(MkdirTest, ModeIsReducedByUmask) {
  ScratchDir dir;
  UmaskGuard mask(027);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_mkdir, dir.Path("d").c_str(), 0777));
  const struct stat st = StatOrFail(dir.Path("d"));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(st.st_uid, geteuid());
}

TEST(MkdirTest, ExistingNameFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("dangling")));
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path("d").c_str(), 0755), EEXIST);
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path("f").c_str(), 0755), EEXIST);
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path("dangling").c_str(), 0755), EEXIST);
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.path().c_str(), 0755), EEXIST);
}

TEST(MkdirTest, MissingParentFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path("a/b").c_str(), 0755), ENOENT);
}

TEST(MkdirTest, FileAsParentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path("f/d").c_str(), 0755), ENOTDIR);
}

TEST(MkdirTest, TrailingSlashIsAllowed) {
  ScratchDir dir;
  EXPECT_SYSCALL_SUCCEEDS(mkdir((dir.Path("d") + "/").c_str(), 0755));
  EXPECT_TRUE(S_ISDIR(StatOrFail(dir.Path("d")).st_mode));
}

TEST(MkdirTest, NameTooLongFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path(LongName()).c_str(), 0755), ENAMETOOLONG);
}

TEST(MkdirTest, ParentWithoutWritePermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("ro"), 0555));
  EXPECT_SYSCALL_FAILS_WITH(mkdir(dir.Path("ro/d").c_str(), 0755), EACCES);
}

TEST(MkdirTest, MkdiratRelativeToDirfd) {
  ScratchDir dir;
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_mkdirat, dfd.get(), "d", 0700));
  EXPECT_TRUE(S_ISDIR(StatOrFail(dir.Path("d")).st_mode));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_mkdirat, dfd.get(), "d", 0700), EEXIST);
}

TEST(RmdirTest, RemovesEmptyDirectory) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_rmdir, dir.Path("d").c_str()));
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("d").c_str(), F_OK), ENOENT);
}

TEST(RmdirTest, NonEmptyDirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("d").c_str()), ENOTEMPTY);
}

TEST(RmdirTest, DotFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("d/.").c_str()), EINVAL);
}

TEST(RmdirTest, DotDotFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("d/..").c_str()), ENOTEMPTY);
}

TEST(RmdirTest, FileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("f").c_str()), ENOTDIR);
}

TEST(RmdirTest, SymlinkToDirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeSymlink("d", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("link").c_str()), ENOTDIR);
}

TEST(RmdirTest, MissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("missing").c_str()), ENOENT);
}

TEST(RmdirTest, ParentWithoutWritePermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("p")));
  ASSERT_TRUE(MakeDir(dir.Path("p/d")));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("p").c_str(), 0555));
  EXPECT_SYSCALL_FAILS_WITH(rmdir(dir.Path("p/d").c_str()), EACCES);
}

TEST(UnlinkTest, RemovesFile) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_unlink, dir.Path("f").c_str()));
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("f").c_str(), F_OK), ENOENT);
}

TEST(UnlinkTest, OpenFileStaysReadable) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "still here"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path("f").c_str()));
  char buf[16] = {};
  EXPECT_EQ(read(fd.get(), buf, sizeof(buf) - 1), 10);
  EXPECT_STREQ(buf, "still here");
}

TEST(UnlinkTest, SymlinkRemovesOnlyTheLink) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path("link").c_str()));
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("f").c_str(), F_OK));
}

TEST(UnlinkTest, DirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_unlink, dir.Path("d").c_str()), EISDIR);
}

TEST(UnlinkTest, MissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(unlink(dir.Path("missing").c_str()), ENOENT);
}

TEST(UnlinkTest, TrailingSlashOnFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(unlink((dir.Path("f") + "/").c_str()), ENOTDIR);
}

TEST(UnlinkTest, ParentWithoutWritePermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("p")));
  ASSERT_TRUE(WriteFile(dir.Path("p/f"), ""));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("p").c_str(), 0555));
  EXPECT_SYSCALL_FAILS_WITH(unlink(dir.Path("p/f").c_str()), EACCES);
}

TEST(UnlinkatTest, RemovedirRemovesDirectory) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_unlinkat, dfd.get(), "d", AT_REMOVEDIR));
  EXPECT_SYSCALL_FAILS_WITH(access(dir.Path("d").c_str(), F_OK), ENOENT);
}

TEST(UnlinkatTest, RemovedirOnFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_unlinkat, AT_FDCWD, dir.Path("f").c_str(), AT_REMOVEDIR),
                            ENOTDIR);
}

TEST(UnlinkatTest, WithoutRemovedirOnDirectoryFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_unlinkat, AT_FDCWD, dir.Path("d").c_str(), 0), EISDIR);
}

TEST(UnlinkatTest, InvalidFlagsFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_unlinkat, AT_FDCWD, dir.Path("f").c_str(), AT_SYMLINK_NOFOLLOW), EINVAL);
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("f").c_str(), F_OK));
}

}  // namespace
}  // namespace sentry::conformance
