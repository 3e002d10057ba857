// flock, and fcntl's F_OFD_SETLK, F_OFD_SETLKW and F_SETLEASE: the calls
// that put a lock or a lease on an open file description.
//
// The sentry keeps references to read-only descriptions of lower files
// (sentry/kernel/fd_holds.h), which outlive the guest's close of them. A
// lock held by such a description would outlive the close too, and the
// guest would see it (the next opener's LOCK_NB fails). So these calls trap
// (the seccomp filter picks fcntl's by its cmd, a register), and before the
// kernel takes the lock the sentry lets go of its reference to that file
// and never holds one again (FdHolds::Refuse).
//
// Then the kernel runs the call as it is (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
// DESIGN.md forbids that for a call whose arguments the sentry read from
// guest memory; this handler reads none: its decision rests on the
// registers (the fd, the cmd or op) and the sentry's own state. What the
// kernel then reads (F_OFD_SETLK's struct flock) plays no part in it. The
// kernel's own answer is the call's: locks on files the guest holds, with
// their blocking waits (F_OFD_SETLKW, flock without LOCK_NB) in the guest's
// thread, not the sentry's. A guest that swaps the fd under a racing dup2
// between this check and the kernel's can put a lock on another held
// description: that lock is its own, on a file it may read, and lasts until
// the sentry's sweep finds the description closed (fd_holds.h), at most the
// sandbox's life: it reaches nothing the guest could not lock anyway.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <optional>

#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// Whether st's object is a lower file's (shared: fd_identity.h) or has a
// reference held for it whatever it is registered as now. Not a token (a
// directory's, an O_PATH stand-in): an inode no other description shares,
// so a lock on it conflicts with nothing and its reference stays.
bool Refusable(SyscallContext& ctx, const struct stat& st) {
  const OpenObject* object = ctx.kernel.fds().Find(st);
  if (object && object->holdable && !object->shared) return false;
  return (object && object->shared) || ctx.kernel.holds().OfObject(st).has_value();
}

// The held reference to the object behind the guest's fd goes, and the
// object is never held again.
void RefuseHold(SyscallContext& ctx, int fd) {
  FdHolds& holds = ctx.kernel.holds();
  if (!holds.kept_shared()) return;  // only lower files need it: none was held
  // The hinted reference, when kcmp says it is this fd's description: one call.
  if (std::optional<FdHolds::Held> held = holds.Hinted(ctx.task.process->tgid, fd)) {
    if (ctx.fds.SameFile(fd, held->fd) == 0) {
      if (Refusable(ctx, held->st)) holds.Refuse(held->st);
      return;
    }
  }
  // Another description of a held object (or none): its identity from a copy.
  SysResult<UniqueFd> copy = ctx.fds.Get(fd);
  if (!copy.ok()) return;  // EBADF: the kernel says so
  struct stat st;
  if (fstat(copy->get(), &st) == 0 && Refusable(ctx, st)) holds.Refuse(st);
}

SysResult<uint64_t> KernelRuns(SyscallContext& ctx) {
  ctx.let_kernel_run = true;
  return 0;
}

}  // namespace

// flock(fd, op). An unlock takes nothing: it runs at once.
SysResult<uint64_t> Flock(SyscallContext& ctx) {
  if (!(ctx.args.Int(1) & LOCK_UN)) RefuseHold(ctx, ctx.args.Int(0));
  return KernelRuns(ctx);
}

// fcntl(fd, cmd, arg), for the cmds the filter traps (F_OFD_SETLK,
// F_OFD_SETLKW, F_SETLEASE); any other cmd that reaches here runs as is,
// but F_SETOWN and F_SETOWN_EX.
SysResult<uint64_t> FcntlLock(SyscallContext& ctx) {
  int cmd = ctx.args.Int(1);
  if (cmd == F_SETOWN || cmd == F_SETOWN_EX) {
    // Only the table without a pid namespace sends them here: its filter
    // refuses them (EPERM, a refusal the run lists, so it comes as a trap).
    // The owner's SIGIO could reach a host process of the guest's uid.
    ctx.hint =
        "fcntl with these arguments is not permitted in this sandbox (no pid namespace: "
        "F_SETOWN's signal could reach a host process)";
    return Errno{EPERM};
  }
  bool takes = cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW ||
               (cmd == F_SETLEASE && ctx.args.Int(2) != F_UNLCK);
  if (takes) RefuseHold(ctx, ctx.args.Int(0));
  return KernelRuns(ctx);
}

}  // namespace sentry::sys
