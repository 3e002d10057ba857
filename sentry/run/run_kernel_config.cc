// The kernel's configuration for this run: the sandbox's names, limits and
// ids as the options and the id mode (run_ids.cc) made them.
#include <unistd.h>

#include <algorithm>

#include "sentry/run/run_internal.h"

namespace sentry::run_internal {

KernelConfig Run::KernelConfigOf() const {
  KernelConfig kc;
  kc.hostname = tree_.hostname;
  kc.memory_bytes = o_.memory_bytes;
  kc.cpus = o_.cpus;
  kc.pids = o_.pids;
  kc.host_cpus = HostCpus();
  kc.host_id_base = rootless_ ? geteuid() : host_id_base_;
  kc.user_uid = tree_.uid;
  kc.user_gid = tree_.gid;
  kc.user_host_uid = GuestHostUid();
  kc.user_host_gid = GuestHostGid();
  kc.namespaces = !seccomp_only();
  kc.host_uid_shared = seccomp_only() && rootless_;
  if (range_ && !seccomp_only()) {
    kc.range_uid = subids_.uids.start;
    kc.range_gid = subids_.gids.start;
    kc.range_count = std::min(subids_.uids.count, subids_.gids.count);
  }
  kc.fast_fd_identity = o_.fast_fd_identity;
  kc.fast_trap = o_.fast_trap;
  kc.fast_listings = o_.fast_listings;
  kc.fast_negatives = o_.fast_negatives;
  kc.fast_dir_streams = o_.fast_dir_streams;
  kc.fast_upper = o_.fast_upper;
  kc.fast_fd_records = o_.fast_fd_records;
  kc.fast_upper_files = o_.fast_upper_files;
  return kc;
}

}  // namespace sentry::run_internal
