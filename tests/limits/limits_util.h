// Helpers for the limit and hostile-program suites: starting the real sentry
// binary with full control of its pipes and signals, timing it, reading its
// --json result, and looking on the host for anything a run left behind
// (processes, cgroup directories, mounts).
#ifndef SENTRY_TESTS_LIMITS_LIMITS_UTIL_H_
#define SENTRY_TESTS_LIMITS_LIMITS_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/util/json_read.h"

namespace sentry::limits {

using sentry::testing::At;
using sentry::testing::Int;
using sentry::testing::Num;
using sentry::testing::ParseJson;
using sentry::testing::Str;

// Monotonic seconds.
double Now();

// The host uid the sandbox user (uid 1000 inside) runs as when the sandbox
// holds the first block of root's sandbox ids (sentry/run/spawn.h), which it
// does when no other sandbox runs on the host.
inline constexpr uid_t kGuestHostUid = 2016777217;
// Whether uid is a guest user's on the host: the second id of a sandbox's
// block, or (without namespaces) a run's own id, from 2000065536.
inline bool IsGuestHostUid(long uid) {
  constexpr long kFirstSlot = 2016777216, kFirstSeccompOnly = 2000065536;
  if (uid >= kFirstSlot) return (uid - kFirstSlot) % 64 == 1;
  return uid >= kFirstSeccompOnly && uid < kFirstSeccompOnly + (1L << 22);
}

// A started process with pipes to its stdin, stdout and stderr.
struct Child {
  pid_t pid = -1;
  int in = -1;   // write end of its stdin; -1 once closed (or /dev/null)
  int out = -1;  // read end of its stdout
  int err = -1;  // read end of its stderr
  double started = 0;
};

struct SpawnOptions {
  bool stdin_pipe = false;             // a pipe we hold open; else /dev/null
  std::vector<std::string> extra_env;  // K=V added to the child's environment
  std::string cwd;                     // the child's working directory, if set
};

// argv[0] is a path. The child gets default SIGINT/SIGTERM handling, an empty
// signal mask and its own process group.
Child Spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});
// `sentry run [flags] -- cmd...`
Child SpawnSentry(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                  const SpawnOptions& options = {});

struct Finished {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
  double wall = 0;        // seconds from Spawn to exit
  long maxrss_kb = 0;     // of the process and its reaped descendants (wait4)
  bool deadline = false;  // we had to kill it
};

// Reads stdout and stderr to the end and reaps the child; SIGKILLs its process
// group if it is still running after timeout_sec.
Finished Collect(Child& child, double timeout_sec = 120);

// Reads from fd until `needle` has been seen or timeout_sec passed; returns
// what was read (which may hold more than the needle).
std::string ReadUntil(int fd, const std::string& needle, double timeout_sec);

// The result object: the last line of stdout that parses as a JSON object.
std::optional<nlohmann::json> ResultOf(const std::string& out);

// Convenience: spawn + collect.
Finished RunSentryFull(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                       double timeout_sec = 120, const SpawnOptions& options = {});

// A string no other process on the host carries: tag + our pid + a counter +
// randomness.
std::string UniqueMarker(const std::string& tag);

// Processes (not threads, not us) whose command line or environment holds
// `marker`.
std::vector<pid_t> MarkedProcesses(const std::string& marker);
// Waits up to grace_sec for the marked processes to disappear; returns those
// still alive (and then SIGKILLs them, so one failure does not leak into the
// next test).
std::vector<pid_t> LeftoverProcesses(const std::string& marker, double grace_sec = 2.0);
// "pid uid cmdline" lines, for messages.
std::string DescribeProcesses(const std::vector<pid_t>& pids);

// The cgroup directories named sentry-<pid> that exist now under the v1
// memory, pids, cpu and cpuacct hierarchies (where the sentry makes them: in
// its own cgroup, which is ours).
std::vector<std::string> SentryCgroupDirs(pid_t sentry_pid);
// Removes those directories (empty cgroups): cleanup after a known leak, so
// the suite leaves the host as it found it.
void RemoveCgroupDirs(const std::vector<std::string>& dirs);

// Samples one process's VmRSS and thread count (/proc/PID/status) every
// period_ms on a thread of its own until Stop() or the process is gone, and
// keeps the peaks: the sentry's own memory, which no cgroup of the guest's
// caps (the run's peakMemoryBytes is the guest's). VmHWM is read too, so a
// peak between two samples is not missed.
class SentryRssSampler final {
 public:
  explicit SentryRssSampler(pid_t pid, int period_ms = 20);
  ~SentryRssSampler();
  SentryRssSampler(const SentryRssSampler&) = delete;
  SentryRssSampler& operator=(const SentryRssSampler&) = delete;
  void Stop();
  long peak_rss_kb() const { return peak_rss_kb_; }
  long peak_threads() const { return peak_threads_; }
  long samples() const { return samples_; }

 private:
  void Sample();
  pid_t pid_;
  int period_ms_;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_rss_kb_{0};
  std::atomic<long> peak_threads_{0};
  std::atomic<long> samples_{0};
  std::thread thread_;
};

// Lines of /proc/self/mountinfo without the two mount ids.
std::set<std::string> MountLines();

// Waits until at least `at_least` marked processes exist (the guest has
// started); false after wait_sec.
bool WaitForMarked(const std::string& marker, size_t at_least, double wait_sec);

// Whole-file read; "" when unreadable.
std::string ReadFile(const std::string& path);
// Hex SHA-256 of a file's content, via python3 (the host's), or "" on error.
std::string Sha256OfFile(const std::string& path);

// Clipped text for failure messages.
std::string Clip(const std::string& s, size_t n = 1500);

}  // namespace sentry::limits

#endif  // SENTRY_TESTS_LIMITS_LIMITS_UTIL_H_
