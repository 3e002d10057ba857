// Kernel: the sentry's whole model of one sandbox, behind one mutex.
//
// The notification thread (every trapped syscall) and the ptrace thread (process
// lifecycle and exec) both work on it; each holds mu for the whole of one event.
#ifndef SENTRY_KERNEL_KERNEL_H_
#define SENTRY_KERNEL_KERNEL_H_

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sentry/kernel/colocation.h"
#include "sentry/kernel/fast_meta.h"
#include "sentry/kernel/fd_holds.h"
#include "sentry/kernel/fd_identity.h"
#include "sentry/kernel/fd_sweep.h"
#include "sentry/kernel/guest_proc.h"
#include "sentry/kernel/shown_cpus.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/unix_peers.h"
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
  // The limits /sys and /proc show (sysfs.h): the CPU quota (--cpus; 0: none),
  // the process cap (0: none), and the CPUs the sandbox may run on (none set:
  // the sentry's own affinity when asked).
  double cpus = 0;
  uint64_t pids = 0;
  cpu_set_t host_cpus{};
  cpu_set_t ShownCpus() const { return sentry::ShownCpus(host_cpus, cpus); }
  ino_t net_ns_ino = 0;  // the sandbox's network namespace (its inode in nsfs)
  // false: the sandbox stands on the seccomp wall alone (the kernel gave no
  // namespaces); its sockets are the host's, so only unix ones are made.
  bool namespaces = true;
  // The sandbox's user namespace maps its uid/gid 0 to host_id_base and its
  // user (when not root) to host_id_base + 1; without namespaces the guest
  // runs as user_host_uid. How the host ids of objects the guest made
  // natively (pipes, sockets) read inside.
  uint32_t host_id_base = 0;
  uid_t user_uid = 0;
  gid_t user_gid = 0;
  uid_t user_host_uid = 0;
  gid_t user_host_gid = 0;
  // Without namespaces and without root the guest runs as the caller's own
  // uid, which the caller's other processes share: a uid is then no name of
  // the sandbox's processes (PRIO_USER, IOPRIO_WHO_USER find none).
  bool host_uid_shared = false;
  // A caller's subordinate range (sentry/run/subid_range.h): inside ids
  // 1 .. range_count are host ids range_uid/range_gid onward.
  uid_t range_uid = 0;
  gid_t range_gid = 0;
  uint32_t range_count = 0;
  // Tokens' and lower files' identity by kcmp against a reference the sentry keeps
  // (fd_holds.h); off (--no-fast-fd-identity): every fd is copied.
  bool fast_fd_identity = true;
  // The trap's own host calls trimmed (off: --no-fast-trap): read checks of
  // stat-like calls left to their write (NotifyLoop's memory backend), the
  // CPU share's clock read once per 1 ms of answering or 64 calls.
  bool fast_trap = true;
  // With fast metadata, directory listings published too, for the guest's
  // opendir/readdir (off: --no-fast-listings; see fast_meta_publish.h).
  bool fast_listings = true;
  // With listings, a listing also answers ENOENT for the names absent from
  // it, and a lower directory is listed at a name's first ENOENT (off:
  // --no-fast-negatives; see fast_meta_publish.h).
  bool fast_negatives = true;
  // With listings, the guest library's opendir serves every directory from
  // its own stream: no fstat, and no getdents64 after the one that returned
  // the last record (off: --no-fast-dir-streams; fastmeta/dir.c).
  bool fast_dir_streams = true;
  // With fast metadata, the upper layer's directories and symlinks published
  // too, under a generation of their own (off: --no-fast-upper; see
  // fast_meta_publish.h).
  bool fast_upper = true;
  // With fast metadata, the guest's library records the stat of a lower
  // regular file it opened read-only and answers that fd's fstat (off:
  // --no-fast-fd-records; fastmeta/fdrec.c).
  bool fast_fd_records = true;
  // With upper answers, an upper regular file's answer too, and fd records
  // of it, while no writable description of its store file exists (off:
  // --no-fast-upper-files; fast_meta_publish.h).
  bool fast_upper_files = true;
  uid_t GuestUid(uid_t host) const { return GuestId(host, user_uid, user_host_uid, range_uid); }
  gid_t GuestGid(gid_t host) const { return GuestId(host, user_gid, user_host_gid, range_gid); }

 private:
  uint32_t GuestId(uint32_t host, uint32_t user, uint32_t user_host, uint32_t range) const {
    if (host == user_host) return user;
    if (host == host_id_base) return 0;
    if (range_count != 0 && host >= range && host - range < range_count) return host - range + 1;
    return kOverflowId;
  }
  static constexpr uint32_t kOverflowId = 65534;  // /proc/sys/kernel/overflowuid
};

