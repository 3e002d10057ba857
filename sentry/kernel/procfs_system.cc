// The files of /proc that are the sandbox's, not a process's: memory, CPU,
// disk, interrupt and pressure figures, and /proc/sys (procfs_internal.h).
//
// Figures that on the host would describe every tenant (host-wide counters,
// the host's disks and interrupts, its boot time) are the sandbox's own: its
// memory cap, its processes' CPU time and memory, a boot at the sandbox's
// start, one virtual disk, no swap.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/kernel/procfs_internal.h"
#include "sentry/kernel/sysfs.h"

namespace sentry::procfs {
namespace {

double Seconds(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9;
}

struct Boot {
  double boottime = 0;  // CLOCK_BOOTTIME, which a task's start time counts in
  double realtime = 0;
  std::string boot_id;
};

Boot& TheBoot() {
  static Boot boot;
  return boot;
}

// From getrandom(2), as the kernel's own (get_random_bytes): each
// std::random_device probes the CPU (CPUID, a trap to the hypervisor here)
// and reads RDRAND 16 times, 20-40 us against 0.4 us on this VM (every run
// makes a boot_id).
std::string RandomUuid() {
  uint8_t b[16];
  if (getrandom(b, sizeof(b), 0) != static_cast<ssize_t>(sizeof(b))) {
    std::random_device rd;  // (a kernel without getrandom)
    for (auto& x : b) x = static_cast<uint8_t>(rd());
  }
  b[6] = (b[6] & 0x0f) | 0x40;  // version 4, as the kernel's generate_random_uuid
  b[8] = (b[8] & 0x3f) | 0x80;
  char out[40];
  snprintf(out, sizeof(out),
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
  return out;
}

uint64_t TotalBytes(Kernel& k) {
  return k.config().memory_bytes ? k.config().memory_bytes : 1ull << 30;
}

// Memory and CPU time of the sandbox's live processes, from their own host
// files (statm's resident pages; stat's utime, stime and their waited-for
// children's), in bytes and clock ticks.
struct Usage {
  uint64_t rss = 0;
  uint64_t user = 0;
  uint64_t system = 0;
};

Usage SandboxUsage(Kernel& k) {
  Usage u;
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (auto& [tgid, p] : k.tasks().Processes()) {
    std::vector<std::string> statm = absl::StrSplit(HostProcFile(k, *p, "statm"), ' ');
    uint64_t pages = 0;
    if (statm.size() > 1 && absl::SimpleAtoi(statm[1], &pages)) u.rss += pages * page;
    std::string stat = HostProcFile(k, *p, "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> f = absl::StrSplit(stat.substr(close + 2), ' ');
    // f[0] is field 3 (state): utime, stime, cutime, cstime are fields 14-17.
    uint64_t v[4] = {};
    for (int i = 0; i < 4 && 11 + i < static_cast<int>(f.size()); ++i) {
      if (!absl::SimpleAtoi(f[11 + i], &v[i])) v[i] = 0;
    }
    u.user += v[0] + v[2];
    u.system += v[1] + v[3];
  }
  return u;
}

int ShownCpuCount(Kernel& k) {
  cpu_set_t shown = k.config().ShownCpus();
  return std::max(1, CPU_COUNT(&shown));
}

}  // namespace

void ResetBoot() {
  Boot& b = TheBoot();
  b.boottime = Seconds(CLOCK_BOOTTIME);
  b.realtime = Seconds(CLOCK_REALTIME);
  b.boot_id = RandomUuid();
}

uint64_t BootTicks() {
  return static_cast<uint64_t>(TheBoot().boottime * static_cast<double>(sysconf(_SC_CLK_TCK)));
}

double UptimeSeconds() { return std::max(0.0, Seconds(CLOCK_BOOTTIME) - TheBoot().boottime); }

std::string Uptime() {
  double up = UptimeSeconds();
  char buf[64];
  snprintf(buf, sizeof(buf), "%.2f %.2f\n", up, up);
  return buf;
}

std::string Meminfo(Kernel& k) {
  uint64_t total = TotalBytes(k) >> 10;
  uint64_t used = std::min(total, SandboxUsage(k).rss >> 10);
  uint64_t free = total - used;
  // The fields psutil.virtual_memory() and procps's free read, in the
  // kernel's order; what the sandbox has no figure for is 0.
  std::string out;
  auto line = [&out](const char* name, uint64_t kb) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%-16s%8llu kB\n", name, static_cast<unsigned long long>(kb));
    out += buf;
  };
  line("MemTotal:", total);
  line("MemFree:", free);
  line("MemAvailable:", free);
  line("Buffers:", 0);
  line("Cached:", 0);
  line("SwapCached:", 0);
  line("Active:", used);
  line("Inactive:", 0);
  line("Active(anon):", used);
  line("Inactive(anon):", 0);
  line("Active(file):", 0);
  line("Inactive(file):", 0);
  line("SwapTotal:", 0);
  line("SwapFree:", 0);
  line("Dirty:", 0);
  line("AnonPages:", used);
  line("Shmem:", 0);
  line("Slab:", 0);
  line("SReclaimable:", 0);
  line("SUnreclaim:", 0);
  line("CommitLimit:", total);
  return out;
}

// The host's, less the processors the sandbox does not show (sysfs.h).
std::string Cpuinfo(Kernel& k) {
  cpu_set_t shown = k.config().ShownCpus();
  std::ifstream f("/proc/cpuinfo", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string out;
  for (const std::string& block : std::vector<std::string>(absl::StrSplit(ss.str(), "\n\n"))) {
    // "processor\t: N" opens each processor's block.
    int cpu = -1;
    if (sscanf(block.c_str(), "processor : %d", &cpu) != 1 || cpu < 0 || cpu >= CPU_SETSIZE ||
        !CPU_ISSET(cpu, &shown)) {
      continue;
    }
    absl::StrAppend(&out, block, "\n\n");
  }
  return out;
}

// The CPU time of the sandbox's processes spread over its CPUs, the rest of
// the time since its boot idle: top's and vmstat's percentages and
// psutil.cpu_percent() are the sandbox's load.
std::string Stat(Kernel& k) {
  cpu_set_t shown = k.config().ShownCpus();
  int ncpu = ShownCpuCount(k);
  Usage u = SandboxUsage(k);
  uint64_t hz = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  uint64_t all = static_cast<uint64_t>(UptimeSeconds() * static_cast<double>(hz)) * ncpu;
  uint64_t idle = all > u.user + u.system ? all - u.user - u.system : 0;
  auto cpu = [](const std::string& name, uint64_t user, uint64_t system, uint64_t idle) {
    return absl::StrCat(name, " ", user, " 0 ", system, " ", idle, " 0 0 0 0 0 0\n");
  };
  std::string out = cpu("cpu ", u.user, u.system, idle);
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &shown)) {
      absl::StrAppend(&out,
                      cpu(absl::StrCat("cpu", i), u.user / ncpu, u.system / ncpu, idle / ncpu));
    }
  }
  absl::StrAppend(&out, "intr 0\nctxt 0\nbtime ", static_cast<uint64_t>(TheBoot().realtime),
                  "\nprocesses ", k.tasks().ProcessCount(), "\nprocs_running 1\nprocs_blocked 0\n",
                  "softirq 0 0 0 0 0 0 0 0 0 0 0\n");
  return out;
}

