#include "tests/conformance/conformance_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cstdlib>

namespace sentry::conformance {

bool IsRunningInSandbox() { return getenv("SENTRY_GUEST") != nullptr; }

bool IsRoot() { return geteuid() == 0; }

std::string ErrnoName(int error) {
  const char* name = strerrorname_np(error);
  return name != nullptr ? name : "errno " + std::to_string(error);
}

std::string ErrnoString(int error) { return ErrnoName(error) + " (" + strerror(error) + ")"; }

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  reset(other.release());
  return *this;
}

int UniqueFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

namespace {

// Removes everything below the directory open at `dirfd`, first granting
// ourselves rwx on each directory, since tests leave 0000 and 0500 ones behind.
void RemoveContents(int dir_fd) {
  DIR* dir = fdopendir(dir_fd);
  if (dir == nullptr) {
    close(dir_fd);
    return;
  }
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  const int fd = dirfd(dir);
  for (const std::string& name : names) {
    struct stat st;
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      fchmodat(fd, name.c_str(), 0700, 0);
      const int child = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) RemoveContents(child);
      unlinkat(fd, name.c_str(), AT_REMOVEDIR);
    } else {
      unlinkat(fd, name.c_str(), 0);
    }
  }
  closedir(dir);
}

}  // namespace

ScratchDir::ScratchDir() {
  char templ[] = "/tmp/sentry-conformance-XXXXXX";
  if (mkdtemp(templ) == nullptr) {
    ADD_FAILURE() << "mkdtemp under /tmp: " << ErrnoString();
    return;
  }
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  chmod(path_.c_str(), 0700);
  const int fd = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) RemoveContents(fd);
  if (rmdir(path_.c_str()) != 0) ADD_FAILURE() << "removing " << path_ << ": " << ErrnoString();
}

std::string ScratchDir::Path(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

CwdGuard::CwdGuard() {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof(buf)) != nullptr) saved_ = buf;
}

CwdGuard::~CwdGuard() {
  if (saved_.empty() || chdir(saved_.c_str()) != 0) {
    if (chdir("/") != 0) ADD_FAILURE() << "chdir(\"/\"): " << ErrnoString();
  }
}

bool WriteFile(const std::string& path, std::string_view contents, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    ADD_FAILURE() << "open " << path << ": " << ErrnoString();
    return false;
  }
  UniqueFd guard(fd);
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n <= 0) {
      ADD_FAILURE() << "write " << path << ": " << ErrnoString();
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (fchmod(fd, mode) != 0) {
    ADD_FAILURE() << "fchmod " << path << ": " << ErrnoString();
    return false;
  }
  return true;
}

std::optional<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

bool MakeDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), 0700) != 0) {
    ADD_FAILURE() << "mkdir " << path << ": " << ErrnoString();
    return false;
  }
  if (chmod(path.c_str(), mode) != 0) {
    ADD_FAILURE() << "chmod " << path << ": " << ErrnoString();
    return false;
  }
  return true;
}

bool MakeSymlink(const std::string& target, const std::string& path) {
  if (symlink(target.c_str(), path.c_str()) != 0) {
    ADD_FAILURE() << "symlink " << path << " -> " << target << ": " << ErrnoString();
    return false;
  }
  return true;
}

struct stat StatOrFail(const std::string& path) {
  struct stat st = {};
  if (stat(path.c_str(), &st) != 0) {
    ADD_FAILURE() << "stat " << path << ": " << ErrnoString();
    st = {};
  }
  return st;
}

struct stat LstatOrFail(const std::string& path) {
  struct stat st = {};
  if (lstat(path.c_str(), &st) != 0) {
    ADD_FAILURE() << "lstat " << path << ": " << ErrnoString();
    st = {};
  }
  return st;
}

std::vector<std::string> ListDirFd(int fd) {
  std::vector<std::string> names;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n < 0) {
      ADD_FAILURE() << "getdents64: " << ErrnoString();
      return names;
    }
    if (n == 0) return names;
    for (long off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + off);
      names.emplace_back(entry->d_name);
      off += entry->d_reclen;
    }
  }
}

std::vector<std::string> ListDir(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    ADD_FAILURE() << "open " << path << ": " << ErrnoString();
    return {};
  }
  return ListDirFd(fd.get());
}

void* UnmappedAddress() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    ADD_FAILURE() << "mmap: " << ErrnoString();
    return reinterpret_cast<void*>(1);
  }
  munmap(p, page);
  return p;
}

GuardedPage::GuardedPage() : page_size_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
  void* p =
      mmap(nullptr, 2 * page_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    ADD_FAILURE() << "mmap: " << ErrnoString();
    return;
  }
  base_ = static_cast<char*>(p);
  if (mprotect(base_ + page_size_, page_size_, PROT_NONE) != 0) {
    ADD_FAILURE() << "mprotect: " << ErrnoString();
  }
}

GuardedPage::~GuardedPage() {
  if (base_ != nullptr) munmap(base_, 2 * page_size_);
}

int RunInChild(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(body());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

std::string LongName() { return std::string(NAME_MAX + 1, 'n'); }

std::string LongPath() {
  std::string path = "/tmp";
  while (path.size() < PATH_MAX) path += "/abcdefg";
  return path;
}

}  // namespace sentry::conformance

namespace sentry::conformance {
namespace {

// Marks each case as a phase of a census (docs/census.md): under `sentry run
// --census` the calls of each case are counted apart, which is how `sentry
// syscalls --conformance` ties the cases to the table's rows. Natively and in
// an ordinary run the mark is a call of a number no kernel has (ENOSYS).
class CensusMarks final : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override {
    std::string label = std::string(info.test_suite_name()) + "." + info.name();
    Mark(label.c_str());
  }
  void OnTestEnd(const ::testing::TestInfo&) override { Mark(""); }

 private:
  static void Mark(const char* label) {
    constexpr long kCensusMarkNr = 0x53454e;  // loader/census_filter.h
    int saved = errno;
    syscall(kCensusMarkNr, label);
    errno = saved;
  }
};

const bool kCensusMarks = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new CensusMarks);
  return true;
}();

}  // namespace
}  // namespace sentry::conformance
