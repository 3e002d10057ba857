// SyscallContext: everything a handler may touch while answering one syscall.
//
// Handlers see typed arguments, guest memory and the guest's fd table through
// this object only, never a seccomp_notif or ptrace registers (those belong to
// the platform), so they can be tested with fakes.
#ifndef SENTRY_KERNEL_SYSCALL_CONTEXT_H_
#define SENTRY_KERNEL_SYSCALL_CONTEXT_H_

#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>

#include "sentry/abi/guest_memory.h"
#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "sentry/kernel/kernel.h"

namespace sentry {

// The guest's fd table, as the platform lets the sentry reach it.
class GuestFds {
 public:
  virtual ~GuestFds() = default;
  // A host copy of the guest's fd (same open file description); EBADF if none.
  virtual SysResult<UniqueFd> Get(int guest_fd) = 0;
  // Installs host_fd as the guest's lowest free fd; returns its number.
  virtual SysResult<int> Install(int host_fd, bool cloexec) = 0;
  // Whether the guest's fd is the same open file description as the
  // sentry's host_fd (kcmp KCMP_FILE): 0 if it is, 1 if not, a negative
  // errno if that cannot be told (then the caller takes a copy with Get).
  virtual int SameFile(int guest_fd, int host_fd) {
    (void)guest_fd;
    (void)host_fd;
    return -ENOSYS;
  }
};

struct SyscallArgs {
  uint64_t raw[6] = {};
  int Int(int i) const { return static_cast<int>(raw[i]); }
  unsigned Uint(int i) const { return static_cast<unsigned>(raw[i]); }
  int64_t Long(int i) const { return static_cast<int64_t>(raw[i]); }
  uint64_t Ulong(int i) const { return raw[i]; }
  GuestAddr Ptr(int i) const { return GuestAddr(raw[i]); }
};

// The answer to a call finished later on a fiber (one that waits: a connect
// out of the sandbox, a send to a full socket), so the loop that answers every
// other call is never held up. See base/fiber_loop.h: such work waits only
// through WaitPoll/WaitMs.
class LateAnswer {
 public:
  virtual ~LateAnswer() = default;
  // Installs host_fd in the guest as exactly guest_fd (replacing that fd).
  virtual SysStatus InstallAt(int host_fd, int guest_fd, bool cloexec) = 0;
  // Installs host_fd in the guest at its lowest free fd, which is returned.
  virtual SysResult<int> Install(int host_fd, bool cloexec) = 0;
  // Answers the call (a value, or Errno{E...}); at most once.
  virtual void Answer(SysResult<uint64_t> result) = 0;
  // Whether the guest still waits for this answer: false once answered, or
  // once its call was withdrawn (the task was interrupted or is gone). Work
  // that waits long checks it between slices and stops, doing nothing more.
  virtual bool Wanted() = 0;
};
// Set by a handler in SyscallContext::later: run on a fiber, with no lock
// held. It must own everything it uses (the run may end meanwhile).
using LateWork = std::function<void(LateAnswer&)>;

struct SyscallContext {
  Kernel& kernel;
  Task& task;
  GuestMemory& mem;
  GuestFds& fds;
  SyscallArgs args;
  int nr = -1;  // the syscall's number (set by the dispatcher)
  // A handler that sets this answers later: what it returns is ignored.
  LateWork later;
  // A handler's explanation of a refusal, for the run's denied list.
  std::string hint;
  // Set by a handler that only checked register arguments (never guest
  // memory) and found the call may run as it is: the kernel then runs it
  // with exactly those arguments (SECCOMP_USER_NOTIF_FLAG_CONTINUE). Never
  // for a call whose memory the sentry read, nor one whose memory decides
  // what the sentry allows: memory the kernel reads afterwards may only be
  // what the decision does not rest on (fcntl F_OFD_SETLK's struct flock,
  // syscalls/sys_locks.cc: the lock is the guest's own either way).
  bool let_kernel_run = false;

  vfs::Vfs& vfs() { return kernel.vfs(); }
  const vfs::Creds& creds() const { return task.process->creds; }
};

using SyscallHandler = SysResult<uint64_t> (*)(SyscallContext&);

}  // namespace sentry

#endif  // SENTRY_KERNEL_SYSCALL_CONTEXT_H_
