// Helpers shared by the syscall conformance tests.
//
// Every test in this directory runs twice with the same binary: natively on
// Linux (the reference) and as a guest of `sentry run`. A test may therefore use
// only a scratch directory under /tmp, its own working directory, and the
// read-only system paths every Debian 12 host and every sandbox show (/usr,
// /bin, /etc/passwd, /dev/{null,zero,full,urandom}, /proc/self). Tests check the
// exact errno the kernel gives and must not depend on timing or on the host
// filesystem type.
#ifndef SENTRY_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
#define SENTRY_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sentry::conformance {

// True when the binary runs as a sentry guest (the sentry sets SENTRY_GUEST in
// the guest's environment). Tests should not branch on it: the point of the
// suite is that both runs give the same answers.
bool IsRunningInSandbox();

// True when running with euid 0. Tests whose answer root changes (permission
// bits, chown to another uid, mknod of devices) skip themselves then.
bool IsRoot();

// "ENOENT" for ENOENT, or the number when the name is unknown.
std::string ErrnoName(int error);

// "ENOENT (No such file or directory)" for the current errno.
std::string ErrnoString(int error = errno);

// Owns a file descriptor and closes it on destruction.
class UniqueFd final {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A fresh directory made with mkdtemp under /tmp, removed with everything in it
// (permission bits set by a test included) when the object goes away.
class ScratchDir final {
 public:
  ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  // The directory itself, absolute.
  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Path(std::string_view name) const;

 private:
  std::string path_;
};

// Sets the umask for the lifetime of the object, then restores the old one.
class UmaskGuard final {
 public:
  explicit UmaskGuard(mode_t mask) : old_(umask(mask)) {}
  UmaskGuard(const UmaskGuard&) = delete;
  UmaskGuard& operator=(const UmaskGuard&) = delete;
  ~UmaskGuard() { umask(old_); }

 private:
  mode_t old_;
};

// Remembers the working directory and returns to it on destruction (to "/" if
// the old one cannot be entered any more).
class CwdGuard final {
 public:
  CwdGuard();
  CwdGuard(const CwdGuard&) = delete;
  CwdGuard& operator=(const CwdGuard&) = delete;
  ~CwdGuard();

 private:
  std::string saved_;
};

// Creates (or truncates) a regular file holding `contents` with permission bits
// exactly `mode` (not reduced by the umask). Records a test failure and returns
// false on error, so callers write ASSERT_TRUE(WriteFile(...)).
bool WriteFile(const std::string& path, std::string_view contents, mode_t mode = 0644);

// The whole contents of a file, or nullopt (with errno set) on error.
std::optional<std::string> ReadFile(const std::string& path);

// Creates a directory with permission bits exactly `mode`. Records a failure
// and returns false on error.
bool MakeDir(const std::string& path, mode_t mode = 0755);

// Creates a symbolic link `path` -> `target`. Records a failure and returns
// false on error.
bool MakeSymlink(const std::string& target, const std::string& path);

// stat(2) that records a failure on error; the result is zeroed then.
struct stat StatOrFail(const std::string& path);
struct stat LstatOrFail(const std::string& path);

// Names of the entries of an open directory, read with raw getdents64 from the
// fd's current offset to the end. Records a failure on error.
std::vector<std::string> ListDirFd(int fd);
// Same for a path, "." and ".." included.
std::vector<std::string> ListDir(const std::string& path);

// An address that is not mapped: a page mapped then unmapped at once. Use it in
// the very next syscall, before anything else could map that page again.
void* UnmappedAddress();

// Two adjacent pages, the first readable and writable, the second PROT_NONE,
// kept for the object's lifetime. EndOfReadable(n) is where an n-byte object
// must start to end exactly at the boundary, so that one byte more faults.
class GuardedPage final {
 public:
  GuardedPage();
  GuardedPage(const GuardedPage&) = delete;
  GuardedPage& operator=(const GuardedPage&) = delete;
  ~GuardedPage();

  char* EndOfReadable(size_t n) const { return base_ + page_size_ - n; }
  char* Guard() const { return base_ + page_size_; }

