// A guest program for sentry_cpu_test: the red team's storm of cheap trapped
// calls (issue 23), from many threads, for a fixed wall time.
//
//   cpu_storm_guest getdents DIR THREADS SECONDS   each thread lists DIR with
//       getdents64 of 64 bytes, over and over (lseek to 0 at the end)
//   cpu_storm_guest stat PATH THREADS SECONDS      each thread stats PATH
//
// Prints "calls N" (every thread's calls added up) and exits 0.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::atomic<long> g_calls{0};

void Getdents(const char* dir, double until) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    std::perror("open");
    std::exit(2);
  }
  alignas(8) char buf[64];
  long calls = 0;
  while (Now() < until) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
    ++calls;
    if (n < 0) {
      std::perror("getdents64");
      std::exit(2);
    }
    if (n == 0) lseek(fd, 0, SEEK_SET);
  }
  close(fd);
  g_calls += calls;
}

void Stat(const char* path, double until) {
  long calls = 0;
  struct stat st;
  while (Now() < until) {
    stat(path, &st);
    ++calls;
  }
  g_calls += calls;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s getdents|stat PATH THREADS SECONDS\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  const char* path = argv[2];
  int threads = std::atoi(argv[3]);
  double until = Now() + std::atof(argv[4]);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    if (mode == "getdents") {
      pool.emplace_back(Getdents, path, until);
    } else {
      pool.emplace_back(Stat, path, until);
    }
  }
  for (std::thread& t : pool) t.join();
  std::printf("calls %ld\n", g_calls.load());
  return 0;
}
