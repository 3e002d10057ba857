// Opening a guest process's own host /proc files where the sentry may not.
//
// With a subordinate range (sentry/run/subid_range.h) the guest runs as a
// host uid of the caller's range, so the files of its /proc/PID that are
// its owner's alone (fd/ and fdinfo/ 0500; environ, auxv, io, syscall 0400)
// are closed to the sentry: the sentry is not their owner and holds no
// CAP_DAC_READ_SEARCH on the host. The kernel's other check on them, ptrace
// access, it passes: it made the sandbox's user namespace. A process in that
// namespace, where it holds every capability and the range's ids are mapped,
// passes both. The opener is such a process: forked from the sentry at the
// first refusal, it takes a /proc/PID directory the sentry opened and a name
// beneath it, and hands the opened file back. Once open, the file reads (and
// fd/ lists) for the sentry itself: those checks are made at open.
//
// What it may open is narrow: one relative name of letters, digits, '_' and
// '/', no "..", no symlink, beneath a procfs directory, read-only; a pipe
// the sentry hands it (checked to be one), anew; or ptmx or a pty of the
// sandbox's devpts (checked to be one), as the guest's ids. It keeps
// CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE, CAP_SYS_PTRACE, CAP_SETUID and
// CAP_SETGID (in the sandbox's namespace only, so over its ids alone) and
// drops every other capability; it has no fd but its
// socket to the sentry and exits when the sentry closes it (or dies). The guest cannot name it: it
// lives in the host's pid namespace, not the sandbox's.
//
// Per fd, no opener is needed: pidfd_getfd (ptrace access, which the
// sentry has as the guest's tracer) copies the guest's open file into the
// sentry, to stat it or read its link (GuestFdCopy).
#ifndef SENTRY_KERNEL_GUEST_PROC_H_
#define SENTRY_KERNEL_GUEST_PROC_H_

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry {

class GuestProcOpener final {
 public:
  // The longest name beneath /proc/PID it opens ("task/4194304/fdinfo/1048575").
  static constexpr size_t kMaxName = 64;

  GuestProcOpener() = default;
  ~GuestProcOpener();  // ends the helper, if one was started
  GuestProcOpener(const GuestProcOpener&) = delete;
  GuestProcOpener& operator=(const GuestProcOpener&) = delete;

  // The sandbox's pid 1 (a process of the caller's in the sandbox's user
  // namespace), whose namespace the helper joins; 0 (the default): no
  // helper, every refusal stands (root and single-id sentries need none).
  void set_namespace_pid(pid_t pid);
  // The same, given the namespace itself: a fork's supervisor has no process
  // in the sandbox's namespace (its child's is nested in it), and a nested
  // one (the guest's own, whose owner it is) is not the helper's to join.
  void set_namespace(UniqueFd userns);

  // openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW) for dir a /proc/PID
  // directory of a guest process: as the sentry itself, and where that is
  // refused (EACCES), through the helper. flags: O_RDONLY, O_DIRECTORY.
  // Empty on failure, with errno set.
  UniqueFd OpenAt(int dir, const std::string& name, int flags = 0);

  // The same, for /proc/<host tid>/<name>.
  UniqueFd Open(pid_t host_tid, const std::string& name, int flags = 0);

  // A guest's pipe or FIFO (the sentry's copy of its fd) opened anew through
  // /proc/self/fd, as Linux's open of /proc/PID/fd/N of a pipe gives: a new
  // open file description. flags: the access mode and O_NONBLOCK (the
  // helper opens with O_NONBLOCK always: it never waits for the other end). The
  // guest's permission is the caller's to check; the pipe of a guest on a
  // range is the range's uid's (0600), so the helper opens it there.
  UniqueFd ReopenFifo(int fifo, int flags);

  // An entry of the sandbox's devpts instance (pts_dir: its O_PATH
  // directory), "ptmx" or a pty's number, opened as the guest ids uid/gid
  // (the sandbox's): a pty that ptmx makes is then theirs, as Linux makes
  // it its opener's (the sentry, on the caller's uid, would make it the
  // namespace root's), and theirs opens for them. Only through the helper,
  // for a guest on a range (flags: access, O_NONBLOCK, O_APPEND; O_NOCTTY
  // always).
  SysResult<UniqueFd> OpenPts(int pts_dir, const std::string& name, int flags, uid_t uid,
                              gid_t gid);

  // Whether a helper may be used (set_namespace_pid was given a pid).
  bool enabled() {
    std::lock_guard<std::mutex> lock(mu_);
    return ns_pid_ != 0 || userns_;
  }

  // How many times a helper was started (0 or 1, but after a failure); tests.
  int helpers_started() const { return started_; }

 private:
  UniqueFd Request(int32_t ask, int32_t flags, const std::string& name, int fd_sent, uid_t uid = 0,
                   gid_t gid = 0);
  bool StartHelperLocked();
  void StopHelperLocked();

  std::mutex mu_;
  pid_t ns_pid_ = 0;
  UniqueFd userns_;      // set_namespace's, before ns_pid_
  UniqueFd sock_;        // to the helper
  UniqueFd pidfd_;       // the helper's
  bool broken_ = false;  // it could not start: refusals stand
  int started_ = 0;
};

// A copy of the guest's fd `fd` (pidfd_getfd on the task's pidfd, O_CLOEXEC):
// the same open file description. Empty with errno (EBADF: no such fd; ESRCH:
// the task is gone).
UniqueFd GuestFdCopy(int task_pidfd, int fd);

// The fd numbers of pid's table below max, in order, listed through opener
// (on a subordinate range the fd/ directory is the guest uid's alone);
// nullopt, with errno, when it cannot be listed: a caller that must see every
// fd (a fork's hand-off) then refuses, never takes it for an empty table.
std::optional<std::vector<int>> GuestFdNumbers(GuestProcOpener& opener, pid_t pid, int max);

}  // namespace sentry

#endif  // SENTRY_KERNEL_GUEST_PROC_H_
