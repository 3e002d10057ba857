// A sandbox's share of the host's kernel pools (DESIGN.md, "the rule of the
// pools"; the table of pools: tests/security/README.md, "Availability").
//
// The kernel charges what a guest makes natively to a count per user: per
// (user namespace, uid), chained up to the host's namespace where the
// namespace's owner pays (inotify, fanotify, message-queue bytes, queued
// signals), or per host uid (pipe buffers, epoll watches). Each sandbox's
// namespace is made by, and its guest runs as, host ids of its own (see
// sentry/run/id_slots.h), so these counts are the sandbox's; the caps below
// keep each well inside what one host user may hold. Pools the kernel keeps
// for the whole host (AIO events, ptys) get a share: a 64th of the pool.
#ifndef SENTRY_LOADER_POOL_CAPS_H_
#define SENTRY_LOADER_POOL_CAPS_H_

#include <cstdint>

namespace sentry {

// The host-global pools are divided among this many sandboxes.
inline constexpr int kHostPoolShares = 64;

// RLIMIT_MSGQUEUE (bytes of POSIX message queues, counted with the kernel's
// per-queue overhead): 9 queues of 10 x 8 KiB fit in the default 800 KiB; a
// sandbox gets 256 KiB. Set in the process that makes the user namespace
// (the kernel keeps it as the namespace's own ceiling) and in the guest.
inline constexpr uint64_t kSandboxMsgQueueBytes = 256 << 10;
// RLIMIT_SIGPENDING (signals queued and not yet delivered), the same way.
inline constexpr uint64_t kSandboxSigPending = 2048;

// Written by the loader, as the root of the sandbox's user namespace, into
// that namespace's own /proc/sys/user/ (each guest uid's ceiling there).
struct UserNsCap {
  const char* file;  // under /proc/sys/user/
  const char* value;
};
inline constexpr UserNsCap kUserNsCaps[] = {
    {"/proc/sys/user/max_inotify_instances", "32"},
    {"/proc/sys/user/max_inotify_watches", "8192"},
    {"/proc/sys/user/max_fanotify_groups", "8"},
    {"/proc/sys/user/max_fanotify_marks", "8192"},
};

// ptys of the sandbox's devpts instance (max=): Linux leaves 3072 ptys
// (kernel.pty.max 4096 less kernel.pty.reserve 1024) to all instances but
// the host's; a 64th of them.
inline constexpr int kSandboxPtys = 48;

}  // namespace sentry

#endif  // SENTRY_LOADER_POOL_CAPS_H_
