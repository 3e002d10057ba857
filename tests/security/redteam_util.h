// Helpers of the red-team tests (redteam_*_test.cc): the C probe, a sentry
// run in the background, and what the host sees of a running sentry process
// (its threads, fds, memory), sampled while the guest attacks it.
#ifndef SENTRY_TESTS_SECURITY_REDTEAM_UTIL_H_
#define SENTRY_TESTS_SECURITY_REDTEAM_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/security/security_util.h"

namespace sentry::security {

// Whether this suite runs the sanitizers' build of the sentry (CI's second
// pass): ASan's shadow memory and quarantine count in the sentry's RSS, so RSS
// bounds are checked against the plain build only.
#ifdef SENTRY_SANITIZED
inline constexpr bool kSanitizedSentry = true;
#else
inline constexpr bool kSanitizedSentry = false;
#endif

// Where redteam_probe is copied inside the sandbox.
inline constexpr const char* kGuestRtProbe = "/tmp/rtprobe";

// `sentry run --copy REDTEAM_PROBE:/tmp/rtprobe [flags] -- /tmp/rtprobe args...`
ProcessResult RunRtProbe(const std::vector<std::string>& args,
                         const std::vector<std::string>& flags = {}, double timeout_sec = 60);

// The flags that copy the probe in, for runs made some other way.
std::vector<std::string> RtProbeCopyFlags();

// A `sentry run` (or any program) started in the background with stdout and
// stderr captured; Wait() collects it (killed after timeout_sec).
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv, const std::string& cwd = "");
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  pid_t pid() const { return pid_; }
  ProcessResult Wait(double timeout_sec = 60);

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  bool waited_ = false;
};

// The argv of `sentry run flags -- cmd` (with $SENTRY_RUN_FLAGS).
std::vector<std::string> SentryArgv(const std::vector<std::string>& flags,
                                    const std::vector<std::string>& cmd);

// The peak of what a process held while it was sampled (every 20 ms).
struct Peaks {
  long rss_kb = 0;
  long threads = 0;
  long fds = 0;
  long samples = 0;
  double cpu_sec = 0;  // user + system time of the process itself, last seen
};

class Sampler {
 public:
  explicit Sampler(pid_t pid);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  Peaks Stop();

 private:
  pid_t pid_;
  std::atomic<bool> stop_{false};
  Peaks peaks_;
  std::thread thread_;
};

// Current values of one process (0 when it is gone).
long RssKb(pid_t pid);
long ThreadCount(pid_t pid);
long FdCount(pid_t pid);
double CpuSeconds(pid_t pid);  // utime + stime of the process itself

// Whether pid is alive (and not a zombie).
bool Alive(pid_t pid);

}  // namespace sentry::security

#endif  // SENTRY_TESTS_SECURITY_REDTEAM_UTIL_H_
