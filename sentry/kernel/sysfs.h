// /sys, generated from the sandbox's limits: what programs read to size
// themselves, showing the sandbox and never the host.
//
// /sys/devices/system/cpu/{online,possible,present} and cpuN/: the CPUs the
// sandbox shows (ShownCpus), which glibc's get_nprocs (os.cpu_count(),
// sysconf(_SC_NPROCESSORS_ONLN)) reads; sched_getaffinity (sys_sched.cc) and
// /proc/stat, /proc/cpuinfo agree with it.
//
// /sys/fs/cgroup: a cgroup v2 root as a container's own (cgroup namespace)
// looks: memory.max, cpu.max, pids.max, cgroup.controllers, and, for readers
// that hard-code cgroup v1 paths, memory/memory.limit_in_bytes and
// cpu/cpu.cfs_{quota,period}_us with the same limits. /proc/self/cgroup,
// /proc/self/mountinfo and /proc/cgroups (procfs.cc) describe this one
// hierarchy, as JVMs, Go's runtime and .NET expect to find it.
//
// /sys/block/vda: the one virtual disk /proc/diskstats lists (psutil's
// disk_io_counters() counts the devices found in both).
//
// Every file is read-only (0444) and every directory 0555, owned by root.
#ifndef SENTRY_KERNEL_SYSFS_H_
#define SENTRY_KERNEL_SYSFS_H_

#include <sched.h>

#include <string>

#include "sentry/kernel/kernel.h"

namespace sentry {

// A CPU set as the kernel prints one ("0-3", "0,2-5"), without newline.
std::string CpuList(const cpu_set_t& set);

// /proc/PID/mounts, /proc/PID/mountinfo, /proc/PID/cgroup and /proc/cgroups.
std::string SandboxMounts();
std::string SandboxMountinfo();
std::string SandboxCgroup();
std::string SandboxCgroupControllers();

// Makes sys_dir (an empty directory of kernel's VFS) the sandbox's /sys.
void MountSysfs(Kernel& kernel, const vfs::NodeRef& sys_dir);

}  // namespace sentry

#endif  // SENTRY_KERNEL_SYSFS_H_
