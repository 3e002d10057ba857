#include "sentry/run/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sentry/base/log.h"
#include "sentry/base/small_file.h"

namespace sentry {
namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";
constexpr uint64_t kCpuPeriodUs = 100000;

// The CFS period: the kernel takes 1 ms to 1 s.
uint64_t PeriodUs(const CgroupLimits& l) {
  return l.cpu_period_us ? std::clamp<uint64_t>(l.cpu_period_us, 1000, 1000000) : kCpuPeriodUs;
}

bool WriteValue(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  close(fd);
  return ok;
}

std::string ReadValue(const std::string& path) { return ReadFileText(path); }

uint64_t ReadNumber(const std::string& path) {
  uint64_t v = 0;
  std::string s = ReadValue(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return absl::SimpleAtoi(s, &v) ? v : 0;
}

// The sentry's own cgroup in a v1 hierarchy (the line "N:controller:/path").
// /proc/self/cgroup is read once: a read takes the kernel's cgroup locks, and
// a run wanted it eight times (SweepStale and Create, each controller).
std::string OwnCgroup(const std::string& controller) {
  static const std::map<std::string, std::string, std::less<>> own = [] {
    std::map<std::string, std::string, std::less<>> m;
    for (absl::string_view line :
         absl::StrSplit(ReadFileText("/proc/self/cgroup"), '\n', absl::SkipEmpty())) {
      std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3) continue;
      for (absl::string_view c : absl::StrSplit(parts[1], ',')) {
        m.emplace(std::string(c), parts[2] == "/" ? "" : parts[2]);
      }
    }
    return m;
  }();
  auto it = own.find(controller);
  return it == own.end() ? "" : it->second;
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

int Cgroups::SweepStale() {
  int left = 0;
  for (const char* controller : {"memory", "pids", "cpu", "cpuacct"}) {
    std::string parent = absl::StrCat(kRoot, "/", controller, OwnCgroup(controller));
    // A cgroup directory's link count is 2 plus its subdirectories: at 2,
    // there is no sentry-* cgroup, live or stale, to read for.
    struct stat st;
    if (stat(parent.c_str(), &st) == 0 && st.st_nlink == 2) continue;
    DIR* d = opendir(parent.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      absl::string_view name = e->d_name;
      int pid;
      if (!absl::ConsumePrefix(&name, "sentry-") || !absl::SimpleAtoi(name, &pid)) continue;
      // A live sentry's (its pid may also have been reused by another program).
      if (ReadValue(absl::StrCat("/proc/", pid, "/comm")) == "sentry\n") continue;
      // Fails (EBUSY) while the dead run's last tasks are on their way out.
      if (rmdir(absl::StrCat(parent, "/", e->d_name).c_str()) < 0) ++left;
    }
    closedir(d);
  }
  return left;
}

int Cgroups::SweepStaleNowAndThen(const char* stamp, std::chrono::milliseconds interval) {
  struct stat st;
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (stat(stamp, &st) == 0) {
    int64_t age_ms =
        (now.tv_sec - st.st_mtim.tv_sec) * 1000 + (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
    if (age_ms >= 0 && age_ms < interval.count()) return 0;  // (a clock set back: sweep)
  }
  int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    futimens(fd, nullptr);
    close(fd);
  }
  return SweepStale();
}

void Cgroups::Create(const std::string& name, const CgroupLimits& l, bool every_controller) {
  if (l.memory_bytes || every_controller) memory_ = MakeDir("memory", name);
  if (l.pids || every_controller) pids_ = MakeDir("pids", name);
  if (l.cpus > 0 || l.cpu_shares || every_controller) cpu_ = MakeDir("cpu", name);
  cpuacct_ = MakeDir("cpuacct", name);
  if (!memory_.empty()) WriteValue(memory_ + "/memory.swappiness", "0");
  if (!cpu_.empty() && !WriteValue(cpu_ + "/cpu.cfs_period_us", std::to_string(PeriodUs(l)))) {
    Drop(&cpu_);
  }
  SetLimits(l);
}

void Cgroups::SetLimits(const CgroupLimits& l) {
  // Only what changes is written (a warm sandbox's request mostly asks for
  // what it was made with): each write is an open, a write and a close.
  bool fresh = !limits_set_;
  CgroupLimits old = limits_;
  limits_ = l;
  limits_set_ = true;
  if (!memory_.empty() && (fresh || l.memory_bytes != old.memory_bytes)) {
    // No swap: the cap is on memory itself. The kernel wants memory's limit
    // at most memsw's at every step, so the order depends on the direction.
    std::string v = l.memory_bytes ? std::to_string(l.memory_bytes) : "-1";
    std::string limit = memory_ + "/memory.limit_in_bytes";
    std::string memsw = memory_ + "/memory.memsw.limit_in_bytes";
    bool raising = l.memory_bytes == 0 || l.memory_bytes > ReadNumber(limit);
    if (raising) WriteValue(memsw, v);
    if (!WriteValue(limit, v)) Drop(&memory_);
    if (!raising && !memory_.empty()) WriteValue(memsw, v);
  }
  if (!pids_.empty() && (fresh || l.pids != old.pids) &&
      !WriteValue(pids_ + "/pids.max", l.pids ? std::to_string(l.pids) : "max")) {
    Drop(&pids_);
  }
  if (!cpu_.empty() && (fresh || l.cpus != old.cpus)) {
    // At least 1 ms, the kernel's least quota.
    std::string quota =
        l.cpus > 0 ? std::to_string(std::max<uint64_t>(
                         1000, static_cast<uint64_t>(l.cpus * static_cast<double>(PeriodUs(l)))))
                   : "-1";
    if (!WriteValue(cpu_ + "/cpu.cfs_quota_us", quota)) Drop(&cpu_);
  }
  // Written only when asked for (an OCI bundle's), or to undo that.
  bool shares_change = fresh ? l.cpu_shares != 0 : l.cpu_shares != old.cpu_shares;
  if (!cpu_.empty() && shares_change &&
      !WriteValue(cpu_ + "/cpu.shares", std::to_string(l.cpu_shares ? l.cpu_shares : 1024))) {
    Drop(&cpu_);
  }
}

void Cgroups::Drop(std::string* dir) {
  rmdir(dir->c_str());
  dir->clear();
}

std::array<UniqueFd, 4> Cgroups::OpenJoinFiles() {
  std::array<UniqueFd, 4> files;
  std::array<std::string*, 4> dirs = Dirs();
  for (size_t i = 0; i < dirs.size(); ++i) {
    if (dirs[i]->empty()) continue;
    files[i] = UniqueFd(open((*dirs[i] + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
    if (!files[i]) Drop(dirs[i]);
  }
  return files;
}

void Cgroups::Joined(int refused) {
  std::array<std::string*, 4> dirs = Dirs();
  for (size_t i = 0; i < dirs.size(); ++i) {
    if (refused & (1 << i)) Drop(dirs[i]);
  }
}

void Cgroups::Remove() {
  // The last tasks may still be on their way out (a loaded host). Every
  // controller's cgroup is tried in each round, under one deadline: tried one
  // after another, the first (memory) used up its time alone and was left
  // while the next, tried once its tasks were gone, went.
  std::vector<std::string*> left;
  for (std::string* dir : Dirs()) {
    if (!dir->empty()) left.push_back(dir);
  }
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; !left.empty(); ++round) {
    std::erase_if(left, [](std::string* dir) {
      // ENOENT: swept already; any other error than EBUSY will not pass.
      bool done = rmdir(dir->c_str()) == 0 || errno != EBUSY;
      if (done) dir->clear();
      return done;
    });
    auto waited = std::chrono::steady_clock::now() - start;
    if (left.empty() || waited > std::chrono::seconds(2)) break;
    usleep(waited < std::chrono::milliseconds(200) ? 1000 : 20000);
  }
  // Left for a later run's sweep (SweepStale): said, with what holds it.
  for (std::string* dir : left) {
    std::string tasks(absl::StripAsciiWhitespace(ReadValue(*dir + "/tasks")));
    std::replace(tasks.begin(), tasks.end(), '\n', ' ');
    log::Warn(absl::StrCat("cgroup ", *dir, " is still in use after 2 s (tasks: ",
                           tasks.empty() ? "none" : tasks, "): left for a later sweep"));
    dir->clear();
  }
}

std::vector<std::string> Cgroups::enforced() const {
  std::vector<std::string> out;
  if (has_memory()) out.push_back("cgroup-memory");
  if (has_pids()) out.push_back("cgroup-pids");
  if (has_cpu()) out.push_back("cgroup-cpu");
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
