// What the files of /proc (procfs.cc and its procfs_*.cc parts) share: reading
// a guest process's own host /proc files, the sandbox's clock, and the
// generators of the files that are not a process's.
//
// Every generator returns text bounded in size (kMaxProcText) and made from
// the sandbox's own tables or its own processes' host /proc files: never a host
// pid, a host path, or another sandbox's object.
#ifndef SENTRY_KERNEL_PROCFS_INTERNAL_H_
#define SENTRY_KERNEL_PROCFS_INTERNAL_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sentry/base/unique_fd.h"
#include "sentry/kernel/kernel.h"

namespace sentry::procfs {

// The most any generated /proc file holds (a huge process's smaps, a netns's
// socket table): past it the text is cut, as a short read.
inline constexpr size_t kMaxProcText = 16u << 20;

// Stable inode numbers for generated nodes, so two stats of one path agree.
uint64_t InoFor(const std::string& key);

// Reads fd to its end or kMaxProcText.
std::string ReadAllFd(int fd);

// The host /proc directory of a guest process, opened as the sentry itself
// and checked afterwards against a pidfd of one of its tasks, so a host pid
// reused meanwhile is never read. Empty if the process is gone.
UniqueFd OpenHostProcDir(Kernel& k, const Process& p);

// The host file /proc/<p's host pid>/<file> ("statm", "net/tcp"), or ""
// (opened through the kernel's GuestProcOpener where the sentry may not).
std::string HostProcFile(Kernel& k, const Process& p, const char* file);

// A copy of p's fd `fd` (its leader's fd table, as /proc/PID/fd shows):
// the same open file, taken with pidfd_getfd. Empty if there is none.
UniqueFd GuestFdOf(Kernel& k, const Process& p, int fd);

// The sandbox's pid of a host pid written in decimal ("0" for none).
std::string MapHostPid(Kernel& k, const std::string& host);

// The task of p whose state /proc/PID/stat shows (its thread group leader).
const Task* LeaderOf(Kernel& k, const Process& p);

// --- The sandbox's clock (procfs_system.cc) ---
// The sandbox boots when its /proc is mounted: uptime, btime and each
// process's start time count from there, so no reader learns the host's.
void ResetBoot();
// Clock ticks (USER_HZ) of the host's boot-time clock at the sandbox's boot.
uint64_t BootTicks();
double UptimeSeconds();

// --- Files of /proc itself (procfs_system.cc) ---
std::string Meminfo(Kernel& k);
std::string Cpuinfo(Kernel& k);
std::string Stat(Kernel& k);
std::string Uptime();
std::string Vmstat(Kernel& k);
std::string Diskstats();
std::string Swaps();
std::string Interrupts(Kernel& k);
std::string Pressure();
// /proc/sys/<path> ("kernel/random/uuid"), or nullopt if there is none.
std::optional<std::string> SysFile(Kernel& k, const std::string& path);
// The names in /proc/sys/<dir> ("" for /proc/sys), or nullopt if no such dir.
std::optional<std::vector<std::string>> SysDir(const std::string& dir);

// --- A process's net/ (procfs_net.cc) ---
// The files of /proc/PID/net, which /proc/net (a link to self/net) shows.
const std::vector<std::string>& NetFileNames();
// /proc/PID/net/<name> of process p: its network namespace's sockets, if that
// is the sandbox's own, else only the sockets the sandbox's processes hold.
std::string NetFile(Kernel& k, const Process& p, const std::string& name);

// --- Per-process files rewritten for the sandbox (procfs_task.cc) ---
// /proc/PID/stat and status with sandbox pids, ids, start time and state.
// tid (a host tid of p, else 0 for p itself): /proc/PID/task/TID/{stat,status}.
std::string StatOf(Kernel& k, const Process& p, pid_t tid = 0);
std::string StatusOf(Kernel& k, const Process& p, pid_t tid = 0);
std::string WchanOf(Kernel& k, const Process& p);
std::string SchedOf(Kernel& k, const Process& p);
// /proc/PID/maps or smaps (file) with store files under sandbox names.
std::string MapsOf(Kernel& k, const Process& p, const char* file);
// /proc/PID/fdinfo/N: position, flags and the kernel's per-type lines that
// name no host object; "" if p has no fd N.
std::string FdinfoOf(Kernel& k, const Process& p, int fd);

}  // namespace sentry::procfs

#endif  // SENTRY_KERNEL_PROCFS_INTERNAL_H_
