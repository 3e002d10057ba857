// ReserveFdTable: grows this process's fd table once, while it has one thread.
//
// The kernel grows an fd table by doubling it, and when the table is shared
// (any process with more than one thread) it waits an RCU grace period before
// it frees the old one. The sentry is multi-threaded from its first sandbox
// on and holds a few dozen fds for a small run (host directories, donated
// files, pipes) and hundreds for a large one: measured on this VM, the
// growth past 64 fds stalled the thread that crossed it for 4-7 ms, in the
// middle of a guest's syscall. Grown ahead, before any thread, it never waits.
#ifndef SENTRY_BASE_FD_TABLE_H_
#define SENTRY_BASE_FD_TABLE_H_

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace sentry {

// The soft RLIMIT_NOFILE the sentry raises itself to (at most the hard
// one). Its own fds, not the guest's (which gets its own limit): the VFS
// holds a host fd for each lower directory a guest walks or lists until its
// cache's byte budget (vfs.h kLowerCacheBytes) drops the node, which is
// ~20,000 directories for a walk of /usr; a user's session often starts at
// a soft 1024, and at 4096 an ordinary user's os.walk of /usr/lib failed
// with EMFILE past 4,000 directories.
inline constexpr rlim_t kSentryNofile = 65536;

// Room for `fds` descriptors (at most the soft RLIMIT_NOFILE). Call it where
// the process has one thread: at start, and in a child after fork, whose
// table the kernel sizes anew from the fds it has open.
// A soft limit below kSentryNofile is raised toward the hard one first.
inline void ReserveFdTable(int fds = 4096) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < kSentryNofile &&
      rl.rlim_max > rl.rlim_cur) {
    rlimit raised{std::min<rlim_t>(rl.rlim_max, kSentryNofile), rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    fds = static_cast<int>(std::min<rlim_t>(static_cast<rlim_t>(fds), rl.rlim_cur));
  }
  if (fds <= 64) return;  // the table every process starts with
  int any = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (any < 0) return;
  if (dup2(any, fds - 1) == fds - 1) close(fds - 1);
  close(any);
}

}  // namespace sentry

#endif  // SENTRY_BASE_FD_TABLE_H_
