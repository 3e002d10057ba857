#include "sentry/run/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace sentry {
namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";

bool WriteValue(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  close(fd);
  return ok;
}

std::string ReadValue(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

uint64_t ReadNumber(const std::string& path) {
  uint64_t v = 0;
  std::string s = ReadValue(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return absl::SimpleAtoi(s, &v) ? v : 0;
}

// The sentry's own cgroup in a v1 hierarchy (the line "N:controller:/path").
std::string OwnCgroup(const std::string& controller) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    for (absl::string_view c : absl::StrSplit(parts[1], ','))
      if (c == controller) return parts[2] == "/" ? "" : parts[2];
  }
  return "";
}

// Makes <root>/<controller>/<own cgroup>/<name>; "" when the controller is absent.
std::string MakeDir(const std::string& controller, const std::string& name) {
  std::string base = absl::StrCat(kRoot, "/", controller);
  struct stat st;
  if (stat(absl::StrCat(base, "/cgroup.procs").c_str(), &st) < 0) return "";
  std::string dir = absl::StrCat(base, OwnCgroup(controller), "/", name);
  if (mkdir(dir.c_str(), 0755) < 0 && errno != EEXIST) return "";
  return dir;
}

}  // namespace

Cgroups::~Cgroups() { Remove(); }

void Cgroups::SweepStale() {
  for (const char* controller : {"memory", "pids", "cpu", "cpuacct"}) {
    std::string parent = absl::StrCat(kRoot, "/", controller, OwnCgroup(controller));
    DIR* d = opendir(parent.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      absl::string_view name = e->d_name;
      int pid;
      if (!absl::ConsumePrefix(&name, "sentry-") || !absl::SimpleAtoi(name, &pid)) continue;
      // A live sentry's (its pid may also have been reused by another program).
      if (ReadValue(absl::StrCat("/proc/", pid, "/comm")) == "sentry\n") continue;
      rmdir(absl::StrCat(parent, "/", e->d_name).c_str());  // fails (EBUSY) if still in use
    }
    closedir(d);
  }
}

void Cgroups::Create(const std::string& name, const CgroupLimits& l) {
  if (l.memory_bytes) {
    memory_ = MakeDir("memory", name);
    if (!memory_.empty() &&
        !WriteValue(memory_ + "/memory.limit_in_bytes", std::to_string(l.memory_bytes))) {
      rmdir(memory_.c_str());
      memory_.clear();
    }
    if (!memory_.empty()) {
      // No swap: the cap is on memory itself.
      WriteValue(memory_ + "/memory.memsw.limit_in_bytes", std::to_string(l.memory_bytes));
      WriteValue(memory_ + "/memory.swappiness", "0");
    }
  }
  if (l.pids) {
    pids_ = MakeDir("pids", name);
    if (!pids_.empty() && !WriteValue(pids_ + "/pids.max", std::to_string(l.pids))) {
      rmdir(pids_.c_str());
      pids_.clear();
    }
  }
  if (l.cpus > 0) {
    cpu_ = MakeDir("cpu", name);
    constexpr uint64_t kPeriod = 100000;
    if (!cpu_.empty() && (!WriteValue(cpu_ + "/cpu.cfs_period_us", std::to_string(kPeriod)) ||
                          !WriteValue(cpu_ + "/cpu.cfs_quota_us",
                                      std::to_string(static_cast<uint64_t>(l.cpus * kPeriod))))) {
      rmdir(cpu_.c_str());
      cpu_.clear();
    }
  }
  cpuacct_ = MakeDir("cpuacct", name);
}

void Cgroups::Add(pid_t pid) {
  std::string p = std::to_string(pid);
  for (std::string* dir : {&memory_, &pids_, &cpu_, &cpuacct_}) {
    if (!dir->empty() && !WriteValue(*dir + "/cgroup.procs", p)) {
      rmdir(dir->c_str());
      dir->clear();
    }
  }
}

void Cgroups::Remove() {
  for (std::string* dir : {&memory_, &pids_, &cpu_, &cpuacct_}) {
    if (dir->empty()) continue;
    // The last tasks may still be on their way out: try for a while.
    for (int i = 0; i < 200 && rmdir(dir->c_str()) < 0 && errno == EBUSY; ++i) usleep(1000);
    dir->clear();
  }
}

std::vector<std::string> Cgroups::enforced() const {
  std::vector<std::string> out;
  if (!memory_.empty()) out.push_back("cgroup-memory");
  if (!pids_.empty()) out.push_back("cgroup-pids");
  if (!cpu_.empty()) out.push_back("cgroup-cpu");
  return out;
}

uint64_t Cgroups::PeakMemoryBytes() const {
  return memory_.empty() ? 0 : ReadNumber(memory_ + "/memory.max_usage_in_bytes");
}

uint64_t Cgroups::CpuNanos() const {
  return cpuacct_.empty() ? 0 : ReadNumber(cpuacct_ + "/cpuacct.usage");
}

bool Cgroups::MemoryLimitHit() const {
  if (memory_.empty()) return false;
  for (absl::string_view line : absl::StrSplit(ReadValue(memory_ + "/memory.oom_control"), '\n')) {
    if (absl::ConsumePrefix(&line, "oom_kill ")) return line != "0";
  }
  return false;
}

bool Cgroups::PidsLimitHit() const {
  if (pids_.empty()) return false;
  std::string events = ReadValue(pids_ + "/pids.events");
  return events.find("max 0") == std::string::npos && !events.empty();
}

}  // namespace sentry