// The counters procps's vmstat and psutil.swap_memory() read, in the
// kernel's order: free pages from the sandbox's memory, no swap, no paging.
std::string Vmstat(Kernel& k) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t total = TotalBytes(k) / page;
  uint64_t used = std::min(total, SandboxUsage(k).rss / page);
  std::string out = absl::StrCat("nr_free_pages ", total - used, "\nnr_inactive_anon 0\n",
                                 "nr_active_anon ", used, "\n");
  for (const char* name : {"nr_inactive_file",
                           "nr_active_file",
                           "nr_unevictable",
                           "nr_mlock",
                           "nr_anon_pages",
                           "nr_mapped",
                           "nr_file_pages",
                           "nr_dirty",
                           "nr_writeback",
                           "nr_shmem",
                           "nr_slab_reclaimable",
                           "nr_slab_unreclaimable",
                           "nr_page_table_pages",
                           "nr_kernel_stack",
                           "pgpgin",
                           "pgpgout",
                           "pswpin",
                           "pswpout",
                           "pgalloc_normal",
                           "pgfree",
                           "pgactivate",
                           "pgdeactivate",
                           "pgfault",
                           "pgmajfault",
                           "pgrefill",
                           "pgsteal_kswapd",
                           "pgsteal_direct",
                           "pgscan_kswapd",
                           "pgscan_direct",
                           "oom_kill"}) {
    absl::StrAppend(&out, name, " 0\n");
  }
  return out;
}

