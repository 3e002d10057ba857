// Runs of the real sentry binary for the limit suites, each tagged with a
// unique marker: as a trailing argument of the guest command (so forked
// children show it in their cmdline) and in the guest's environment through
// --env (so exec'd programs carry it too); the host-side scans look for it in
// /proc/*/cmdline and /proc/*/environ.
#ifndef SENTRY_TESTS_LIMITS_RUN_OUTCOME_H_
#define SENTRY_TESTS_LIMITS_RUN_OUTCOME_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/limits/limits_util.h"
#include "tests/util/json_read.h"

namespace sentry::limits {

inline constexpr uint64_t kMiB = 1 << 20;
inline constexpr const char* kPython = "/usr/bin/python3";
inline constexpr const char* kMarkerVar = "SENTRY_TEST_MARKER";

// One sandboxed run of a guest command and what came of it.
struct Outcome {
  Finished f;
  std::optional<nlohmann::json> result;  // the --json object, if any
  std::string marker;
  pid_t sentry_pid = -1;
  std::vector<std::string> leaked_cgroups;  // sentry-<pid> dirs found after the run

  const nlohmann::json& r() const {
    static const nlohmann::json kNull;
    return result ? *result : kNull;
  }
  std::string Describe() const;
};

std::vector<std::string> MarkedFlags(const std::string& marker, std::vector<std::string> flags);

// Starts `sentry run [flags + marker env] -- cmd... marker`.
Child StartMarked(const std::string& marker, const std::vector<std::string>& flags,
                  std::vector<std::string> cmd, const SpawnOptions& options = {});

// Collects a started run; notes (and removes, so the host stays clean) the
// cgroup directories it left.
Outcome Finish(Child& c, const std::string& marker, double timeout_sec = 120);

Outcome RunCmd(const std::vector<std::string>& cmd, const std::vector<std::string>& flags,
               double timeout_sec = 120, const SpawnOptions& options = {});

// python3 -c code MARKER, with --json.
Outcome RunPy(const std::string& code, std::vector<std::string> flags, double timeout_sec = 120,
              const SpawnOptions& options = {});

// No process carrying the run's marker is alive (after a short grace).
void ExpectNoLeftovers(const Outcome& o);

// Samples, while a run is going, how many host processes carry its marker and
// how many threads they hold (the sentry's own process excluded).
class ProcessSampler {
 public:
  ProcessSampler(const std::string& marker, pid_t sentry_pid);
  ~ProcessSampler() { Stop(); }
  void Stop();
  int max_processes() const { return max_processes_; }
  int max_tasks() const { return max_tasks_; }
  int samples() const { return samples_; }

 private:
  void Loop();
  std::string marker_;
  pid_t sentry_pid_;
  std::atomic<bool> stop_{false};
  std::atomic<int> max_processes_{0}, max_tasks_{0}, samples_{0};
  std::thread thread_;
};

// A temporary host directory, removed with its contents afterwards.
class HostDir {
 public:
  explicit HostDir(mode_t mode = 0700);
  ~HostDir();
  HostDir(const HostDir&) = delete;
  HostDir& operator=(const HostDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes path()/name and returns its path.
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0644) const;

 private:
  std::string path_;
};

std::string Sentry();

}  // namespace sentry::limits

#endif  // SENTRY_TESTS_LIMITS_RUN_OUTCOME_H_
