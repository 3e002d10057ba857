#include "sentry/kernel/sysfs.h"

#include <sys/stat.h>

#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace sentry {
namespace {

using vfs::NodeKind;
using vfs::NodeRef;

// As cgroups.cc writes cpu.cfs_period_us: the quota is per 100 ms.
constexpr uint64_t kCpuPeriodUs = 100000;
// What cgroup v1 prints for "no limit" (LONG_MAX rounded down to a page).
constexpr char kV1Unlimited[] = "9223372036854771712";

uint64_t CpuQuotaUs(const KernelConfig& c) {
  return static_cast<uint64_t>(c.cpus * static_cast<double>(kCpuPeriodUs));
}

using Generator = std::function<std::string(const KernelConfig&)>;

// The files of /sys, by path below it.
const std::map<std::string, Generator>& Files() {
  static const auto* files = new std::map<std::string, Generator>{
      // The sandbox's one virtual disk, as /proc/diskstats lists it
      // (procfs_system.cc): no block I/O, its files live in memory.
      {"block/vda/dev", [](const KernelConfig&) { return std::string("254:0\n"); }},
      {"block/vda/size", [](const KernelConfig&) { return std::string("0\n"); }},
      {"block/vda/stat",
       [](const KernelConfig&) {
         return std::string(
             "       0        0        0        0        0        0        0        0"
             "        0        0        0        0        0        0        0        0"
             "        0\n");
       }},
      {"devices/system/cpu/online",
       [](const KernelConfig& c) { return CpuList(c.ShownCpus()) + "\n"; }},
      {"devices/system/cpu/possible",
       [](const KernelConfig& c) { return CpuList(c.ShownCpus()) + "\n"; }},
      {"devices/system/cpu/present",
       [](const KernelConfig& c) { return CpuList(c.ShownCpus()) + "\n"; }},
      {"fs/cgroup/cgroup.controllers",
       [](const KernelConfig&) { return std::string("cpu memory pids\n"); }},
      {"fs/cgroup/cpu.max",
       [](const KernelConfig& c) {
         return absl::StrCat(c.cpus > 0 ? absl::StrCat(CpuQuotaUs(c)) : "max", " ", kCpuPeriodUs,
                             "\n");
       }},
      {"fs/cgroup/cpu.weight", [](const KernelConfig&) { return std::string("100\n"); }},
      {"fs/cgroup/memory.max",
       [](const KernelConfig& c) {
         return c.memory_bytes ? absl::StrCat(c.memory_bytes, "\n") : std::string("max\n");
       }},
      {"fs/cgroup/memory.high", [](const KernelConfig&) { return std::string("max\n"); }},
      {"fs/cgroup/pids.max",
       [](const KernelConfig& c) {
         return c.pids ? absl::StrCat(c.pids, "\n") : std::string("max\n");
       }},
      {"fs/cgroup/memory/memory.limit_in_bytes",
       [](const KernelConfig& c) {
         return c.memory_bytes ? absl::StrCat(c.memory_bytes, "\n")
                               : absl::StrCat(kV1Unlimited, "\n");
       }},
      {"fs/cgroup/cpu/cpu.cfs_quota_us",
       [](const KernelConfig& c) {
         return c.cpus > 0 ? absl::StrCat(CpuQuotaUs(c), "\n") : std::string("-1\n");
       }},
      {"fs/cgroup/cpu/cpu.cfs_period_us",
       [](const KernelConfig&) { return absl::StrCat(kCpuPeriodUs, "\n"); }},
      {"fs/cgroup/cpu/cpu.shares", [](const KernelConfig&) { return std::string("1024\n"); }},
  };
  return *files;
}

// Stable inode numbers, so two stats of one path agree (as procfs.cc's).
uint64_t InoFor(const std::string& key) {
  return (std::hash<std::string>{}(key)&0xffffffffull) | (1ull << 35);
}

class Sysfs final {
 public:
  explicit Sysfs(Kernel& k) : k_(k) {}

