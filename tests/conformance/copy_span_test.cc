// Results that span pages: a struct or a listing copied across a page boundary
// arrives whole when every page is writable, and faults as natively when a
// later page is not (unmapped, PROT_NONE, read-only). Under sentry each such
// result is one process_vm_writev that the kernel cuts short at the first page
// it cannot reach (GuestMemory::CopyOut).
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

// `pages` pages, readable and writable, then `tail_prot` given to the last one
// (PROT_READ|PROT_WRITE keeps it; -1 unmaps it). Freed with the object.
class Pages final {
 public:
  Pages(size_t pages, int tail_prot)
      : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))), size_(pages * page_) {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      ADD_FAILURE() << "mmap: " << ErrnoString();
      return;
    }
    base_ = static_cast<char*>(p);
    char* tail = base_ + size_ - page_;
    int r = tail_prot < 0 ? munmap(tail, page_) : mprotect(tail, page_, tail_prot);
    if (r != 0) ADD_FAILURE() << "unmap/mprotect: " << ErrnoString();
  }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  ~Pages() {
    if (base_) munmap(base_, size_);
  }
  // The address n bytes before the last page.
  char* BeforeTail(size_t n) const { return base_ + size_ - page_ - n; }
  char* Tail() const { return base_ + size_ - page_; }
  size_t page() const { return page_; }

 private:
  size_t page_;
  size_t size_;
  char* base_ = nullptr;
};

// A struct stat written across two writable pages is the one written into a
// buffer of its own, for every stat-like call.
TEST(CopySpanTest, StatAcrossTwoPagesIsWhole) {
  Pages pages(2, PROT_READ | PROT_WRITE);
  auto* across = reinterpret_cast<struct stat*>(pages.BeforeTail(sizeof(struct stat) / 2));
  UniqueFd fd(open("/usr/lib/os-release", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat alone;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_stat, "/usr/bin", &alone));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_stat, "/usr/bin", across));
  EXPECT_EQ(memcmp(&alone, across, sizeof(alone)), 0);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fstat, fd.get(), &alone));
  memset(across, 0x5a, sizeof(*across));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fstat, fd.get(), across));
  EXPECT_EQ(memcmp(&alone, across, sizeof(alone)), 0);
  memset(across, 0x5a, sizeof(*across));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_newfstatat, fd.get(), "", across, AT_EMPTY_PATH));
  EXPECT_EQ(memcmp(&alone, across, sizeof(alone)), 0);
  struct statx sx_alone;
  auto* sx = reinterpret_cast<struct statx*>(pages.BeforeTail(sizeof(struct statx) / 2));
  ASSERT_SYSCALL_SUCCEEDS(
      syscall(SYS_statx, AT_FDCWD, "/usr/bin", 0, STATX_BASIC_STATS, &sx_alone));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_statx, AT_FDCWD, "/usr/bin", 0, STATX_BASIC_STATS, sx));
  EXPECT_EQ(sx->stx_ino, sx_alone.stx_ino);
  EXPECT_EQ(sx->stx_mode, sx_alone.stx_mode);
  EXPECT_EQ(sx->stx_size, sx_alone.stx_size);
  EXPECT_EQ(sx->stx_mtime.tv_sec, sx_alone.stx_mtime.tv_sec);
}

// A struct stat whose second half is in a page the caller cannot write faults,
// whether the page is unmapped, PROT_NONE or read-only; the read-only page is
// left as it was.
TEST(CopySpanTest, StatRunningIntoAnUnwritablePageFails) {
  UniqueFd fd(open("/usr/lib/os-release", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  UniqueFd dir(open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dir.get());
  for (int prot : {-1, PROT_NONE, PROT_READ}) {
    SCOPED_TRACE(prot);
    Pages pages(2, prot);
    void* st = pages.BeforeTail(sizeof(struct stat) / 2);
    void* sx = pages.BeforeTail(sizeof(struct statx) / 2);
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, "/usr/bin", st), EFAULT);
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_lstat, "/usr/bin", st), EFAULT);
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, fd.get(), st), EFAULT);
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, dir.get(), st), EFAULT);
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, fd.get(), "", st, AT_EMPTY_PATH), EFAULT);
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_statx, AT_FDCWD, "/usr/bin", 0, STATX_BASIC_STATS, sx),
                              EFAULT);
    if (prot == PROT_READ) {
      const char* tail = pages.Tail();
      for (size_t i = 0; i < pages.page(); ++i) ASSERT_EQ(tail[i], 0) << "byte " << i;
    }
  }
}

