// Runs of the real sentry binary for the limit suites.
#include "tests/limits/run_outcome.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/util/subprocess.h"

namespace sentry::limits {

std::string Outcome::Describe() const {
  return "exit " + std::to_string(f.exit_code) + " after " + std::to_string(f.wall) +
         "s\nstdout: " + Clip(f.out) + "\nstderr: " + Clip(f.err);
}

std::vector<std::string> MarkedFlags(const std::string& marker, std::vector<std::string> flags) {
  flags.push_back("--env");
  flags.push_back(std::string(kMarkerVar) + "=" + marker);
  return flags;
}

// Starts `sentry run [flags + marker env] -- cmd... marker`.
Child StartMarked(const std::string& marker, const std::vector<std::string>& flags,
                  std::vector<std::string> cmd, const SpawnOptions& options) {
  cmd.push_back(marker);
  return SpawnSentry(MarkedFlags(marker, flags), cmd, options);
}

// Collects a started run; notes (and removes, so the host stays clean) the
// cgroup directories it left.
Outcome Finish(Child& c, const std::string& marker, double timeout_sec) {
  Outcome o;
  o.marker = marker;
  o.sentry_pid = c.pid;
  o.f = Collect(c, timeout_sec);
  o.result = ResultOf(o.f.out);
  o.leaked_cgroups = SentryCgroupDirs(o.sentry_pid);
  RemoveCgroupDirs(o.leaked_cgroups);
  return o;
}

Outcome RunCmd(const std::vector<std::string>& cmd, const std::vector<std::string>& flags,
               double timeout_sec, const SpawnOptions& options) {
  std::string marker = UniqueMarker("limits");
  Child c = StartMarked(marker, flags, cmd, options);
  return Finish(c, marker, timeout_sec);
}

// python3 -c code MARKER, with --json.
Outcome RunPy(const std::string& code, std::vector<std::string> flags, double timeout_sec,
              const SpawnOptions& options) {
  flags.insert(flags.begin(), "--json");
  return RunCmd({kPython, "-c", code}, flags, timeout_sec, options);
}

void ExpectNoLeftovers(const Outcome& o) {
  std::vector<pid_t> left = LeftoverProcesses(o.marker);
  EXPECT_TRUE(left.empty()) << "processes of the run are still alive:\n" << DescribeProcesses(left);
}

ProcessSampler::ProcessSampler(const std::string& marker, pid_t sentry_pid)
    : marker_(marker), sentry_pid_(sentry_pid), thread_([this] { Loop(); }) {}

void ProcessSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ProcessSampler::Loop() {
  while (!stop_) {
    int procs = 0, tasks = 0;
    for (pid_t pid : MarkedProcesses(marker_)) {
      if (pid == sentry_pid_) continue;
      ++procs;
      std::stringstream ss(ReadFile("/proc/" + std::to_string(pid) + "/status"));
      std::string line;
      while (std::getline(ss, line)) {
        if (line.rfind("Threads:", 0) == 0) tasks += std::atoi(line.c_str() + 8);
      }
    }
    max_processes_ = std::max(max_processes_.load(), procs);
    max_tasks_ = std::max(max_tasks_.load(), tasks);
    ++samples_;
    usleep(30 * 1000);
  }
}

HostDir::HostDir(mode_t mode) {
  char tmpl[] = "/tmp/limits-test-XXXXXX";
  path_ = mkdtemp(tmpl);
  chmod(path_.c_str(), mode);
}

HostDir::~HostDir() { sentry::testing::RunProcess({"/bin/rm", "-rf", path_}); }

std::string HostDir::Write(const std::string& name, const std::string& text, mode_t mode) const {
  std::string p = path_ + "/" + name;
  FILE* f = fopen(p.c_str(), "w");
  fwrite(text.data(), 1, text.size(), f);
  fclose(f);
  chmod(p.c_str(), mode);
  return p;
}

std::string Sentry() { return sentry::testing::SentryBinary(); }

}  // namespace sentry::limits
