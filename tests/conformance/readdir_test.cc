// libc's directory streams over system directories (/usr, the read-only
// lower layer): what readdir, readdir_r, telldir, seekdir, rewinddir, dirfd
// and fdopendir give must be what getdents64 gives, record for record. Under
// sentry with --fast-metadata these streams are read from a listing the
// sentry published (fastmeta/dir.c), without getdents64: these cases hold
// both paths (and the kernel's) to the same answers.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

// Large enough to need more than one of glibc's 32 KiB reads, and small.
const char* const kDirs[] = {"/usr/include", "/usr/lib/python3.11/json", "/usr/bin"};

struct Entry {
  std::string name;
  uint64_t ino;
  int64_t off;
  unsigned char type;
  bool operator==(const Entry&) const = default;
};

void PrintTo(const Entry& e, std::ostream* os) {
  *os << e.name << " ino " << e.ino << " off " << e.off << " type " << int{e.type};
}

// What getdents64 returns from a fresh fd of path, in order.
std::vector<Entry> Getdents(const std::string& path) {
  std::vector<Entry> out;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << path << ": " << ErrnoString();
  alignas(8) static char buf[1 << 16];
  long n;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n;) {
      const auto* e = reinterpret_cast<const struct dirent64*>(buf + off);
      out.push_back({e->d_name, e->d_ino, e->d_off, e->d_type});
      off += e->d_reclen;
    }
  }
  EXPECT_EQ(n, 0) << ErrnoString();
  return out;
}

Entry Of(const struct dirent* e) { return {e->d_name, e->d_ino, e->d_off, e->d_type}; }

std::vector<Entry> ReadAll(DIR* d) {
  std::vector<Entry> out;
  errno = 0;
  while (struct dirent* e = readdir(d)) out.push_back(Of(e));
  EXPECT_EQ(errno, 0) << ErrnoString();
  return out;
}

TEST(ReaddirTest, OpendirGivesGetdentsRecords) {
  for (const char* path : kDirs) {
    SCOPED_TRACE(path);
    std::vector<Entry> want = Getdents(path);
    ASSERT_GT(want.size(), 2u);
    DIR* d = opendir(path);
    ASSERT_NE(d, nullptr) << ErrnoString();
    EXPECT_EQ(ReadAll(d), want);
    // At the end it stays at the end.
    EXPECT_EQ(readdir(d), nullptr);
    ASSERT_SYSCALL_SUCCEEDS(closedir(d));
  }
}

TEST(ReaddirTest, ReaddirRGivesTheSameRecords) {
  std::vector<Entry> want = Getdents("/usr/include");
  DIR* d = opendir("/usr/include");
  ASSERT_NE(d, nullptr) << ErrnoString();
  std::vector<Entry> got;
  struct dirent entry;
  struct dirent* result;
  int r;
  // Deprecated, yet old programs call it; it must stay the same records.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  while ((r = readdir_r(d, &entry, &result)) == 0 && result != nullptr) {
#pragma GCC diagnostic pop
    EXPECT_EQ(result, &entry);
    got.push_back(Of(result));
  }
  EXPECT_EQ(r, 0);
  EXPECT_EQ(got, want);
  closedir(d);
}

// telldir is the d_off of the last record returned; seekdir to it resumes
// with the record after it, forward and back, and to 0 from the start.
TEST(ReaddirTest, TelldirSeekdirOnASystemDirectory) {
  std::vector<Entry> want = Getdents("/usr/include");
  ASSERT_GT(want.size(), 40u);
  DIR* d = opendir("/usr/include");
  ASSERT_NE(d, nullptr) << ErrnoString();
  EXPECT_EQ(telldir(d), 0);
  std::vector<long> marks;
  for (size_t i = 0; i < 30; ++i) {
    ASSERT_NE(readdir(d), nullptr);
    marks.push_back(telldir(d));
    EXPECT_EQ(marks.back(), want[i].off);
  }
  for (size_t at : {size_t{20}, size_t{3}, size_t{0}, size_t{29}}) {
    SCOPED_TRACE(at);
    seekdir(d, marks[at]);
    EXPECT_EQ(telldir(d), marks[at]);
    struct dirent* e = readdir(d);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(Of(e), want[at + 1]);
  }
  seekdir(d, 0);
  struct dirent* e = readdir(d);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(Of(e), want[0]);
  // Past the last record: the end.
  seekdir(d, want.back().off);
  EXPECT_EQ(readdir(d), nullptr);
  closedir(d);
}

TEST(ReaddirTest, RewinddirStartsAgain) {
  std::vector<Entry> want = Getdents("/usr/lib/python3.11/json");
  DIR* d = opendir("/usr/lib/python3.11/json");
  ASSERT_NE(d, nullptr) << ErrnoString();
  for (int i = 0; i < 4; ++i) ASSERT_NE(readdir(d), nullptr);
  rewinddir(d);
  EXPECT_EQ(telldir(d), 0);
  EXPECT_EQ(ReadAll(d), want);
  rewinddir(d);
  rewinddir(d);
  EXPECT_EQ(ReadAll(d), want);
  closedir(d);
}