  // Every path below /sys that is a directory or a file, as of now (the
  // cpuN directories follow the shown CPUs).
  std::set<std::string> Paths() const {
    std::set<std::string> out;
    for (const auto& [path, gen] : Files()) out.insert(path);
    cpu_set_t cpus = k_.config().ShownCpus();
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &cpus)) out.insert(absl::StrCat("devices/system/cpu/cpu", i, "/"));
    }
    return out;
  }

  // The entries of the directory at dir ("" for /sys), each with whether it
  // is a directory.
  std::map<std::string, bool> Entries(const std::string& dir) const {
    std::map<std::string, bool> out;
    std::string prefix = dir.empty() ? "" : dir + "/";
    for (const std::string& p : Paths()) {
      if (p.compare(0, prefix.size(), prefix) != 0 || p.size() == prefix.size()) continue;
      size_t slash = p.find('/', prefix.size());
      std::string name = p.substr(prefix.size(), slash - prefix.size());
      if (!name.empty()) out[name] = out[name] || slash != std::string::npos;
    }
    return out;
  }

  NodeRef Dir(const std::string& path) {
    NodeRef d = k_.vfs().NewNode(NodeKind::kDir, S_IFDIR | 0555, 0, 0);
    d->attr().ino = InoFor("/sys/" + path);
    d->lookup = [this, path](const std::string& name) { return Child(path, name); };
    d->names = [this, path] {
      std::vector<std::string> names;
      for (const auto& [name, is_dir] : Entries(path)) names.push_back(name);
      return names;
    };
    return d;
  }

  NodeRef Child(const std::string& dir, const std::string& name) {
    auto entries = Entries(dir);
    auto it = entries.find(name);
    if (it == entries.end()) return nullptr;
    std::string path = dir.empty() ? name : dir + "/" + name;
    if (it->second) return Dir(path);
    NodeRef f = k_.vfs().NewNode(NodeKind::kSynthetic, S_IFREG | 0444, 0, 0);
    f->attr().ino = InoFor("/sys/" + path);
    const Generator& gen = Files().at(path);
    f->generate = [this, &gen] { return gen(k_.config()); };
    f->sized = false;
    return f;
  }

 private:
  Kernel& k_;
};

}  // namespace

std::string CpuList(const cpu_set_t& set) {
  std::string out;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (!CPU_ISSET(i, &set)) continue;
    int j = i;
    while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, &set)) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ",", i);
    if (j > i) absl::StrAppend(&out, "-", j);
    i = j;
  }
  return out;
}

std::string SandboxMounts() {
  return "sandbox / tmpfs ro,nosuid,nodev 0 0\n"
         "proc /proc proc rw,nosuid,nodev,noexec 0 0\n"
         "tmpfs /tmp tmpfs rw,nosuid,nodev 0 0\n"
         "sysfs /sys sysfs ro,nosuid,nodev,noexec 0 0\n"
         "cgroup2 /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec 0 0\n";
}

std::string SandboxMountinfo() {
  return "1 0 0:1 / / ro,nosuid,nodev - tmpfs sandbox ro\n"
         "2 1 0:2 / /proc rw,nosuid,nodev,noexec - proc proc rw\n"
         "3 1 0:3 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw\n"
         "4 1 0:4 / /sys ro,nosuid,nodev,noexec - sysfs sysfs ro\n"
         "5 4 0:5 / /sys/fs/cgroup ro,nosuid,nodev,noexec - cgroup2 cgroup2 ro\n";
}

std::string SandboxCgroup() { return "0::/\n"; }

std::string SandboxCgroupControllers() {
  // Hierarchy 0 for each: every controller is on the unified (v2) hierarchy.
  return "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
         "cpu\t0\t1\t1\nmemory\t0\t1\t1\npids\t0\t1\t1\n";
}

void MountSysfs(Kernel& kernel, const vfs::NodeRef& sys_dir) {
  // As MountProcfs: the Sysfs object lives as long as the lambdas that
  // capture it, one sandbox per process at a time.
  static Sysfs* sysfs = nullptr;
  delete sysfs;
  sysfs = new Sysfs(kernel);
  NodeRef root = sysfs->Dir("");
  sys_dir->lookup = root->lookup;
  sys_dir->names = root->names;
}

}  // namespace sentry
