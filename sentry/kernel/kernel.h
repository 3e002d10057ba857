// Kernel: the sentry's whole model of one sandbox, behind one mutex.
//
// The notification thread (every trapped syscall) and the ptrace thread (process
// lifecycle and exec) both work on it; each holds mu for the whole of one event.
#ifndef SENTRY_KERNEL_KERNEL_H_
#define SENTRY_KERNEL_KERNEL_H_

#include <memory>
#include <mutex>
#include <string>

#include "sentry/kernel/fd_identity.h"
#include "sentry/kernel/task.h"
#include "vfs/vfs.h"

namespace sentry {

struct KernelConfig {
  std::string hostname = "sandbox";
  uint64_t memory_bytes = 0;  // what sysinfo and /proc/meminfo report; 0 = 1 GiB
  int ncpus = 1;
  ino_t net_ns_ino = 0;  // the sandbox's network namespace (its inode in nsfs)
};

class Kernel final {
 public:
  Kernel(std::unique_ptr<vfs::Vfs> vfs, KernelConfig config)
      : vfs_(std::move(vfs)), config_(std::move(config)) {}

  std::mutex& mu() { return mu_; }
  vfs::Vfs& vfs() { return *vfs_; }
  TaskTable& tasks() { return tasks_; }
  FdIdentity& fds() { return fds_; }
  const KernelConfig& config() const { return config_; }

  // The task whose syscall or event is being handled (under mu); /proc's "self".
  Task* current = nullptr;
  pid_t init_host_pid = 0;  // the sandbox's pid 1

 private:
  std::mutex mu_;
  std::unique_ptr<vfs::Vfs> vfs_;
  TaskTable tasks_;
  FdIdentity fds_;
  KernelConfig config_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_KERNEL_H_
