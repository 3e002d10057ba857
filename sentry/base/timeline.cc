#include "sentry/base/timeline.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sentry::timeline {
namespace {

int g_fd = -1;  // set once in main, before any thread
constexpr int kHighFd = 900;

}  // namespace

void OpenFromEnvironment() {
  const char* path = std::getenv("SENTRY_TIMELINE");
  if (!path || !*path) return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "sentry: SENTRY_TIMELINE: cannot open %s\n", path);
    return;
  }
  // Far from the low fds a supervisor puts its own pipes at with dup2 (0-3).
  g_fd = fcntl(fd, F_DUPFD_CLOEXEC, kHighFd);
  close(fd);
}

bool Enabled() { return g_fd >= 0; }

void Mark(std::string_view event, long n) {
  if (g_fd < 0) return;
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  long long ns = static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
  int pid = static_cast<int>(getpid());
  int size = static_cast<int>(event.size());
  char line[160];
  int len =
      n >= 0
          ? std::snprintf(line, sizeof(line), "%lld %d %.*s.%ld\n", ns, pid, size, event.data(), n)
          : std::snprintf(line, sizeof(line), "%lld %d %.*s\n", ns, pid, size, event.data());
  if (len > 0 && static_cast<size_t>(len) < sizeof(line)) (void)!write(g_fd, line, len);
}

void Mark(std::string_view event) { Mark(event, -1); }

}  // namespace sentry::timeline
