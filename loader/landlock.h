// The Landlock wall: the guest's own Landlock domain, made by the loader after
// the guest's ids and capabilities are dropped and before its seccomp filter.
//
// The guest needs no file-system access of its own: the sentry answers every
// path call and donates the fds it opened, which Landlock does not restrict
// (it checks only what a process in the domain opens itself). So the domain
// handles every right the kernel's ABI has and allows only what the kernel
// opens on the guest's behalf:
// - execve: the sentry rewrites the path to where the kernel finds the file
//   (a lower root, or the backing store for an in-memory file), and the
//   kernel opens it and its PT_INTERP as the guest: EXECUTE and READ_FILE
//   beneath exactly those directories;
// - TIOCGPTPEER (native): the kernel opens a pty's slave as the guest:
//   READ_FILE, WRITE_FILE and IOCTL_DEV beneath the sandbox's devpts;
// - mq_open (native where the sandbox has its own ipc namespace): the kernel
//   opens the queue in that namespace's mqueue mount as the guest: READ_FILE
//   and WRITE_FILE beneath its root (see OpenMqueueRoot).
// TCP bind and connect (ABI 4+) are refused outright: the sentry makes both
// on its own copy of the socket. Scopes (ABI 6+) keep signals and abstract
// unix sockets inside the sandbox. Landlock also refuses ptrace of any
// process outside the domain, whatever the ABI.
#ifndef SENTRY_LOADER_LANDLOCK_H_
#define SENTRY_LOADER_LANDLOCK_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sentry {

// The highest ABI whose rights GuestLandlockPlan knows (Linux 6.15).
inline constexpr int kLandlockKnownAbi = 7;

struct LandlockPlan {
  int abi = 0;  // the kernel's; 0: no Landlock wall
  uint64_t handled_fs = 0;
  uint64_t handled_net = 0;  // ABI 4+
  uint64_t scoped = 0;       // ABI 6+
  struct Rule {
    std::string path;  // a directory the guest can open (O_PATH) before its filter
    uint64_t access;
  };
  std::vector<Rule> rules;
};

// The ABI this kernel reports (landlock_create_ruleset with
// LANDLOCK_CREATE_RULESET_VERSION), or 0 where it has none (built without,
// or not enabled at boot). Asked once per process.
int LandlockAbi();

// The wall's name in `walls`, `sentry check` and the log: "landlock-abi7".
std::string LandlockWallName(int abi);

// What the wall holds on a kernel of `abi`, in words (for `sentry check`).
std::string LandlockRightsText(int abi);

// The guest's domain on a kernel of `abi` (0: an empty plan): exec beneath
// exec_roots, ptys beneath pty_root ("" for none), nothing else.
LandlockPlan GuestLandlockPlan(int abi, const std::vector<std::string>& exec_roots,
                               const std::string& pty_root);

// The root of the caller's ipc namespace's mqueue file system (a detached
// mount of it: the same inode as the kernel's own mount, which mq_open uses),
// opened O_CLOEXEC; -1 if it cannot be made (then the guest's mq_open fails
// with EACCES under the domain). Needs CAP_SYS_ADMIN over the namespace: the
// sandbox's pid 1 opens it. Async-signal-safe.
int OpenMqueueRoot();

// Makes the domain and puts the caller in it. Async-signal-safe (raw system
// calls, no allocation); needs no_new_privs. A rule whose path does not exist
// is left out (nothing there to allow); mqueue_root (-1: none, else closed
// here) is OpenMqueueRoot's. Returns 0, or the errno of the step that failed.
int ApplyLandlock(const LandlockPlan& plan, int mqueue_root = -1);

}  // namespace sentry

#endif  // SENTRY_LOADER_LANDLOCK_H_
