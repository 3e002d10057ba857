// /proc, generated from the task table: sandbox pids only, nothing of the host.
//
// Directories are dynamic (vfs::Node::lookup/names): /proc/<pid> exists for each
// sandbox process, "self" names the caller. Files are generated when opened;
// what comes from the host's /proc/<host pid> (cmdline, stat, status, maps) is
// the guest's own data, with host pids, ids and the tracer rewritten.
//
// The parts (procfs_internal.h): procfs_host.cc reads a process's host /proc
// files; procfs_task.cc rewrites stat, status, wchan, sched, fdinfo, maps;
// procfs_net.cc makes net/ from the sandbox's own sockets; procfs_system.cc
// makes the files of /proc itself (meminfo, stat, vmstat, diskstats...) and
// /proc/sys from the sandbox's limits and processes.
#ifndef SENTRY_KERNEL_PROCFS_H_
#define SENTRY_KERNEL_PROCFS_H_

#include "sentry/kernel/kernel.h"

namespace sentry {

// Makes proc_dir (an empty directory of kernel's VFS) the sandbox's /proc.
void MountProcfs(Kernel& kernel, const vfs::NodeRef& proc_dir);

}  // namespace sentry

#endif  // SENTRY_KERNEL_PROCFS_H_
