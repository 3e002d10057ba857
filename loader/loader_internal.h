// What the loader's files share (loader.cc, mount_view.cc): the state built
// before clone() and the few calls every step makes. Internal to loader/.
#ifndef SENTRY_LOADER_LOADER_INTERNAL_H_
#define SENTRY_LOADER_LOADER_INTERNAL_H_

#include <linux/filter.h>
#include <sched.h>

#include <string>
#include <vector>

#include "loader/loader.h"

// Code that runs between clone() and execve() on the loader's own stack is not
// instrumented in sanitizer builds: ASan cannot follow a cloned stack (and
// would print its warnings on the guest's stderr), and none of it allocates.
#define LOADER_CODE __attribute__((no_sanitize("address", "undefined")))

namespace sentry::loader_internal {

// Where the new root is assembled, in the loader's private mount namespace.
constexpr const char* kNewRoot = "/tmp";

// Everything the child needs, as C strings built before clone().
struct Prepared {
  const LoaderSpec* spec;
  LoaderPipes pipes;
  std::vector<std::string> host_paths;    // "/usr"; "usr" under a rootfs (see StartLoader)
  std::vector<std::string> view_paths;    // "/tmp/usr"
  std::vector<std::string> link_targets;  // "" for directories
  std::vector<int> source_fds;            // the loader's O_PATH fds of host_paths
  std::string store_path;                 // "/tmp/.sentry-store"
  std::string pts_path;                   // "/tmp/.sentry-pts"
  std::string pts_options;                // its devpts options, max= its share
  sock_fprog prog;
  std::vector<sock_filter> census_filter;  // spec->census: what prog points at
  char* guest_stack_top;                   // where the guest runs until its execve (see GuestMain)
  int mqueue_root = -1;                    // for the guest's Landlock domain (see OpenMqueueRoot)
  int cgroups_refused = 0;                 // spec->helper_maps: what the guest reports ready with
  char uid_map[48], gid_map[48];           // spec->single_id: the one line of each map
  char* detach_stack_top;                  // where DetachOldRoot runs (see StartDetach)
  int detach_gate = -1;                    // its pipe's read end, for the guest (AwaitDetach)
  int detach_gate_write = -1;              // the write end, the helper's alone (set once)
  cpu_set_t detach_cpus;                   // the loader's CPUs, where the helper runs
};

// A step's outcome, written to the sentry's report pipe.
LOADER_CODE void Report(const Prepared& p, LoaderStep step, int err, int value = 0,
                        int tty_master = -1);
// Reports errno for step and ends the loader.
LOADER_CODE [[noreturn]] void Fail(const Prepared& p, LoaderStep step);
// n in decimal at out (room for 11 chars and the NUL), async-signal-safe.
LOADER_CODE void FormatDecimal(int n, char* out);

// The guest's mount view (mount_view.cc): the lower layer's directories bound
// read-only under a new tmpfs root, the store and the sandbox's devpts, then
// pivot_root into it.
LOADER_CODE void BuildMountView(Prepared& p);
// The old root's detach and the view's read-only remount (mount_view.cc),
// which BuildMountView leaves to the guest: the detach waits for an RCU
// grace period, 0.1-10 ms here, which the loader's path to its ready and
// the guest's set-up no longer do. StartDetach, the guest's first step,
// starts it on a helper task (CLONE_VM, so no page tables copied;
// CLONE_PARENT, pid 1's child: the guest stays pid 2 and never has it for
// a child); where no task can be made, it detaches itself. AwaitDetach, the
// guest's last step before its execve, waits for the helper: no code but
// the loader's runs beside the old root.
LOADER_CODE void StartDetach(Prepared& p);
LOADER_CODE void AwaitDetach(const Prepared& p);
// The new network namespace's loopback up and the DNS server's socket sent to
// the sentry (mount_view.cc).
LOADER_CODE void ReadyNetns(const Prepared& p);

}  // namespace sentry::loader_internal

#endif  // SENTRY_LOADER_LOADER_INTERNAL_H_
