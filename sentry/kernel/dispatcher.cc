#include "sentry/kernel/dispatcher.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/trace/syscall_format.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

// Refusals worth telling the model about: permissions, the network, the
// read-only system. (ENOENT and friends are ordinary program behaviour.)
bool IsDenial(int err) {
  return err == EACCES || err == EPERM || err == ENETUNREACH || err == EROFS ||
         err == EAFNOSUPPORT || err == ECONNREFUSED;
}

// Calls whose handlers do nothing with the guest memory they read but
// resolve it (a path, in the sandbox's own tree, with the caller's
// credentials) before their first write, and change nothing: their reads may
// leave the notification check to that write (NotifMemoryBackend in
// sentry/platform/notify_loop.cc). A handler that creates, removes, renames,
// opens, sends or waits must not be here: a withdrawn call's effect would
// then rest on bytes not proven to be its own. One kind of open is: a
// read-only one (flags in a register: no O_CREAT, O_TRUNC or O_TMPFILE, no
// write access) only resolves its path and opens what it names, and its
// effect, the fd, comes by SECCOMP_IOCTL_NOTIF_ADDFD, which the kernel
// refuses for a withdrawn notification: that check, after every read, proves
// them. What such an open could do before its ADDFD (a FIFO's open, which a
// writer sees; a pipe reopened through /proc) settles first (sys_open.cc).
bool ReadOnlyOpen(uint64_t flags) {
  // O_TMPFILE's own bit (O_TMPFILE includes O_DIRECTORY; a header in this
  // build defines __O_TMPFILE as the whole of O_TMPFILE).
  constexpr uint64_t kTmpfileBit = O_TMPFILE & ~O_DIRECTORY;
  return (flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC | kTmpfileBit));
}

