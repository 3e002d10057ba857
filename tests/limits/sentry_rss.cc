#include "tests/limits/sentry_rss.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace sentry::limits {

namespace {

// Reads status beneath a /proc/<pid> directory fd: once that process is
// reaped the fd finds nothing, even if its pid is reused meanwhile.
RssSample ReadRssAt(int proc_dir) {
  RssSample s;
  int fd = openat(proc_dir, "status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, n);
  close(fd);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::atol(line.c_str() + 6);
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kb = std::atol(line.c_str() + 6);
  }
  return s;
}

}  // namespace

RssSample ReadRss(pid_t pid) {
  int dir = open(("/proc/" + std::to_string(pid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return {};
  RssSample s = ReadRssAt(dir);
  close(dir);
  return s;
}

SampledRun RunSentrySampled(const std::vector<std::string>& flags,
                            const std::vector<std::string>& cmd, double timeout_sec,
                            int interval_ms) {
  SampledRun run;
  Child child = SpawnSentry(flags, cmd);
  int proc_dir =
      open(("/proc/" + std::to_string(child.pid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  // Sampled from a thread of ours while Collect drains the pipes and reaps;
  // it stops before the pid can be reaped and reused.
  std::atomic<bool> done{false};
  std::atomic<long> peak{0};
  std::atomic<int> samples{0};
  std::thread sampler([&] {
    while (!done.load()) {
      RssSample s = ReadRssAt(proc_dir);
      if (s.hwm_kb > 0) {
        ++samples;
        long seen = std::max(s.hwm_kb, s.rss_kb);
        if (seen > peak.load()) peak.store(seen);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
    }
  });
  run.finished = Collect(child, timeout_sec);
  done.store(true);
  sampler.join();
  if (proc_dir >= 0) close(proc_dir);
  run.peak_kb = peak.load();
  run.samples = samples.load();
  return run;
}

}  // namespace sentry::limits