// The names of a directory as getdents64 gives them into a roomy buffer.
std::set<std::string> Names(const char* path) {
  std::set<std::string> names;
  UniqueFd fd(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return names;
  alignas(8) static char buf[64 * 1024];
  long n;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      names.insert(d->d_name);
      off += d->d_reclen;
    }
  }
  return names;
}

// A listing into a buffer of many pages arrives whole: the same names as a
// listing into one roomy buffer.
TEST(CopySpanTest, GetdentsAcrossManyPagesIsWhole) {
  Pages pages(9, PROT_READ | PROT_WRITE);  // 8 pages from an unaligned start
  char* buf = pages.BeforeTail(8 * pages.page() - 100) - 100;
  UniqueFd fd(open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  std::set<std::string> names;
  long n;
  while ((n = syscall(SYS_getdents64, fd.get(), buf, 8 * pages.page() - 100)) > 0) {
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      names.insert(d->d_name);
      off += d->d_reclen;
    }
  }
  EXPECT_EQ(n, 0);
  EXPECT_EQ(names, Names("/usr/bin"));
  EXPECT_GT(names.size(), 100u);
}

// A listing into a buffer that runs into a page the caller cannot write.
// Linux fills what fits before it and returns that much (a fault past the
// first record is a short listing, not an error), or EFAULT when not even the
// first record fits; the names left are listed by the next call.
TEST(CopySpanTest, GetdentsIntoABufferRunningIntoAHole) {
  for (int prot : {-1, PROT_NONE, PROT_READ}) {
    SCOPED_TRACE(prot);
    Pages pages(3, prot);
    char* buf = pages.BeforeTail(2 * pages.page());
    UniqueFd fd(open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_SYSCALL_SUCCEEDS(fd.get());
    // Two writable pages of four asked for.
    long n = syscall(SYS_getdents64, fd.get(), buf, 4 * pages.page());
    ASSERT_SYSCALL_SUCCEEDS(n);
    EXPECT_GT(n, 0);
    EXPECT_LE(static_cast<size_t>(n), 2 * pages.page());
    std::set<std::string> names;
    auto take = [&](const char* at, long len) {
      for (long off = 0; off < len;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(at + off);
        EXPECT_TRUE(names.insert(d->d_name).second) << "listed twice: " << d->d_name;
        off += d->d_reclen;
      }
    };
    take(buf, n);
    // A buffer of a few bytes before the hole holds no record: EFAULT.
    EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getdents64, fd.get(), pages.BeforeTail(8), 4096), EFAULT);
    alignas(8) static char rest[64 * 1024];
    while ((n = syscall(SYS_getdents64, fd.get(), rest, sizeof(rest))) > 0) take(rest, n);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(names, Names("/usr/bin"));
  }
}

// A link's target written across into a page that cannot be written faults.
TEST(CopySpanTest, ReadlinkRunningIntoAnUnwritablePageFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("a-target-of-some-length", dir.Path("link")));
  for (int prot : {-1, PROT_NONE, PROT_READ}) {
    SCOPED_TRACE(prot);
    Pages pages(2, prot);
    EXPECT_SYSCALL_FAILS_WITH(
        syscall(SYS_readlink, dir.Path("link").c_str(), pages.BeforeTail(4), 64), EFAULT);
  }
  Pages pages(2, PROT_READ | PROT_WRITE);
  char* across = pages.BeforeTail(4);
  ASSERT_EQ(syscall(SYS_readlink, dir.Path("link").c_str(), across, 64), 23);
  EXPECT_EQ(std::string(across, 23), "a-target-of-some-length");
}

}  // namespace
}  // namespace sentry::conformance