 private:
  char* base_ = nullptr;
  size_t page_size_ = 0;
};

// Forks; the child runs `body` and exits with its return value (never returning
// into the test). Returns the wait status from waitpid, or -1 if fork failed.
// GoogleTest assertions must not be used inside `body`.
int RunInChild(const std::function<int()>& body);

// A component longer than NAME_MAX (256 bytes).
std::string LongName();
// An absolute path at least PATH_MAX bytes long made of short components.
std::string LongPath();

namespace internal {

template <typename T>
struct Outcome {
  T value;
  int error;
};

template <typename T>
bool Failed(T value) {
  if constexpr (std::is_pointer_v<T>) {
    return value == nullptr;
  } else {
    return value == static_cast<T>(-1);
  }
}

template <typename T>
void PrintValue(std::ostream& os, T value) {
  if constexpr (std::is_pointer_v<T>) {
    os << static_cast<const void*>(value);
  } else {
    os << value;
  }
}

template <typename T>
::testing::AssertionResult CheckSucceeds(const char* expr, const Outcome<T>& outcome) {
  if (!Failed(outcome.value)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << expr << " failed with " << ErrnoString(outcome.error) << ", expected success";
}

template <typename T>
::testing::AssertionResult CheckFailsWith(const char* expr, const Outcome<T>& outcome,
                                          int expected) {
  if (Failed(outcome.value) && outcome.error == expected) return ::testing::AssertionSuccess();
  ::testing::AssertionResult result = ::testing::AssertionFailure();
  result << expr;
  if (Failed(outcome.value)) {
    result << " failed with " << ErrnoString(outcome.error);
  } else {
    std::ostringstream value;
    PrintValue(value, outcome.value);
    result << " succeeded, returning " << value.str();
  }
  return result << ", expected failure with " << ErrnoString(expected);
}

}  // namespace internal
}  // namespace sentry::conformance

// Evaluates `expr` once and captures errno right after it. errno is not reset
// first, so `ASSERT_SYSCALL_SUCCEEDS(fd.get())` right after the call that made
// fd still reports that call's errno.
#define SENTRY_CONFORMANCE_OUTCOME_(expr)                                                    \
  ([&]() {                                                                                   \
    auto sentry_value_ = (expr);                                                             \
    const int sentry_error_ = errno;                                                         \
    return ::sentry::conformance::internal::Outcome<decltype(sentry_value_)>{sentry_value_,  \
                                                                             sentry_error_}; \
  }())

// The syscall-style expression (-1 or nullptr on failure, errno set) succeeds.
// Failure messages quote `expr` as written and name the errno.
#define EXPECT_SYSCALL_SUCCEEDS(expr)                                                           \
  GTEST_ASSERT_(                                                                                \
      ::sentry::conformance::internal::CheckSucceeds(#expr, SENTRY_CONFORMANCE_OUTCOME_(expr)), \
      GTEST_NONFATAL_FAILURE_)
#define ASSERT_SYSCALL_SUCCEEDS(expr)                                                           \
  GTEST_ASSERT_(                                                                                \
      ::sentry::conformance::internal::CheckSucceeds(#expr, SENTRY_CONFORMANCE_OUTCOME_(expr)), \
      GTEST_FATAL_FAILURE_)

// The expression fails with exactly errno `error`.
#define EXPECT_SYSCALL_FAILS_WITH(expr, error)                        \
  GTEST_ASSERT_(::sentry::conformance::internal::CheckFailsWith(      \
                    #expr, SENTRY_CONFORMANCE_OUTCOME_(expr), error), \
                GTEST_NONFATAL_FAILURE_)
#define ASSERT_SYSCALL_FAILS_WITH(expr, error)                        \
  GTEST_ASSERT_(::sentry::conformance::internal::CheckFailsWith(      \
                    #expr, SENTRY_CONFORMANCE_OUTCOME_(expr), error), \
                GTEST_FATAL_FAILURE_)

// Skips the current test when running as root.
#define SKIP_IF_ROOT()                                                               \
  do {                                                                               \
    if (::sentry::conformance::IsRoot()) GTEST_SKIP() << "root bypasses this check"; \
  } while (0)

#endif  // SENTRY_TESTS_CONFORMANCE_CONFORMANCE_UTIL_H_