// One virtual disk, vda, which /sys/block/vda matches (sysfs.cc): the
// sandbox's files live in memory, so it has done no block I/O. The host's
// disks, and their counters (every tenant's I/O), are not shown.
std::string Diskstats() { return " 254       0 vda 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"; }

std::string Swaps() { return "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"; }

// The header of the shown CPUs and the architecture's named rows, all 0: the
// host's device interrupts would count every tenant's I/O.
std::string Interrupts(Kernel& k) {
  cpu_set_t shown = k.config().ShownCpus();
  std::string head = "     ", zeros;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (!CPU_ISSET(i, &shown)) continue;
    char buf[32];
    snprintf(buf, sizeof(buf), "      CPU%-3d", i);
    head += buf;
    zeros += "          0";
  }
  std::string out = head + "\n";
  for (const auto& [name, what] :
       std::vector<std::pair<const char*, const char*>>{{"NMI", "Non-maskable interrupts"},
                                                        {"LOC", "Local timer interrupts"},
                                                        {"RES", "Rescheduling interrupts"},
                                                        {"CAL", "Function call interrupts"},
                                                        {"TLB", "TLB shootdowns"}}) {
    absl::StrAppend(&out, name, ":", zeros, "   ", what, "\n");
  }
  absl::StrAppend(&out, "ERR:          0\nMIS:          0\n");
  return out;
}

// No stall figures of its own: the host's would measure every tenant.
std::string Pressure() {
  return "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
}

// /proc/sys: limits as the kernel would size them for the sandbox's memory
// and process cap, a fresh network namespace's defaults, and the sandbox's
// own boot id.
std::optional<std::string> SysFile(Kernel& k, const std::string& path) {
  const KernelConfig& c = k.config();
  uint64_t mem = TotalBytes(k);
  if (path == "kernel/osrelease" || path == "kernel/ostype") {
    utsname u;
    uname(&u);
    return path == "kernel/ostype" ? std::string("Linux\n") : absl::StrCat(u.release, "\n");
  }
  if (path == "kernel/hostname") return c.hostname + "\n";
  if (path == "kernel/pid_max") return std::string("4194304\n");
  if (path == "kernel/ngroups_max") return std::string("65536\n");
  // fork_init: a thread's stack (16 KiB) times 8 per page of memory.
  if (path == "kernel/threads-max") {
    return absl::StrCat(c.pids ? c.pids : std::max<uint64_t>(mem / (8 * 16384), 20), "\n");
  }
  if (path == "kernel/random/uuid") return RandomUuid();
  if (path == "kernel/random/boot_id") return TheBoot().boot_id;
  // files_maxfiles_init: 10% of memory in KiB, at least NR_FILE.
  if (path == "fs/file-max") return absl::StrCat(std::max<uint64_t>(mem / 1024 / 10, 8192), "\n");
  // inotify_user_setup: 1% of memory per watch's cost, within [8192, 1048576].
  if (path == "fs/inotify/max_user_watches") {
    return absl::StrCat(std::clamp<uint64_t>(mem / 100 / 1080, 8192, 1048576), "\n");
  }
  if (path == "fs/inotify/max_user_instances") return std::string("128\n");
  if (path == "net/core/somaxconn") return std::string("4096\n");
  if (path == "vm/overcommit_memory") return std::string("0\n");
  return std::nullopt;
}

std::optional<std::vector<std::string>> SysDir(const std::string& dir) {
  using V = std::vector<std::string>;
  if (dir.empty()) return V{"fs", "kernel", "net", "vm"};
  if (dir == "kernel") {
    return V{"hostname", "ngroups_max", "osrelease", "ostype", "pid_max", "random", "threads-max"};
  }
  if (dir == "kernel/random") return V{"boot_id", "uuid"};
  if (dir == "fs") return V{"file-max", "inotify"};
  if (dir == "fs/inotify") return V{"max_user_instances", "max_user_watches"};
  if (dir == "net") return V{"core"};
  if (dir == "net/core") return V{"somaxconn"};
  if (dir == "vm") return V{"overcommit_memory"};
  return std::nullopt;
}

}  // namespace sentry::procfs
