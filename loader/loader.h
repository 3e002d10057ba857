// The loader: what runs between the sentry's clone() and the guest's execve().
//
// The sentry clones it into new user, mount, pid, net, ipc, uts and cgroup
// namespaces. As pid 1 of the sandbox it builds the guest's mount view (a
// read-only minimal root holding the lower layer's host directories and the
// backing store), names the host "sandbox", brings up loopback, then forks the
// guest process. The guest drops every capability, takes the sandbox uid,
// installs the seccomp filter with a new listener, reports the listener's fd
// number, waits for the sentry's go and calls execve, which the sentry answers
// at its ptrace stop. pid 1 stays behind as the sandbox's reaper.
//
// Without namespaces (spec.namespaces false: the kernel refused them), the
// loader is an ordinary child of the sentry: it builds no mount view, and
// instead of pid 1 it is the guest's child subreaper, which reaps orphans
// until none is left. The guest takes a host uid of the run's own.
//
// Everything after clone() is async-signal-safe: all memory is prepared by
// PrepareLoader() beforehand. Each step reports {step, errno} on failure.
#ifndef SENTRY_LOADER_LOADER_H_
#define SENTRY_LOADER_LOADER_H_

#include <linux/filter.h>
#include <sched.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loader/landlock.h"

namespace sentry {

// Where the sandbox's devpts instance is mounted in the guest's mount view
// (hidden: the sentry's VFS has no such name; it serves /dev/pts from it).
inline constexpr const char* kGuestPtsPath = "/.sentry-pts";
inline constexpr const char* kGuestPtmxPath = "/.sentry-pts/ptmx";

enum class LoaderStep : int {
  kWaitMaps = 1,
  kMountPrivate,
  kMountRoot,
  kBindLower,
  kMountStore,
  kPivotRoot,
  kRemountRoot,
  kHostname,
  kFork,
  kDropCaps,
  kSetIds,
  kNoNewPrivs,
  kSeccomp,
  kWaitGo,
  kExec,
  kStdio,
  kRlimits,
  kWaitCgroups,
  kSubreaper,
  kNetns,
  kLoopback,
  kTerminal,
  kExtraFds,
  kLandlock,
  kPoolCaps,
  kOwner,
  kIdMaps,
  kReady = 100,     // mount view built (value: bit i set: the i-th cgroup refused the loader)
  kListener = 101,  // guest filter installed (value: listener fd in the guest)
};

const char* LoaderStepName(LoaderStep step);

struct LoaderMessage {
  LoaderStep step;
  int err;    // errno of a failed step, 0 for kReady/kListener
  int value;  // kListener: the fd number
  // kListener with spec.tty_fds: the fd number of the guest's pty master,
  // which the sentry takes (pidfd_getfd) and relays; -1 without one.
  int tty_master = -1;
};

struct LoaderSpec {
  // Top-level host entries shown in the mount view at the same path (usr, lib,
  // bin...): a directory is bound read-only, a symlink is copied.
  std::vector<std::string> lower_roots;
  // The host directory they are found in: "" for the host's / (an OCI
  // bundle's rootfs otherwise, whose /usr is bound at /usr).
  std::string lower_source;
  std::string store_options;  // tmpfs options of the backing store ("size=...")
  bool namespaces = true;     // false: no mount view, hostname or loopback to set up
  uid_t uid = 1000;           // inside the user namespace (without one: the host uid)
  gid_t gid = 1000;
  std::vector<gid_t> groups;  // supplementary, inside the user namespace (see spawn.cc)
  // The sandbox's block of host ids (sentry/run/id_slots.h): the namespace's
  // 0 maps to host_ids, and (ns_owner) the user namespace is made by that
  // id, not by the caller, so the kernel charges the namespace's per-user
  // counts to it (see loader/pool_caps.h). 0: the caller's own choice.
  uid_t host_ids = 0;
  uid_t ns_owner = 0;
  // A caller without root and without a subordinate range: the user
  // namespace maps the caller's own uid and gid alone (to uid/gid), with
  // setgroups denied. The loader writes those maps itself (the sentry, not
  // dumpable, may not open a fresh clone's /proc files), keeps the ids it has
  // (the only ones mapped), and the guest makes no setgroups.
  bool single_id = false;
  // A caller without root with a subordinate range (sentry/run/subid_range.h):
  // the sentry maps the ids with newuidmap/newgidmap, which only a process
  // outside the namespace can run, once the loader (dumpable, so its /proc
  // files are the caller's) sends "d" on the maps socket. setgroups stays
  // allowed: the guest takes spec.groups as with root.
  bool helper_maps = false;
  std::string hostname = "sandbox";
  std::vector<sock_filter> filter;
  // The guest gets CensusFilter(filter) instead (sentry run --census; see
  // loader/census_filter.h): the sentry decides each call by `filter`.
  bool census = false;
  std::array<int, 3> stdio = {-1, -1, -1};  // sentry fds the guest gets as 0, 1, 2
  // Bit i set: stdio[i] is a pipe the sentry made (a relay), which the guest
  // makes its own (its uid/gid) before it drops its capabilities, as a root
  // sentry chowns its relays: a guest on a subordinate range then opens
  // /dev/stdout anew, as it could a pipe of its own (with helper_maps only;
  // the sentry, the caller, cannot give a pipe to an id of its range).
  int stdio_owned = 0;
  // Sentry fds the guest gets as 3, 4, ... (an OCI engine's --preserve-fds:
  // systemd's socket activation), the objects themselves, at most
  // kMaxExtraFds. StartLoader keeps the loader's pipes above them.
  std::vector<int> extra_fds;
  // Bit i set: the guest's fd i is the slave of a pty of the sandbox's own
  // devpts, which the guest opens (as its own user) before its filter; it
  // then leads a session of its own with that pty as its controlling
  // terminal, as a login shell does (its own group is then orphaned, as a
  // login shell's: a terminal stop signal to it is discarded; jobs a shell
  // in it makes stop and continue). Without: a process group of its own in
  // pid 1's session, as a shell's job.
  int tty_fds = 0;
  // The CPU the loader moves to before it forks the guest (-1: none): the
  // one the sentry is pinned to, where the guest's first steps answer the
  // sentry without a cross-CPU wake-up (the loader builds its view on
  // another, see CoLocation::Elsewhere).
  int guest_cpu = -1;
  // The guest's Landlock domain (see loader/landlock.h), made after its ids
  // and its terminal, before its filter; abi 0: none.
  LandlockPlan landlock;
  // A test's fault injection (SENTRY_TEST_DETACH_DELAY_MS, at most 2 s):
  // the old root's detach waits this long first, so that a guest which did
  // not wait for it would be seen running beside the old root (see
  // DetachOldRoot in loader/mount_view.cc).
  int detach_delay_ms = 0;
};

inline constexpr size_t kMaxExtraFds = 128;

// What the guest needs to call execve, sent with the go (so that a sandbox can
// be made before its command is known: see sentry/pool/pool.h).
struct GuestLaunch {
  std::string path;  // the program, resolved by the sentry in its VFS
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  struct Rlimit {
    int resource;
    uint64_t value;         // the hard limit
    uint64_t soft = ~0ull;  // the soft one, at most value (~0: value)
    uint64_t Soft() const { return soft < value ? soft : value; }
  };
  std::vector<Rlimit> rlimits;
};

// Bounds on the go message, which the guest reads into static memory: the
// kernel's own default ARG_MAX (a quarter of an 8 MiB stack) for the strings.
inline constexpr size_t kMaxLaunchBytes = 2 << 20;
inline constexpr size_t kMaxLaunchStrings = 1 << 17;  // argv and envp entries together
inline constexpr size_t kMaxLaunchRlimits = 16;

// The go message for `launch`, or an empty string if it exceeds the bounds.
std::string EncodeGuestLaunch(const GuestLaunch& launch);

// The v1 `tasks` files of the sandbox's cgroups, opened by the sentry, come
// with its "c": the loader writes "0" to each before it forks anything, so it
// and all it forks live in them. A process that joins itself that way needs
// no global lock; one moved by another through cgroup.procs takes the
// kernel's threadgroup lock for writing, which waits an RCU grace period:
// 12-15 ms per run on this VM once it has idled, against 0.1 ms. (Sent once
// the loader runs, so that the sentry makes the cgroups while the loader
// builds its mount view.)
inline constexpr int kMaxLoaderCgroups = 4;

struct LoaderPipes {
  // A unix socket. sentry → loader: "m" once the id maps are written, then
  // "c" with up to kMaxLoaderCgroups cgroup files (SCM_RIGHTS). loader →
  // sentry (with namespaces): a NetnsMade, once the loader has made the
  // sandbox's network namespace and brought its loopback up, with the DNS
  // server's socket bound there (SCM_RIGHTS) unless dns_err says why not.
  int maps_read = -1;
  int report_write = -1;  // loader → sentry: LoaderMessage
  int go_read = -1;       // sentry → guest: start
};

struct NetnsMade {
  int32_t tag = 'n';
  int32_t dns_err = 0;  // errno of the DNS socket's bind(); 0: the socket comes along
};

// Where the sandbox's DNS server listens, in its network namespace.
inline constexpr uint16_t kDnsPort = 53;  // on 127.0.0.1

// The namespaces the loader is cloned into. Its network namespace is not
// among them: the loader makes that itself (unshare) once it runs, on
// another CPU, while the sentry makes the cgroups and the tree. A new network
// namespace costs the kernel 0.5 ms here, the most of all; made in the
// clone, it was the sentry's wait.
inline constexpr int kLoaderCloneNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

// Clones the loader; returns its host pid, or -errno.
pid_t StartLoader(const LoaderSpec& spec, const LoaderPipes& pipes, int clone_flags);

}  // namespace sentry

#endif  // SENTRY_LOADER_LOADER_H_
