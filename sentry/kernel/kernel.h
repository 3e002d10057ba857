// Kernel: the sentry's whole model of one sandbox, behind one mutex.
//
// The notification thread (every trapped syscall) and the ptrace thread (process
// lifecycle and exec) both work on it; each holds mu for the whole of one event.
#ifndef SENTRY_KERNEL_KERNEL_H_
#define SENTRY_KERNEL_KERNEL_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sentry/kernel/fd_identity.h"
#include "sentry/kernel/task.h"
#include "sentry/net/egress.h"
#include "vfs/vfs.h"

namespace sentry {

// A guest operation the sentry refused, for the run's result (the model reads
// these to learn what the sandbox does not allow).
struct Denial {
  std::string call;  // "connect(3, {AF_INET, 8.8.8.8:53}, 16)"
  std::string syscall;
  int err = 0;
  std::string hint;  // a handler's own explanation; else one is chosen by errno
};

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

  // The first denials of the run (see Denial), and how many there were.
  static constexpr size_t kMaxDenials = 20;
  std::vector<Denial> denials;
  uint64_t denial_count = 0;

  // The task whose syscall or event is being handled (under mu); /proc's "self".
  Task* current = nullptr;
  pid_t init_host_pid = 0;  // the sandbox's pid 1
  // Connections out of the sandbox (--allow-net); null: none may leave.
  std::shared_ptr<net::Egress> egress;

 private:
  std::mutex mu_;
  std::unique_ptr<vfs::Vfs> vfs_;
  TaskTable tasks_;
  FdIdentity fds_;
  KernelConfig config_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_KERNEL_H_
