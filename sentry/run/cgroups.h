// Cgroups: the sandbox's resource caps, enforced by the host kernel from
// outside the guest (cgroup v1 here: memory, pids, cpu, cpuacct controllers;
// each made under the sentry's own cgroup and removed after the run).
#ifndef SENTRY_RUN_CGROUPS_H_
#define SENTRY_RUN_CGROUPS_H_

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sentry/base/unique_fd.h"

namespace sentry {

struct CgroupLimits {
  uint64_t memory_bytes = 0;  // 0: none
  uint64_t pids = 0;          // 0: none
  double cpus = 0;            // 0: none
  // An OCI bundle's linux.resources.cpu: the CFS period the quota (cpus
  // times the period) is spread over, and the relative weight against the
  // other cgroups of the parent (cpu.shares).
  uint64_t cpu_period_us = 0;  // 0: 100 ms
  uint64_t cpu_shares = 0;     // 0: the kernel's default (1024)
};

class Cgroups final {
 public:
  Cgroups() = default;
  Cgroups(const Cgroups&) = delete;
  Cgroups& operator=(const Cgroups&) = delete;
  ~Cgroups();

  // Makes one cgroup per controller that has a limit (every controller with
  // every_controller, for a sandbox whose limits come later: see SetLimits),
  // and cpuacct for usage. What cannot be made is left out; enforced() says
  // what holds.
  void Create(const std::string& name, const CgroupLimits& limits, bool every_controller = false);
  // Sets the limits of the cgroups made (0: none).
  void SetLimits(const CgroupLimits& limits);
  // The sandbox's pid 1 joins the cgroups itself (see loader.h): opens their
  // `tasks` files for it, in a fixed order of controllers (none for one not
  // made).
  std::array<UniqueFd, 4> OpenJoinFiles();
  // What the loader reported: bit i set, it could not join the i-th of those
  // (that controller is then removed, not enforced).
  void Joined(int refused);
  // Removes the cgroups (once their processes are gone).
  void Remove();
  // Removes what runs whose sentry died (SIGKILL) left: "sentry-PID" cgroups
  // of PIDs that no longer exist. Returns how many are still in use.
  static int SweepStale();
  // SweepStale, at most once per `interval` across the host's runs: the
  // mtime of `stamp` says when the last sweep began, so most runs pay one
  // stat instead of reading every hierarchy (0.1-0.2 ms of a cold run's
  // set-up, as many runs start back to back). A sentry killed outright
  // leaves empty directories only (its sandbox dies with it), swept a
  // little later. Where the stamp cannot be made, every call sweeps.
  static int SweepStaleNowAndThen(const char* stamp = kSweepStamp,
                                  std::chrono::milliseconds interval = kSweepInterval);
  static constexpr const char* kSweepStamp = "/run/sentry/cgroup-sweep";
  static constexpr std::chrono::milliseconds kSweepInterval{250};

  std::vector<std::string> enforced() const;  // "cgroup-memory", "cgroup-pids", ...
  // Whether the cgroup holds a limit of that kind.
  bool has_memory() const { return !memory_.empty() && limits_.memory_bytes; }
  bool has_pids() const { return !pids_.empty() && limits_.pids; }
  bool has_cpu() const { return !cpu_.empty() && limits_.cpus > 0; }
  uint64_t PeakMemoryBytes() const;
  uint64_t CpuNanos() const;
  bool MemoryLimitHit() const;  // the OOM killer acted in the sandbox
  bool PidsLimitHit() const;    // a fork was refused

 private:
  void Drop(std::string* dir);  // a controller that failed: removed, not enforced
  std::array<std::string*, 4> Dirs() { return {&memory_, &pids_, &cpu_, &cpuacct_}; }

  CgroupLimits limits_;
  bool limits_set_ = false;
  std::string memory_, pids_, cpu_, cpuacct_;  // the directories made
};

}  // namespace sentry

#endif  // SENTRY_RUN_CGROUPS_H_
