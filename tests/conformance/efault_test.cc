#include <fcntl.h>
#include <linux/limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/conformance/conformance_util.h"

// Bad guest pointers: (char*)1 and a page that was just unmapped must give
// EFAULT, never a crash and never a different errno.
namespace sentry::conformance {
namespace {

char* Bad() { return reinterpret_cast<char*>(1); }

TEST(EfaultTest, OpenPath) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_open, Bad(), O_RDONLY), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_open, UnmappedAddress(), O_RDONLY), EFAULT);
}

TEST(EfaultTest, StatPathAndBuffer) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, Bad(), &st), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, UnmappedAddress(), &st), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, AT_FDCWD, UnmappedAddress(), &st, 0), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, "/dev/null", UnmappedAddress()), EFAULT);
}

TEST(EfaultTest, FstatBuffer) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, fd.get(), UnmappedAddress()), EFAULT);
}

TEST(EfaultTest, MkdirPath) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_mkdir, Bad(), 0755), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_mkdir, UnmappedAddress(), 0755), EFAULT);
}

TEST(EfaultTest, UnlinkPath) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_unlink, Bad()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_unlink, UnmappedAddress()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rmdir, UnmappedAddress()), EFAULT);
}

TEST(EfaultTest, RenamePaths) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rename, UnmappedAddress(), dir.Path("g").c_str()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rename, dir.Path("f").c_str(), UnmappedAddress()), EFAULT);
  EXPECT_SYSCALL_SUCCEEDS(access(dir.Path("f").c_str(), F_OK));
}

TEST(EfaultTest, ReadlinkBuffer) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("link").c_str(), Bad(), 64), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("link").c_str(), UnmappedAddress(), 64),
                            EFAULT);
}

TEST(EfaultTest, GetcwdBuffer) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, Bad(), PATH_MAX), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, UnmappedAddress(), PATH_MAX), EFAULT);
}

TEST(EfaultTest, NullPath) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_open, nullptr, O_RDONLY), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, nullptr, &st), EFAULT);
}

// A path that ends exactly at the last byte of a readable page, followed by an
// inaccessible one, is valid: a reader must not fetch past the NUL.
TEST(EfaultTest, PathEndingAtPageBoundaryWorks) {
  GuardedPage page;
  const char path[] = "/etc/passwd";
  char* where = page.EndOfReadable(sizeof(path));
  memcpy(where, path, sizeof(path));
  UniqueFd fd(syscall(SYS_open, where, O_RDONLY | O_CLOEXEC));
  EXPECT_SYSCALL_SUCCEEDS(fd.get());
  struct stat st;
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_stat, where, &st));
}

// The same path without its NUL runs into the inaccessible page.
TEST(EfaultTest, PathRunningIntoGuardPageFails) {
  GuardedPage page;
  const char path[] = "/etc/passwd";
  char* where = page.EndOfReadable(sizeof(path) - 1);
  memcpy(where, path, sizeof(path) - 1);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_open, where, O_RDONLY), EFAULT);
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, where, &st), EFAULT);
}

// An output struct that straddles into the guard page faults as a whole.
TEST(EfaultTest, StatBufferCrossingIntoGuardPageFails) {
  GuardedPage page;
  void* where = page.EndOfReadable(sizeof(struct stat) / 2);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, "/dev/null", where), EFAULT);
}

// A private anonymous page of the test's, with a path at its start, then
// given protection prot.
class ProtPage {
 public:
  ProtPage(const char* text, int prot) : size_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      ADD_FAILURE() << "mmap: " << ErrnoString();
      return;
    }
    page_ = static_cast<char*>(p);
    strcpy(page_, text);
    if (mprotect(page_, size_, prot) != 0) ADD_FAILURE() << "mprotect: " << ErrnoString();
  }
  ~ProtPage() {
    if (page_) munmap(page_, size_);
  }
  char* get() const { return page_; }
  // Whether every byte past the path is still zero (nothing was written).
  bool Untouched(size_t from) const {
    for (size_t i = from; i < size_; ++i) {
      if (page_[i] != 0) return false;
    }
    return true;
  }

 private:
  size_t size_;
  char* page_ = nullptr;
};

// A path the caller cannot read (PROT_NONE) faults as it does natively.
// (/proc/PID/mem, which reads with FOLL_FORCE, would read it: one reason the
// sentry reads with process_vm_readv; bench/README.md.)
TEST(EfaultTest, PathInProtNonePageFails) {
  ProtPage page("/usr/bin", PROT_NONE);
  ASSERT_NE(page.get(), nullptr);
  struct stat st;
  struct statx sx;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, page.get(), &st), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_lstat, page.get(), &st), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, AT_FDCWD, page.get(), &st, 0), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_statx, AT_FDCWD, page.get(), 0, STATX_BASIC_STATS, &sx),
                            EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, page.get(), F_OK), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_faccessat, AT_FDCWD, page.get(), R_OK), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, page.get(), buf, sizeof(buf)), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_open, page.get(), O_RDONLY), EFAULT);
}

// A result into a read-only page faults and leaves the page as it was, as
// natively (a write through /proc/PID/mem would break copy-on-write and land).
TEST(EfaultTest, ResultIntoReadOnlyPageFails) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("target", dir.Path("link")));
  ProtPage page("", PROT_READ);
  ASSERT_NE(page.get(), nullptr);
  UniqueFd fd(open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  UniqueFd file(open("/usr/lib/os-release", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(file.get());
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_stat, "/usr/bin", page.get()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_lstat, "/usr/bin", page.get()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, fd.get(), page.get()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstat, file.get(), page.get()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_newfstatat, file.get(), "", page.get(), AT_EMPTY_PATH),
                            EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_statx, AT_FDCWD, "/usr/bin", 0, STATX_BASIC_STATS, page.get()), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_readlink, dir.Path("link").c_str(), page.get(), 64),
                            EFAULT);
  EXPECT_TRUE(page.Untouched(0));
}

}  // namespace
}  // namespace sentry::conformance
