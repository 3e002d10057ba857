// What a run needs when the kernel gives it no namespaces and the sandbox
// stands on the seccomp wall alone (see syscalls/table_without_namespaces.cc):
//
// - a host uid of the run's own for the guest's processes, so that the kernel's
//   own permission checks (kill, prlimit, sched_setaffinity...) reach only
//   them, and a way to kill every process of that uid at the end, since no pid
//   namespace dies with its init;
// - a backing store on the host (no private tmpfs): a directory only that uid
//   may enter, removed at the end, and swept at the next start if a sentry was
//   killed before it could remove its own.
#ifndef SENTRY_RUN_SECCOMP_ONLY_H_
#define SENTRY_RUN_SECCOMP_ONLY_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"

namespace sentry {

// The guest's host uid (and gid) for a run of the sentry process `sentry_pid`:
// above the namespaced runs' ids, unique among live sentries.
uid_t SeccompOnlyGuestId(pid_t sentry_pid);

// Sends SIGKILL to every process of uid, as uid (never as root), until none is
// left that could still fork. Safe to call from any thread: the signals come
// from a short-lived child process that takes the uid.
void KillEveryProcessOf(uid_t uid);

// Sends SIGKILL to every descendant of root (its children, theirs...) until
// none is alive, then to root: exactly a sandbox's processes when root is
// their subreaper, never another process of the same uid. Each is signalled
// through a pidfd, and only while it is still the child it was listed as.
void KillTreeOf(pid_t root);

// Reaps the children the sentry, as child subreaper, took over from a loader
// that died before them (all killed by then), for up to a second.
void ReapOrphans();

class HostStore final {
 public:
  // Makes the directory, mode 0700, owned by owner, in the first of /dev/shm,
  // $TMPDIR, /tmp and /var/tmp that is writable and allows exec, and mounts
  // a tmpfs of size_bytes on it where the host lets the sentry mount (a
  // container's profile may not: then nothing caps the whole, see capped()).
  // Without root, in a directory of the caller's alone (mode 0700):
  // $XDG_RUNTIME_DIR/sentry, else /dev/shm/sentry-UID.
  static absl::StatusOr<HostStore> Create(uid_t owner, gid_t group, uint64_t size_bytes);
  // Removes the stores of sentries that are no longer running (without root:
  // the caller's own).
  static void SweepStale();

  HostStore() = default;
  HostStore(HostStore&& o) noexcept : path_(std::move(o.path_)), capped_(o.capped_) {
    o.path_.clear();
  }
  HostStore& operator=(HostStore&& o) noexcept;
  ~HostStore() { Remove(); }

  const std::string& path() const { return path_; }
  // Whether a tmpfs of its own caps what the store holds (ENOSPC past it).
  bool capped() const { return capped_; }
  UniqueFd OpenDir() const;
  // Unmounts and removes the directory and all it holds.
  void Remove();

 private:
  std::string path_;
  bool capped_ = false;
};

}  // namespace sentry

#endif  // SENTRY_RUN_SECCOMP_ONLY_H_
