// Tracer: the sentry as the guest's ptracer, for what seccomp notifications
// cannot serve: process lifecycle (fork, vfork, clone, exec, exit arrive before
// the new task runs, so the task table is always exact) and execve, rewritten at
// its SECCOMP_RET_TRACE stop. Runs on the thread that seized the guest.
#ifndef SENTRY_PLATFORM_TRACER_H_
#define SENTRY_PLATFORM_TRACER_H_

#include <sys/types.h>
#include <sys/user.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/syscall_event.h"
#include "sentry/trace/trace_writer.h"

namespace sentry {

class Tracer final {
 public:
  Tracer(Kernel& kernel, std::vector<std::string> view_roots,
         std::shared_ptr<trace::TraceWriter> trace)
      : kernel_(kernel), view_roots_(std::move(view_roots)), trace_(std::move(trace)) {}
  // Before the guest's go (a warm sandbox learns --trace with its command).
  // The tracer prints what it sees of the guest's life: execve, clone, fork
  // and vfork (with the child's pid), signals delivered, and each task's end.
  void set_trace(std::shared_ptr<trace::TraceWriter> trace) { trace_ = std::move(trace); }
  // Every exec stop is reported to observer (before the guest's go).
  void set_observer(std::shared_ptr<SyscallObserver> observer) { observer_ = std::move(observer); }

  // Seizes the first guest task (stopped on its go pipe) with every option.
  int Seize(pid_t pid);
  // Handles one waitpid() result for a traced task.
  void OnWaitStatus(pid_t pid, int status);

  bool leader_done() const { return leader_done_; }
  int leader_status() const { return leader_status_; }
  void set_leader(pid_t pid) { leader_ = pid; }
  // Without a mount namespace the kernel resolves an exec's paths (the
  // rewritten one, a script's interpreter, an ELF's PT_INTERP) in the host's
  // tree: at each exec event every file the new image maps must then lie under
  // one of these directories (the lower roots and the store), else the guest
  // is killed before it runs an instruction of it.
  void CheckMappingsUnder(std::vector<std::string> dirs) { mapping_dirs_ = std::move(dirs); }
  // The fork gate (syscalls/fork_gate.h, sentry/session/FORK.md step 1):
  // lets the next clone with the fork's flags of the sandbox's thread ns_tid
  // run, once; every such clone without a grant fails with EPERM. False if
  // the sandbox has no such thread. Safe from any thread (the kernel's lock);
  // a grant dies with its task. WithdrawFork takes a grant not yet used back.
  bool GrantFork(pid_t ns_tid);
  void WithdrawFork(pid_t ns_tid);
  // Why the sentry killed the guest, if it did.
  const std::string& violation() const { return violation_; }

 private:
  void OnNewTask(pid_t parent, pid_t child, int event);
  // A SECCOMP_RET_TRACE stop: an exec, or a call at the fork gate.
  void OnTraceStop(pid_t pid);
  void OnExecStop(pid_t pid, user_regs_struct& regs);
  void OnForkGate(pid_t pid, user_regs_struct& regs);
  // Fails the stopped call with err (it never runs), listed in the run's
  // denials with hint.
  void RefuseAtStop(pid_t pid, user_regs_struct& regs, int err, const char* hint);
  void OnExecEvent(pid_t pid);
  bool MapsOnlyAllowedFiles(pid_t pid) const;
  void Resume(pid_t pid, int sig);
  void TraceExit(pid_t pid, int status);
  void TraceSignal(pid_t pid);
  void TraceNewTask(pid_t parent, pid_t child_ns_tid, int event);

  Kernel& kernel_;
  std::vector<std::string> view_roots_;
  std::vector<std::string> mapping_dirs_;
  std::shared_ptr<trace::TraceWriter> trace_;
  std::shared_ptr<SyscallObserver> observer_;
  pid_t leader_ = 0;
  bool leader_done_ = false;
  int leader_status_ = 0;
  std::set<pid_t> early_stops_;  // children whose first stop came before the parent's event
  std::string violation_;
};

}  // namespace sentry

#endif  // SENTRY_PLATFORM_TRACER_H_
