// Tracer: the sentry as the guest's ptracer, for what seccomp notifications
// cannot serve: process lifecycle (fork, vfork, clone, exec, exit arrive before
// the new task runs, so the task table is always exact) and execve, rewritten at
// its SECCOMP_RET_TRACE stop. Runs on the thread that seized the guest.
#ifndef SENTRY_PLATFORM_TRACER_H_
#define SENTRY_PLATFORM_TRACER_H_

#include <linux/filter.h>
#include <sys/types.h>
#include <sys/user.h>

#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
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
  static int Seize(pid_t pid);
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
  // lets the next `count` clones with the fork's flags of the sandbox's
  // thread ns_tid run, one each; every such clone without a grant fails with
  // EPERM. False if the sandbox has no such thread or count is not 1..100.
  // Safe from any thread (the kernel's lock); a grant dies with its task.
  // WithdrawFork takes the grants not yet used back. Each granted clone's
  // child is entered in Kernel::fork_children and held at its first stop
  // (Task::fork_child): this tracer never resumes it.
  static constexpr int kMaxForkGrant = 100;
  bool GrantFork(pid_t ns_tid, int count = 1);
  void WithdrawFork(pid_t ns_tid);
  // Called at the seccomp(NEW_LISTENER) stop of a task with no re-listen
  // armed, with the task held there, on the tracer's thread: it may arm one
  // (BeginRelisten), which then runs; else the call fails with EPERM.
  void set_on_listener_request(std::function<void(pid_t tid)> f) {
    on_listener_request_ = std::move(f);
  }

  // The re-listen (FORK.md step 2; tracer_relisten.cc): the next seccomp()
  // with SECCOMP_FILTER_FLAG_NEW_LISTENER of thread ns_tid stacks `program`
  // (the supervisor's, written over the buffer the guest's sock_fprog
  // offers, which must hold as many instructions) with `flags`, and the
  // listener goes to `taken`, never to the guest: the tracer takes it at the
  // call's syscall-exit stop (pidfd_getfd) and makes the stopped task close
  // its own copy (an injected close) before it runs an instruction of its
  // own; the guest's call returns 0. `taken` gets an errno instead if the
  // call failed (EFAULT, EINVAL for too small a buffer, the kernel's own) or
  // the task ended. Its caller must hold every other task of the sandbox
  // stopped (the program lies in guest memory until the kernel copies it),
  // and the sandbox's listener closed (the kernel allows one listener per
  // chain). False if the sandbox has no such thread. `taken` runs on the
  // tracer's thread, without the kernel's lock.
  using ListenerTaken = std::function<void(int err, UniqueFd listener)>;
  bool BeginRelisten(pid_t ns_tid, std::vector<sock_filter> program, uint32_t flags,
                     ListenerTaken taken);
  // The hand-off of a granted fork's child to its own supervisor S2
  // (FORK.md step 3; tracer_handoff.cc, S2's side: sentry/run/adopt.h).
  // Such a child is held at its auto-attach stop, never resumed here:
  // HeldForkChildren lists them (their pids as the sandbox names them, in
  // clone order: the pids the forking kernel reports).
  std::vector<pid_t> HeldForkChildren();
  // Kills a held child that will not be handed off (the fork failed); it
  // leaves the task table at its end, as any task.
  void DropForkChild(pid_t child_ns_tid);
  struct ForkHandOff {
    // The sentry's own ends of the guest's stdin, stdout and stderr relay
    // pipes (-1: none): the child's fds on the same pipes are told to S2 by
    // role (0, 1, 2), found by the pipe's identity, never by the guest's word.
    std::array<int, 3> relay_ends = {-1, -1, -1};
    std::vector<std::string> env;  // the parent's environment, as the kernel had it
    int timeout_ms = 5000;         // for S2's "seized"
  };
  // Hands the held child child_ns_tid to S2 over handoff_sock (a
  // SOCK_SEQPACKET socket to S2, borrowed): a header (its pid in the
  // sandbox's numbering, its cwd, the relay fds, env) with a pidfd of the
  // child and a stream socket that then carries the VFS copy
  // (WriteSnapshot); queues SIGSTOP, PTRACE_DETACHes (the child group-stops
  // before its first instruction), writes the copy and waits for S2's
  // "seized". On the tracer's thread, with every task of the parent held
  // stopped (the parent must not SIGCONT the child while nobody traces it)
  // and its listener closed (the child's own must be its chain's only one).
  // The child leaves the task table either way; on any failure it is
  // killed, never left untraced, and the error says why (S2's own reason
  // where S2 refused it).
  absl::Status HandOffForkChild(pid_t child_ns_tid, int handoff_sock, const ForkHandOff& h);
  // The same for the children of one fork ({ns_tid, handoff_sock} each), in
  // three passes so that their S2s seize and set up in parallel: every
  // header sent and child detached, then every copy written, then every
  // "seized" read (h.timeout_ms from the start, and 20 ms more for each
  // later child). One status a child, in order.
  std::vector<absl::Status> HandOffForkChildren(const std::vector<std::pair<pid_t, int>>& children,
                                                const ForkHandOff& h);
  // Why the sentry killed the guest, if it did.
  const std::string& violation() const { return violation_; }

 private:
  void OnNewTask(pid_t parent, pid_t child, int event);
  // HandOffForkChildren's passes (tracer_handoff.cc).
  struct HandOffState;
  void BeginHandOff(pid_t child_ns_tid, const ForkHandOff& h, long timeout_ms, HandOffState* st);
  void FinishHandOff(long timeout_ms, HandOffState* st);
  // A SECCOMP_RET_TRACE stop: an exec, or a call at the fork gate. True if
  // it resumed the task itself.
  bool OnTraceStop(pid_t pid);
  // The re-listen's stops (tracer_relisten.cc).
  struct Relisten {
    std::vector<sock_filter> program;
    uint32_t flags = 0;
    ListenerTaken taken;
    enum Phase { kArmed, kAwaitExit } phase = kArmed;
    uint64_t guest_flags = 0, guest_fprog = 0;  // the call's own arguments, given back
    user_regs_struct after{};                   // the registers the guest resumes with
    UniqueFd listener;
    std::vector<int> held;  // signals held back while the close is injected
  };
  bool RelistenAtEntry(pid_t pid, user_regs_struct& regs);
  bool RelistenOwnsStop(pid_t pid, int status);
  void RelistenDone(pid_t pid, int err);
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
  std::set<pid_t> early_stops_;         // children whose first stop came before the parent's event
  std::map<pid_t, Relisten> relisten_;  // by host tid, under kernel_.mu()
  std::function<void(pid_t)> on_listener_request_;
  std::string violation_;
};

}  // namespace sentry

#endif  // SENTRY_PLATFORM_TRACER_H_