bool DefersReadChecks(int nr, const uint64_t* args) {
  switch (nr) {
    case SYS_open:
      return ReadOnlyOpen(args[1]);
    case SYS_openat:
      return ReadOnlyOpen(args[2]);
    case SYS_stat:
    case SYS_lstat:
    case SYS_fstat:
    case SYS_newfstatat:
    case SYS_statx:
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2:
    case SYS_readlink:
    case SYS_readlinkat:
    case SYS_statfs:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Dispatcher::RecordDenial(SyscallContext& ctx, int nr, const SyscallRow& row, int err,
                              const std::string& described) {
  if (!IsDenial(err) && ctx.hint.empty()) return;
  Kernel& k = ctx.kernel;
  ++k.denial_count;
  if (k.denials.size() >= Kernel::kMaxDenials) return;
  k.denials.push_back({described.empty() ? Describe(ctx, nr) : described, row.name, err, ctx.hint});
}

std::string Dispatcher::Describe(SyscallContext& ctx, int nr) {
  trace::TracedCall call{nr};
  std::copy(std::begin(ctx.args.raw), std::end(ctx.args.raw), call.args);
  return trace::FormatCall(call, &ctx.mem);
}

DispatchResult Dispatcher::Dispatch(SyscallContext& ctx, int nr) {
  ctx.nr = nr;
  std::string described;
  const SyscallRow* row = find_(nr);
  DispatchResult r;
  bool refusal = row && (row->action == Action::kErrno ||
                         (row->action == Action::kNative && row->filter != ArgFilter::kNone));
  if (refusal && IsReportedRefusal(row->err)) {
    // A refusal of the table's own (the filter sends only those here).
    if (row->nr == SYS_ptrace || row->filter == ArgFilter::kPersonality) {
      // strace, gdb and ADDR_NO_RANDOMIZE: the sentry is every task's tracer.
      ctx.hint =
          "ptrace is not available inside the sandbox (the sentry traces every process), so "
          "strace and gdb do not work; run with `sentry run --trace` for a syscall trace, "
          "use Python's faulthandler (python3 -X faulthandler) for a crash's stack, and "
          "valgrind (it needs no ptrace) for a native program's memory errors";
    } else if (row->filter == ArgFilter::kUnixStreamOnly) {
      ctx.hint =
          "this sandbox runs without a network namespace (the host gives none): no network "
          "sockets, and unix sockets of stream or seqpacket type only";
    } else {
      ctx.hint =
          absl::StrCat(row->name, row->filter == ArgFilter::kNone ? "" : " with these arguments",
                       " is not permitted in this sandbox (no privileges over the host's "
                       "kernel, devices, clock or other processes)");
    }
    r.value = -row->err;
    r.refused = true;
    RecordDenial(ctx, nr, *row, row->err, described);
  } else if (!row || row->action != Action::kTrap || !row->handler) {
    r.value = -ENOSYS;
    r.refused = true;
  } else {
    bool defer = ctx.kernel.config().fast_trap && DefersReadChecks(nr, ctx.args.raw);
    if (defer) ctx.mem.DeferReadChecks(true);
    SysResult<uint64_t> res = row->handler(ctx);
    if (defer) {
      ctx.mem.DeferReadChecks(false);  // the trace and the denial log read again, checked
      // What leaves the call besides its reply (a denial's record, the
      // trace) must rest on reads proven the caller's: one check here if no
      // write made it. A withdrawn call then ends as a read that failed its
      // check does: EFAULT, with nobody to receive it. (The census's report
      // settles in NotifyLoop::HandleOne.) An ENOENT, the common error,
      // goes nowhere but the reply and costs no check.
      bool reported = trace_ || (!res.ok() && (IsDenial(res.error()) || !ctx.hint.empty()));
      if (reported && !ctx.mem.Settle()) {
        res = Errno{EFAULT};
        ctx.hint.clear();
      }
    }
    r.value = res.ok() ? static_cast<int64_t>(res.value()) : -res.error();
    r.let_kernel_run = res.ok() && ctx.let_kernel_run;
    if (!res.ok()) RecordDenial(ctx, nr, *row, res.error(), described);
  }
  if (trace_) Trace(ctx, nr, r);
  return r;
}

namespace {

// A late answer that prints the call's result when it is given.
class TracedLateAnswer final : public LateAnswer {
 public:
  TracedLateAnswer(LateAnswer& inner, std::shared_ptr<trace::TraceWriter> trace, pid_t tid, int nr)
      : inner_(inner), trace_(std::move(trace)), tid_(tid), nr_(nr) {}
  SysStatus InstallAt(int host_fd, int guest_fd, bool cloexec) override {
    return inner_.InstallAt(host_fd, guest_fd, cloexec);
  }
  SysResult<int> Install(int host_fd, bool cloexec) override {
    return inner_.Install(host_fd, cloexec);
  }
  bool Wanted() override { return inner_.Wanted(); }
  void Answer(SysResult<uint64_t> result) override {
    if (!inner_.Wanted()) return;  // withdrawn or answered: nothing to print
    trace::TracedCall call{nr_};
    call.done = true;
    call.ret = result.ok() ? static_cast<int64_t>(*result) : -result.error();
    trace_->Resumed(tid_, trace::SyscallName(nr_), trace::FormatReturn(call));
    inner_.Answer(std::move(result));
  }

 private:
  LateAnswer& inner_;
  std::shared_ptr<trace::TraceWriter> trace_;
  pid_t tid_;
  int nr_;
};

}  // namespace

void Dispatcher::Trace(SyscallContext& ctx, int nr, const DispatchResult& r) {
  // The loader's own calls between its filter and the guest's execve (rlimits
  // without namespaces) are the sentry's, not the guest's: strace of the
  // guest would not show them either.
  if (ctx.task.process->exe.empty()) return;
  trace::TracedCall call{nr};
  std::copy(std::begin(ctx.args.raw), std::end(ctx.args.raw), call.args);
  pid_t tid = ctx.task.ns_tid;
  if (ctx.later) {
    trace_->Unfinished(tid, trace::SyscallName(nr), trace::FormatArgs(call, &ctx.mem));
    ctx.later = [work = std::move(ctx.later), trace = trace_, tid, nr](LateAnswer& answer) {
      TracedLateAnswer traced(answer, trace, tid, nr);
      work(traced);
    };
    return;
  }
  call.done = !r.let_kernel_run;  // the kernel's own result is not seen
  call.ret = r.value;
  // A call the kernel runs after the sentry is shown from its registers
  // alone: the kernel reads its memory again, so what the sentry would read
  // need not be what ran (as a census's native calls, NotifyLoop::TraceVerdict).
  trace_->Syscall(tid, call, r.let_kernel_run ? nullptr : &ctx.mem);
}

}  // namespace sentry
