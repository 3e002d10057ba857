// Spawn: starts the loader in new namespaces and hands the sentry what it
// needs from it: the sandbox's pid 1, the guest's pid and seccomp listener, and
// the backing store's directory.
#ifndef SENTRY_RUN_SPAWN_H_
#define SENTRY_RUN_SPAWN_H_

#include <sched.h>
#include <sys/types.h>

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "loader/loader.h"
#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/id_slots.h"
#include "sentry/run/subid_range.h"

namespace sentry {

// The guests' ids on the host: unprivileged and used by nothing else.
//
//   kHostIdBase + [0, 0x10000)         a namespaced sandbox made by a caller
//                                      that takes no slot (not root)
//   kHostIdBase + 0x10000 + pid        a run without namespaces, one per live
//                                      sentry pid (pid_max <= 2^22: below
//                                      kHostIdBase + 0x410000; seccomp_only.h)
//   kFirstSlotId + k * kIdsPerSlot     root's namespaced sandboxes: slot k of
//                                      kIdSlots, held alone (id_slots.h)
//
// Inside a user namespace uid 0 maps to the block's first id (B), the
// sandbox user to B + 1, nobody/nogroup to B + 2, supplementary groups to
// B + 3 + i; B makes the namespace (its owner, charged for its counts).
inline constexpr uid_t kHostIdBase = 2000000000;
inline constexpr uid_t kFirstSlotId = kHostIdBase + 0x1000000;
inline constexpr uint32_t kIdSlots = 4096;  // up to kHostIdBase + 0x1040000
// nobody and nogroup, mapped to B + 2 (which owns nothing).
inline constexpr uid_t kNobodyId = 65534;
// Supplementary groups a guest may hold (LoaderSpec::groups): each one not
// mapped already maps to B + 3 + i (which own nothing either).
inline constexpr size_t kMaxGuestGroups = 32;
static_assert(3 + kMaxGuestGroups <= kIdsPerSlot);

// A slot of root's sandbox ids (a lock in /run/sentry/ids, else in
// /dev/shm/sentry-ids where /run is not writable), held until destroyed.
absl::StatusOr<IdSlot> TakeSandboxIdSlot();

class Spawned final {
 public:
  // Clones the loader (in new namespaces if spec.namespaces), writes its id
  // maps and lets it build its mount view; a kernel that refuses the
  // namespaces gives FailedPreconditionError. With spec.helper_maps, subids
  // is the range the helpers map (subid_range.h). loader_cpus: where the
  // loader runs from its clone on (else where the caller does): set before
  // the maps wake it, so that it never runs on the caller's CPU, where it
  // would take the CPU from the caller for its network namespace.
  static absl::StatusOr<Spawned> Start(const LoaderSpec& spec, const SubidPlan* subids = nullptr,
                                       const cpu_set_t* loader_cpus = nullptr);
  // Sends the loader the `tasks` files of the sandbox's cgroups (invalid:
  // none), which it joins before it forks anything (see loader.h).
  absl::Status SendCgroups(const std::array<UniqueFd, kMaxLoaderCgroups>& tasks_files);
  // Waits until the loader has made the sandbox's network namespace and
  // brought its loopback up (at once without namespaces); then
  // /proc/<init_pid>/ns/net is the sandbox's, and TakeDnsSocket gives the DNS
  // server's socket, bound there (or why there is none).
  absl::Status AwaitNetns();
  SysResult<UniqueFd> TakeDnsSocket() { return std::move(dns_socket_); }
  // Waits until the mount view is built and the cgroups joined.
  absl::Status AwaitReady();

  // Waits for the guest's filter; returns its host pid and takes its listener.
  absl::Status AwaitGuest();
  // Lets the guest set its rlimits and call execve (the sentry must be
  // tracing it by then).
  absl::Status Go(const GuestLaunch& launch);

  pid_t init_pid() const { return init_pid_; }
  pid_t guest_pid() const { return guest_pid_; }
  UniqueFd TakeListener() { return std::move(listener_); }
  // The backing store in the mount view (none without namespaces).
  UniqueFd TakeStoreDir() { return std::move(store_dir_); }
  // The sandbox's devpts instance (O_PATH), or an invalid fd if it has none.
  UniqueFd TakePtsDir() { return std::move(pts_dir_); }
  // After AwaitGuest, with spec.tty_fds: the master of the guest's terminal.
  UniqueFd TakeTtyMaster() { return std::move(tty_master_); }
  int report_fd() const { return report_.get(); }
  // After AwaitReady, bit i set: the loader could not join the i-th cgroup.
  int cgroups_refused() const { return cgroups_refused_; }

 private:
  absl::StatusOr<LoaderMessage> ReadMessage();

  bool namespaces_ = true;
  pid_t init_pid_ = -1;
  pid_t guest_pid_ = -1;
  int cgroups_refused_ = 0;
  std::array<int, kMaxLoaderCgroups> sent_as_ = {};  // SendCgroups' k-th file: tasks_files[i]
  UniqueFd maps_, report_, go_, listener_, store_dir_, pts_dir_, tty_master_;
  SysResult<UniqueFd> dns_socket_ = Errno{ENOTCONN};
};

}  // namespace sentry

#endif  // SENTRY_RUN_SPAWN_H_
