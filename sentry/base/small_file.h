// ReadFileText: a small file of procfs or cgroupfs read whole with open,
// read and close.
//
// No iostream on a cold run's path: a process's first std::ifstream (or any
// stream) builds the C++ locale, ~50 us, and each stream then costs ~5 us
// more than the calls themselves (measured with a static test program:
// uid_map and gid_map 72-120 us by ifstream, 32-39 us by read(2)). A cold
// `sentry run` read 11 such files.
#ifndef SENTRY_BASE_SMALL_FILE_H_
#define SENTRY_BASE_SMALL_FILE_H_

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace sentry {

// The file's bytes, at most max_bytes of them; "" if it cannot be opened.
inline std::string ReadFileText(const char* path, size_t max_bytes = 1 << 20) {
  std::string out;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  while (out.size() < max_bytes) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, std::min(static_cast<size_t>(n), max_bytes - out.size()));
  }
  close(fd);
  return out;
}
inline std::string ReadFileText(const std::string& path, size_t max_bytes = 1 << 20) {
  return ReadFileText(path.c_str(), max_bytes);
}

}  // namespace sentry

#endif  // SENTRY_BASE_SMALL_FILE_H_
