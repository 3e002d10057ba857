// Dispatch: routes one trapped syscall to its handler and makes the guest's
// -errno, the only place that does. With tracing on, logs the call strace-style
// (sentry/trace/).
#ifndef SENTRY_KERNEL_DISPATCHER_H_
#define SENTRY_KERNEL_DISPATCHER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "sentry/kernel/syscall_context.h"
#include "sentry/trace/trace_writer.h"
#include "syscalls/table.h"

namespace sentry {

struct SyscallRow;

struct DispatchResult {
  int64_t value = 0;            // the return value, or -errno
  bool let_kernel_run = false;  // see SyscallContext::let_kernel_run
  bool refused = false;         // the table's own refusal, not a handler's answer
};

class Dispatcher final {
 public:
  // find: the table the guest's filter was built from (FindSyscall, or
  // FindSyscallWithoutNamespaces / FindSyscallWithSignalScope for a sandbox
  // without namespaces).
  explicit Dispatcher(std::shared_ptr<trace::TraceWriter> trace,
                      const SyscallRow* (*find)(int nr) = &FindSyscall)
      : trace_(std::move(trace)), find_(find) {}
  // Before the guest's go (a warm sandbox learns --trace with its command).
  void set_trace(std::shared_ptr<trace::TraceWriter> trace) { trace_ = std::move(trace); }
  const std::shared_ptr<trace::TraceWriter>& trace() const { return trace_; }
  DispatchResult Dispatch(SyscallContext& ctx, int nr);

  // "openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC)": the call as it
  // came in (what it writes is not shown). Strings are read again from guest
  // memory for display only; nothing decided here depends on them.
  static std::string Describe(SyscallContext& ctx, int nr);

  // Lists a refusal in the run's denials (the first Kernel::kMaxDenials):
  // the table's own, a handler's, or the tracer's at a gate (described may
  // be "": then Describe).
  static void RecordDenial(SyscallContext& ctx, int nr, const struct SyscallRow& row, int err,
                           const std::string& described);

 private:
  // Prints the answered call (its outputs read before the reply, while the
  // guest thread still waits), or wraps a late answer to print it when given.
  void Trace(SyscallContext& ctx, int nr, const DispatchResult& r);

  std::shared_ptr<trace::TraceWriter> trace_;
  const SyscallRow* (*find_)(int nr);
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_DISPATCHER_H_