// dirfd is the stream's own fd: the directory's, usable for *at calls.
TEST(ReaddirTest, DirfdIsTheDirectorysFd) {
  DIR* d = opendir("/usr/lib/python3.11");
  ASSERT_NE(d, nullptr) << ErrnoString();
  int fd = dirfd(d);
  ASSERT_GE(fd, 0);
  struct stat by_fd, by_path, child;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &by_fd));
  ASSERT_SYSCALL_SUCCEEDS(stat("/usr/lib/python3.11", &by_path));
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_TRUE(S_ISDIR(by_fd.st_mode));
  ASSERT_SYSCALL_SUCCEEDS(fstatat(fd, "json", &child, AT_SYMLINK_NOFOLLOW));
  EXPECT_TRUE(S_ISDIR(child.st_mode));
  // close-on-exec, as glibc's opendir sets it.
  EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  closedir(d);
  // closedir closed it.
  EXPECT_SYSCALL_FAILS_WITH(fcntl(fd, F_GETFD), EBADF);
}

// fdopendir of a fresh fd lists from the start; of an fd already read from,
// from where that fd is (glibc reads on from the fd's offset).
TEST(ReaddirTest, FdopendirStartsWhereTheFdIs) {
  std::vector<Entry> want = Getdents("/usr/include");
  int fd = open("/usr/include", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  DIR* d = fdopendir(fd);
  ASSERT_NE(d, nullptr) << ErrnoString();
  EXPECT_EQ(dirfd(d), fd);
  EXPECT_EQ(ReadAll(d), want);
  closedir(d);

  fd = open("/usr/include", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  alignas(8) char buf[64];  // one or two records
  long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
  ASSERT_GT(n, 0);
  size_t read = 0;
  for (long off = 0; off < n; ++read)
    off += reinterpret_cast<struct dirent64*>(buf + off)->d_reclen;
  d = fdopendir(fd);
  ASSERT_NE(d, nullptr) << ErrnoString();
  std::vector<Entry> rest = ReadAll(d);
  EXPECT_EQ(rest, std::vector<Entry>(want.begin() + read, want.end()));
  closedir(d);
}

TEST(ReaddirTest, WhatIsNoListableDirectory) {
  int fd = open("/usr/bin/env", O_RDONLY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  errno = 0;
  EXPECT_EQ(fdopendir(fd), nullptr);
  EXPECT_EQ(errno, ENOTDIR);
  close(fd);
  // An O_PATH fd makes a stream (glibc checks only that it is no O_WRONLY
  // fd of a directory), whose first read fails.
  fd = open("/usr/include", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  DIR* d = fdopendir(fd);
  ASSERT_NE(d, nullptr) << ErrnoString();
  errno = 0;
  EXPECT_EQ(readdir(d), nullptr);
  EXPECT_EQ(errno, EBADF);
  closedir(d);
  errno = 0;
  EXPECT_EQ(opendir("/usr/bin/env"), nullptr);
  EXPECT_EQ(errno, ENOTDIR);
  errno = 0;
  EXPECT_EQ(opendir("/usr/include/no-such-dir"), nullptr);
  EXPECT_EQ(errno, ENOENT);
  errno = 0;
  EXPECT_EQ(opendir(""), nullptr);
  EXPECT_EQ(errno, ENOENT);
}

// scandir (glibc's own stream, inside libc) and readdir agree.
TEST(ReaddirTest, ScandirAgreesWithReaddir) {
  std::set<std::string> want;
  for (const Entry& e : Getdents("/usr/lib/python3.11/json")) want.insert(e.name);
  struct dirent** list = nullptr;
  int n = scandir("/usr/lib/python3.11/json", &list, nullptr, alphasort);
  ASSERT_GT(n, 2) << ErrnoString();
  std::set<std::string> got;
  for (int i = 0; i < n; ++i) {
    got.insert(list[i]->d_name);
    free(list[i]);
  }
  free(list);
  EXPECT_EQ(got, want);
}

// Two streams of one directory, read in turns, each see every record once.
TEST(ReaddirTest, TwoStreamsAreIndependent) {
  std::vector<Entry> want = Getdents("/usr/lib/python3.11/json");
  DIR* a = opendir("/usr/lib/python3.11/json");
  DIR* b = opendir("/usr/lib/python3.11/json");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<Entry> got_a, got_b;
  struct dirent* e;
  while ((e = readdir(a)) != nullptr) {
    got_a.push_back(Of(e));
    if ((e = readdir(b)) != nullptr) got_b.push_back(Of(e));
  }
  while ((e = readdir(b)) != nullptr) got_b.push_back(Of(e));
  EXPECT_EQ(got_a, want);
  EXPECT_EQ(got_b, want);
  closedir(a);
  closedir(b);
}

}  // namespace
}  // namespace sentry::conformance
