// bench_native_ops: the cost of ordinary calls a guest program makes.
//
// Meant to be run natively, as a guest under sentry and under runsc, and compared
// (bench/compare.sh does all three). It touches only /usr (read), /dev/null (write)
// and /tmp (creates and removes its own files), which is what a sandbox gives it:
// /tmp empty and writable, /usr readable.
//
// Which calls the sentry traps (DESIGN.md, "How a trapped syscall is answered"):
// stat, openat, fstat and getdents64 name a resource or need the fd's identity and go
// to the sentry; getpid, pread, write, mmap/munmap and close stay native.

#include <benchmark/benchmark.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr const char* kStatPath = "/usr/bin/python3";
constexpr const char* kOpenPath = "/usr/lib/os-release";
constexpr const char* kDirPath = "/usr/bin";
constexpr size_t kPage = 4096;

std::string ErrnoMessage(const std::string& what) { return what + ": " + strerror(errno); }

// A file of `size` bytes of real data in /tmp, removed when this goes out of scope.
class TmpFile {
 public:
  explicit TmpFile(size_t size) {
    char name[] = "/tmp/bench_native_ops.XXXXXX";
    fd_ = mkstemp(name);
    if (fd_ < 0) {
      error_ = ErrnoMessage("mkstemp in /tmp");
      return;
    }
    path_ = name;
    std::vector<char> data(size);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>('a' + i % 26);
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(fd_, data.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = ErrnoMessage("write " + path_);
        return;
      }
      done += static_cast<size_t>(n);
    }
  }
  ~TmpFile() {
    if (fd_ >= 0) close(fd_);
    if (!path_.empty()) unlink(path_.c_str());
  }
  TmpFile(const TmpFile&) = delete;
  TmpFile& operator=(const TmpFile&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::string error_;
};

// Pure native baseline: never trapped anywhere.
void BM_Getpid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(getpid());
}
BENCHMARK(BM_Getpid);

// Path resolution through a symlink (/usr/bin/python3 -> python3.X).
void BM_StatUsrBinPython3(benchmark::State& state) {
  struct stat st;
  if (stat(kStatPath, &st) != 0) {
    state.SkipWithError(ErrnoMessage(std::string("stat ") + kStatPath).c_str());
    return;
  }
  for (auto _ : state) {
    if (stat(kStatPath, &st) != 0) {
      state.SkipWithError(ErrnoMessage("stat").c_str());
      break;
    }
    benchmark::DoNotOptimize(st.st_size);
  }
}
BENCHMARK(BM_StatUsrBinPython3);

// Open a lower-layer (host, read-only) file and close it again.
void BM_OpenatCloseUsrLibOsRelease(benchmark::State& state) {
  for (auto _ : state) {
    int fd = openat(AT_FDCWD, kOpenPath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError(ErrnoMessage(std::string("openat ") + kOpenPath).c_str());
      break;
    }
    close(fd);
  }
}
BENCHMARK(BM_OpenatCloseUsrLibOsRelease);

// Open a file the guest created (upper layer under sentry) and close it again.
void BM_OpenatCloseTmpFile(benchmark::State& state) {
  TmpFile file(kPage);
  if (!file.ok()) {
    state.SkipWithError(file.error().c_str());
    return;
  }
  for (auto _ : state) {
    int fd = openat(AT_FDCWD, file.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError(ErrnoMessage("openat " + file.path()).c_str());
      break;
    }
    close(fd);
  }
}
BENCHMARK(BM_OpenatCloseTmpFile);

// fstat on an fd already open (the sentry must establish the fd's identity).
void BM_FstatOpenFd(benchmark::State& state) {
  int fd = open(kOpenPath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError(ErrnoMessage(std::string("open ") + kOpenPath).c_str());
    return;
  }
  struct stat st;
  for (auto _ : state) {
    if (fstat(fd, &st) != 0) {
      state.SkipWithError(ErrnoMessage("fstat").c_str());
      break;
    }
    benchmark::DoNotOptimize(st.st_size);
  }
  close(fd);
}
BENCHMARK(BM_FstatOpenFd);

// The data path: 4 KiB pread from a file in /tmp.
void BM_Pread4KTmpFile(benchmark::State& state) {
  TmpFile file(16 * kPage);
  if (!file.ok()) {
    state.SkipWithError(file.error().c_str());
    return;
  }
  alignas(64) static char buf[kPage];
  for (auto _ : state) {
    if (pread(file.fd(), buf, sizeof(buf), 0) != static_cast<ssize_t>(sizeof(buf))) {
      state.SkipWithError(ErrnoMessage("pread").c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kPage);
}
BENCHMARK(BM_Pread4KTmpFile);

// 4 KiB write to /dev/null.
void BM_Write4KDevNull(benchmark::State& state) {
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError(ErrnoMessage("open /dev/null").c_str());
    return;
  }
  alignas(64) static char buf[kPage] = {1};
  for (auto _ : state) {
    if (write(fd, buf, sizeof(buf)) != static_cast<ssize_t>(sizeof(buf))) {
      state.SkipWithError(ErrnoMessage("write /dev/null").c_str());
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kPage);
  close(fd);
}
BENCHMARK(BM_Write4KDevNull);

// mmap a 64 KiB file from /tmp, read one byte per page (16 page faults), munmap.
void BM_MmapTouchMunmap64KTmpFile(benchmark::State& state) {
  constexpr size_t kSize = 64 * 1024;
  TmpFile file(kSize);
  if (!file.ok()) {
    state.SkipWithError(file.error().c_str());
    return;
  }
  for (auto _ : state) {
    void* p = mmap(nullptr, kSize, PROT_READ, MAP_SHARED, file.fd(), 0);
    if (p == MAP_FAILED) {
      state.SkipWithError(ErrnoMessage("mmap").c_str());
      break;
    }
    const volatile char* bytes = static_cast<const volatile char*>(p);
    unsigned sum = 0;
    for (size_t off = 0; off < kSize; off += kPage) sum += static_cast<unsigned char>(bytes[off]);
    benchmark::DoNotOptimize(sum);
    munmap(p, kSize);
  }
}
BENCHMARK(BM_MmapTouchMunmap64KTmpFile);

// A full listing of /usr/bin as readdir does it: open, getdents64 until the end, close.
void BM_GetdentsUsrBin(benchmark::State& state) {
  static char buf[32 * 1024];  // glibc's readdir buffer size
  int64_t entries = 0, calls = 0;
  for (auto _ : state) {
    int fd = open(kDirPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError(ErrnoMessage(std::string("open ") + kDirPath).c_str());
      break;
    }
    for (;;) {
      long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
      ++calls;
      if (n < 0) {
        state.SkipWithError(ErrnoMessage("getdents64").c_str());
        break;
      }
      if (n == 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
        ++entries;
        off += d->d_reclen;
      }
    }
    close(fd);
  }
  if (state.iterations() > 0) {
    state.counters["entries"] =
        benchmark::Counter(static_cast<double>(entries), benchmark::Counter::kAvgIterations);
    state.counters["getdents_calls"] =
        benchmark::Counter(static_cast<double>(calls), benchmark::Counter::kAvgIterations);
  }
}
BENCHMARK(BM_GetdentsUsrBin);

}  // namespace

BENCHMARK_MAIN();