class Kernel final {
 public:
  Kernel(std::unique_ptr<vfs::Vfs> vfs, KernelConfig config)
      : vfs_(std::move(vfs)), config_(std::move(config)) {
    // Every object a guest task still holds keeps its identity (see FdIdentity).
    fds_.set_held_keys([this] { return GuestHeldKeys(tasks_, proc_opener_); });
    holds_.set_enabled(config_.fast_fd_identity);
  }

  std::mutex& mu() { return mu_; }
  vfs::Vfs& vfs() { return *vfs_; }
  TaskTable& tasks() { return tasks_; }
  FdIdentity& fds() { return fds_; }
  // Who connected the unix sockets the sentry connected for guests (under mu).
  UnixPeers& unix_peers() { return unix_peers_; }
  FdHolds& holds() { return holds_; }
  // The guest processes' own host /proc files (guest_proc.h).
  GuestProcOpener& proc_opener() { return proc_opener_; }
  const KernelConfig& config() const { return config_; }
  // The guest and the notification thread on one CPU at start-up (under mu).
  CoLocation& colocation() { return colocation_; }
  // A warm sandbox learns its memory cap with its command (sentry pool).
  void set_memory_bytes(uint64_t bytes) { config_.memory_bytes = bytes; }
  void set_cpus(double cpus) { config_.cpus = cpus; }
  void set_pids(uint64_t pids) { config_.pids = pids; }
  // The fast-metadata region (fast_meta.h), published for paths beneath
  // these top-level lower roots only; null: off (--no-fast-metadata). Every
  // change the VFS makes to a lower node (or the root) invalidates it.
  void set_fast_meta(std::shared_ptr<FastMeta> fm, std::set<std::string> tops) {
    fast_meta_ = std::move(fm);
    fast_meta_tops_ = std::move(tops);
    FastMeta* raw = fast_meta_.get();
    vfs_->set_on_lower_change(raw ? std::function<void()>([raw] { raw->Invalidate(); }) : nullptr);
    vfs_->set_on_upper_change(
        raw && raw->upper() ? std::function<void()>([raw] { raw->InvalidateUpper(); }) : nullptr);
    tasks_.set_on_gone(raw && raw->upper()
                           ? std::function<void(pid_t)>([raw](pid_t tid) { raw->ForgetCwd(tid); })
                           : nullptr);
  }
  FastMeta* fast_meta() { return fast_meta_.get(); }
  const std::set<std::string>& fast_meta_tops() const { return fast_meta_tops_; }
  // The loader makes the network namespace while the kernel is made.
  void set_net_ns_ino(ino_t ino) { config_.net_ns_ino = ino; }

  // The first denials of the run (see Denial), and how many there were.
  static constexpr size_t kMaxDenials = 20;
  std::vector<Denial> denials;
  uint64_t denial_count = 0;

  // The task whose syscall or event is being handled (under mu); /proc's "self".
  Task* current = nullptr;
  pid_t init_host_pid = 0;  // the sandbox's pid 1
  // Connections out of the sandbox (--allow-net); null: none may leave.
  std::shared_ptr<net::Egress> egress;
  dev_t pts_dev = 0;  // the sandbox's devpts instance, if it has one
  // Every child a granted fork clone made (host pids, in clone order; under
  // mu), alive or not, handed off or not: none is the sandbox's, and a
  // process group is the sandbox's only while none of them is in it
  // (syscalls/sys_pid.cc). At most kMaxForkChildren: a fork past it is refused.
  std::vector<pid_t> fork_children;
  static constexpr size_t kMaxForkChildren = 1600;  // 16 forks deep of 100

 private:
  std::mutex mu_;
  std::unique_ptr<vfs::Vfs> vfs_;
  TaskTable tasks_;
  FdIdentity fds_;
  UnixPeers unix_peers_;
  FdHolds holds_;  // after fds_: its references close first
  CoLocation colocation_;
  KernelConfig config_;
  GuestProcOpener proc_opener_;
  std::shared_ptr<FastMeta> fast_meta_;
  std::set<std::string> fast_meta_tops_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_KERNEL_H_
