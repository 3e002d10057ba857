// A session fork in the parent's supervisor (sentry/session/FORK.md, step 2),
// a run's (S1) or a forked child's (S2: a fork of a fork): the control
// socket's requests, and the parent's re-listen. Everything here
// runs on the tracer's thread (Supervise's loop, and the tracer's hook at the
// forking thread's seccomp(NEW_LISTENER) stop), so no task is resumed behind
// its back.
//
// The re-listen, in order:
//   0. the NotifyLoop stops (a call it has received is answered first);
//   1. the forking thread T waits at its seccomp stop; every other task of
//      the sandbox is interrupted (PTRACE_INTERRUPT) and waited for: a call
//      of one waiting in the old listener L1 leaves it with -ERESTARTSYS and
//      restarts when the task resumes, then under L2 (the sentry's late
//      reply to it fails with ENOENT: its fiber ends at its next check). A
//      fork's child waits at its first stop, never resumed here;
//   2. nothing may keep the old table's native kill: no process but T's
//      (and the children) may be left; the guest's sock_fprog must take the
//      program; every thread of T's process must have T's filter depth
//      (TSYNC's condition, the one a guest can break on purpose);
//   3. L1 closes once no late call holds a copy (a chain holds one
//      listener: the kernel refuses a second);
//   4. the tracer's BeginRelisten writes the after-fork program over the
//      guest's buffer, with NEW_LISTENER|TSYNC|TSYNC_ESRCH, and takes L2;
//   5. a new NotifyLoop answers L2 with the after-fork table; each child is
//      handed to its supervisor (fork_handoff.h) or killed; every task
//      resumes.
// A refusal before L1 closes leaves the parent as it was (its call fails
// with EPERM, the children are killed). A failure after it (the kernel's
// own refusal of the new filter) leaves a parent nobody can answer: the
// sandbox ends, saying why.
#include "sentry/run/fork_parent.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "loader/filter.h"
#include "sentry/abi/guest_memory.h"
#include "sentry/base/log.h"
#include "sentry/base/timeline.h"
#include "sentry/run/fork_control.h"
#include "sentry/run/fork_handoff.h"
#include "syscalls/table.h"

namespace sentry::run_internal {
namespace {

constexpr auto kQuiesceLimit = std::chrono::seconds(2);
// A late call (on a fiber) looks whether its caller still waits at least
// every 100 ms (syscalls/socket_common.cc): it lets L1's copy go by then.
constexpr auto kLateCopiesLimit = std::chrono::seconds(1);

// The number of seccomp filters in a task's chain, or -1.
int SeccompDepth(pid_t tid) {
  std::ifstream f("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Seccomp_filters:", 0) == 0) return std::atoi(line.c_str() + 16);
  }
  return -1;
}

const std::vector<sock_filter>& AfterForkProgram() {
  static const std::vector<sock_filter> program = BuildSeccompFilter(SyscallTableAfterFork());
  return program;
}

// The guest's sock_fprog, as tracer_relisten.cc reads it.
struct OfferedFprog {
  uint16_t len;
  uint16_t pad[3];
  uint64_t filter;
};

// Whether the stopped task's seccomp call offers a buffer the program fits
// (read and written back as it is: every other task is stopped, so nothing
// changes it before the tracer writes the program there).
std::string CheckOffer(pid_t pid, size_t insns) {
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) < 0) return "the forking thread is gone";
  ProcessMemoryBackend backend(pid);
  GuestMemory mem(backend);
  auto fprog = mem.CopyIn<OfferedFprog>(GuestAddr(regs.rdx));
  if (!fprog.ok()) return "the re-listen's sock_fprog cannot be read";
  if (fprog->len < insns) {
    return absl::StrCat("the re-listen offers room for ", fprog->len,
                        " instructions; the program has ", insns, " (offer BPF_MAXINSNS)");
  }
  std::vector<sock_filter> room(insns);
  size_t bytes = insns * sizeof(sock_filter);
  if (!mem.CopyIn(GuestAddr(fprog->filter), room.data(), bytes).ok() ||
      !mem.CopyOut(GuestAddr(fprog->filter), room.data(), bytes).ok()) {
    return "the re-listen's filter buffer cannot be written";
  }
  return "";
}

bool IsStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// The sandbox's processes besides the forking thread's and the fork's held
// children (their pids as the sandbox names them): a fork copies one
// process, and another would keep the old table's native kill. Under the
// kernel's mutex.
std::vector<pid_t> OtherProcesses(Kernel& kernel, const Task& forking) {
  std::vector<pid_t> others;
  for (const auto& [tgid, process] : kernel.tasks().Processes()) {
    if (tgid == forking.process->tgid) continue;
    bool child = false;
    for (const Task* task : kernel.tasks().TasksOf(process.get())) child |= task->fork_child;
    if (!child) others.push_back(process->ns_pid);
  }
  return others;
}

}  // namespace

void ForkParent::OnControlMessage() {
  ReceivedRequest rr = ReceiveControlRequest(h_.control_fd);
  if (rr.eof) {
    control_open_ = false;  // the server is gone: nothing more to prepare
    return;
  }
  if (rr.none) return;
  if (!rr.ok) {
    SendControlReply(h_.control_fd, ControlKind::kReply, rr.request.id, EINVAL, rr.why);
    return;
  }
  const ControlRequest& req = rr.request;
  if (static_cast<ControlOp>(req.op) == ControlOp::kForkCancel) {
    if (!fork_.active) {
      SendControlReply(h_.control_fd, ControlKind::kReply, req.id, ENOENT, "no fork is prepared");
      return;
    }
    h_.tracer.WithdrawFork(fork_.thread);
    KillForkChildren(ForkChildrenSince(fork_.first_child), "the fork was cancelled");
    fork_ = ForkPrepare{};
    SendControlReply(h_.control_fd, ControlKind::kReply, req.id, 0, "");
    return;
  }
  timeline::Mark("s1.prepare");
  std::string why;
  int err = PrepareFork(req, std::move(rr.fds), &why);
  SendControlReply(h_.control_fd, ControlKind::kReply, req.id, err, why);
}

int ForkParent::PrepareFork(const ControlRequest& req, std::vector<UniqueFd> handoffs,
                            std::string* why) {
  if (!h_.unsupported.empty()) {
    *why = h_.unsupported;
    return EOPNOTSUPP;
  }
  if (fork_.active || relisten_busy_) {
    *why = "a fork is already prepared (one at a time)";
    return EBUSY;
  }
  pid_t host_tid = 0;
  size_t first_child = 0;
  {
    std::lock_guard<std::mutex> lock(h_.kernel.mu());
    const Task* t = h_.kernel.tasks().FindByNsTid(req.thread);
    if (!t || t->fork_child) {
      *why = absl::StrCat("the sandbox has no thread ", req.thread);
      return ESRCH;
    }
    host_tid = t->tid;
    std::vector<pid_t> others = OtherProcesses(h_.kernel, *t);
    if (!others.empty()) {
      *why = absl::StrCat("the sandbox holds processes besides the forking one (pids ",
                          absl::StrJoin(others, ", "), "): a fork copies one process");
      return EBUSY;
    }
    if (h_.kernel.fork_children.size() + req.count > Kernel::kMaxForkChildren) {
      *why = "this sandbox has made as many fork children as it may";
      return EAGAIN;
    }
    first_child = h_.kernel.fork_children.size();
  }
  int depth = SeccompDepth(host_tid);
  if (depth < 0 || depth >= kMaxFilterDepth) {
    *why = absl::StrCat("the sandbox's seccomp filter chain is ", depth, " deep; a fork adds one, ",
                        "and ", kMaxFilterDepth, " is the most (fork depth)");
    return ELOOP;
  }
  if (!h_.tracer.GrantFork(req.thread, static_cast<int>(req.count))) {
    *why = absl::StrCat("the sandbox has no thread ", req.thread);
    return ESRCH;
  }
  fork_ = ForkPrepare{};
  fork_.active = true;
  fork_.id = req.id;
  fork_.thread = req.thread;
  fork_.count = req.count;
  fork_.handoffs = std::move(handoffs);
  fork_.first_child = first_child;
  return 0;
}

std::vector<pid_t> ForkParent::ForkChildrenSince(size_t first) {
  std::lock_guard<std::mutex> lock(h_.kernel.mu());
  const std::vector<pid_t>& all = h_.kernel.fork_children;
  if (first >= all.size()) return {};
  return std::vector<pid_t>(all.begin() + static_cast<long>(first), all.end());
}

void ForkParent::KillForkChildren(const std::vector<pid_t>& children, const std::string& why) {
  for (pid_t child : children) {
    bool ours;
    {
      std::lock_guard<std::mutex> lock(h_.kernel.mu());
      ours = h_.kernel.tasks().Find(child) != nullptr;
    }
    if (!ours) continue;  // gone, or handed off
    kill(child, SIGKILL);
    log::Notice(absl::StrCat("notice: the fork's child (host pid ", child, ") was killed: ", why),
                log::Level::kWarn);
  }
}

void ForkParent::OnListenerRequest(pid_t pid) {
  if (!fork_.active || relisten_busy_) return;  // no prepare (or a racing thread): EPERM
  pid_t ns_tid = 0;
  {
    std::lock_guard<std::mutex> lock(h_.kernel.mu());
    if (const Task* t = h_.kernel.tasks().Find(pid)) ns_tid = t->ns_tid;
  }
  if (ns_tid != fork_.thread) return;  // not the thread the fork was prepared for: EPERM
  timeline::Mark("s1.relisten.request");
  // The prepare is used now, whatever follows: its grants not used are
  // withdrawn, and its children go to their supervisors or die.
  ForkPrepare prepared = std::move(fork_);
  fork_ = ForkPrepare{};
  h_.tracer.WithdrawFork(prepared.thread);
  relisten_busy_ = true;
  // The loop first: a call it has received it answers before it stops, so
  // no call is interrupted half-done by the sentry (its effect made, its
  // answer lost, then made again when it restarts). Those not received yet
  // stay queued in L1 until the interrupt withdraws them.
  h_.loop->Stop();
  // Its own copy of L1 for late calls goes with it; each late call's goes
  // when its work sees its call withdrawn (CloseOldListener).
  std::weak_ptr<Unotify> late = h_.loop->late_listener();
  h_.loop.reset();
  std::string why = QuiesceAllBut(pid);
  timeline::Mark("s1.quiesced");
  if (why.empty()) why = CheckRelistenable(pid);
  timeline::Mark("s1.checked");
  if (why.empty()) why = CloseOldListener(late);
  timeline::Mark("s1.l1.closed");
  if (!why.empty()) {
    if (!h_.loop && h_.unotify) h_.start_loop();  // L1 serves on
    KillForkChildren(ForkChildrenSince(prepared.first_child), why);
    ResumeQuiesced();
    relisten_busy_ = false;
    log::Notice(absl::StrCat("notice: a fork's re-listen was refused: ", why), log::Level::kWarn);
    if (control_open_)
      SendControlReply(h_.control_fd, ControlKind::kRelistened, prepared.id, EPERM, why);
    return;  // the tracer fails the call with EPERM
  }
  relisten_ = std::move(prepared);
  relisten_parent_ = pid;
  constexpr uint32_t kFlags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC |
                              SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  bool armed = h_.tracer.BeginRelisten(
      ns_tid, AfterForkProgram(), kFlags,
      [this](int err, UniqueFd listener) { OnRelistenTaken(err, std::move(listener)); });
  if (!armed) OnRelistenTaken(ESRCH, UniqueFd());
}

std::string ForkParent::QuiesceAllBut(pid_t keep) {
  std::set<pid_t> interrupted, waiting;
  quiesced_.clear();
  // Every task not yet asked (new ones too: a thread cloned meanwhile).
  auto enlist = [&] {
    std::lock_guard<std::mutex> lock(h_.kernel.mu());
    for (const auto& [tgid, process] : h_.kernel.tasks().Processes()) {
      for (const Task* t : h_.kernel.tasks().TasksOf(process.get())) {
        if (t->tid == keep) continue;
        if (t->fork_child) {
          if (!t->held_stopped)
            waiting.insert(t->tid);
          else
            waiting.erase(t->tid);
          continue;
        }
        if (interrupted.insert(t->tid).second) {
          ptrace(PTRACE_INTERRUPT, t->tid, nullptr, nullptr);
          waiting.insert(t->tid);
        }
      }
    }
    // Ended ones are waited for no more.
    for (auto it = waiting.begin(); it != waiting.end();) {
      it = h_.kernel.tasks().Find(*it) ? std::next(it) : waiting.erase(it);
    }
  };
  enlist();
  auto deadline = std::chrono::steady_clock::now() + kQuiesceLimit;
  while (!waiting.empty()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::StrCat(waiting.size(), " task(s) of the sandbox did not stop within 2 s");
    }
    int status;
    pid_t pid = waitpid(-1, &status, __WALL | WNOHANG);
    if (pid == 0) {
      timespec ts{0, 200 * 1000};
      nanosleep(&ts, nullptr);
      enlist();
      continue;
    }
    if (pid < 0) {
      if (errno == EINTR) continue;
      return "the sandbox has no task left";
    }
    if (pid == h_.init_pid) {
      if (WIFEXITED(status) || WIFSIGNALED(status)) init_exited_ = true;
      return "the sandbox is ending";
    }
    if (interrupted.count(pid) && WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP) {
      // Its stop: held until the re-listen ends (a first stop too: it is
      // started now, resumed with the others).
      std::lock_guard<std::mutex> lock(h_.kernel.mu());
      if (Task* t = h_.kernel.tasks().Find(pid)) t->started = true;
      quiesced_.push_back({pid, IsStopSignal(WSTOPSIG(status))});
      waiting.erase(pid);
      continue;
    }
    // Anything else as ever (an exit, an event, a signal's delivery): the
    // task is resumed and stops for its interrupt later. A fork child's
    // first stop holds it. A thread's own re-listen request here is refused
    // (relisten_busy_).
    h_.tracer.OnWaitStatus(pid, status);
    bool gone;
    {
      std::lock_guard<std::mutex> lock(h_.kernel.mu());
      gone = h_.kernel.tasks().Find(keep) == nullptr;
    }
    if (gone) return "the forking thread ended";
    enlist();
  }
  return "";
}

std::string ForkParent::CheckRelistenable(pid_t pid) {
  std::vector<pid_t> threads;
  {
    std::lock_guard<std::mutex> lock(h_.kernel.mu());
    const Task* t = h_.kernel.tasks().Find(pid);
    if (!t) return "the forking thread ended";
    std::vector<pid_t> others = OtherProcesses(h_.kernel, *t);
    if (!others.empty()) {
      return absl::StrCat("the sandbox holds processes besides the forking one (pids ",
                          absl::StrJoin(others, ", "), ")");
    }
    for (const Task* task : h_.kernel.tasks().TasksOf(t->process.get()))
      threads.push_back(task->tid);
  }
  int depth = SeccompDepth(pid);
  if (depth < 0 || depth >= kMaxFilterDepth) {
    return absl::StrCat("the seccomp filter chain is ", depth, " deep (fork depth)");
  }
  for (pid_t tid : threads) {
    if (SeccompDepth(tid) != depth) {
      return "a thread of the forking process has a seccomp filter of its own (TSYNC would fail)";
    }
  }
  return CheckOffer(pid, AfterForkProgram().size());
}

std::string ForkParent::CloseOldListener(const std::weak_ptr<Unotify>& late) {
  auto deadline = std::chrono::steady_clock::now() + kLateCopiesLimit;
  while (!late.expired() && std::chrono::steady_clock::now() < deadline) {
    timespec ts{0, 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
  // A late call that still holds a copy: the kernel would refuse the new
  // listener (one per chain).
  if (!late.expired()) return "a call of the guest still waits in the sentry";
  h_.unotify.reset();  // L1's last copy: its filter fails closed (ENOSYS) from here
  return "";
}

void ForkParent::OnRelistenTaken(int err, UniqueFd listener) {
  timeline::Mark("s1.relisten.taken");
  ForkPrepare prepared = std::move(relisten_);
  relisten_ = ForkPrepare{};
  std::vector<pid_t> children = ForkChildrenSince(prepared.first_child);
  if (err != 0 || !listener) {
    // L1 is closed: nothing can answer the parent's trapped calls.
    fork_fatal_ = absl::StrCat("a fork's re-listen failed (", std::strerror(err ? err : EBADF),
                               "): the sandbox cannot go on without a listener");
    log::Error(fork_fatal_);
    KillForkChildren(children, "the re-listen failed");
    ResumeQuiesced();
    relisten_busy_ = false;
    h_.kill_sandbox();
    if (control_open_) {
      SendControlReply(h_.control_fd, ControlKind::kRelistened, prepared.id, err ? err : EBADF,
                       fork_fatal_);
    }
    return;
  }
  h_.unotify = std::make_unique<Unotify>(std::move(listener));
  (void)h_.unotify->SetSyncWakeup();  // (said once, at the run's start)
  // The table after a fork: every call that names a pid trapped
  // (ConfinePids), the children none of the sandbox's.
  h_.dispatcher = std::make_unique<Dispatcher>(h_.dispatcher->trace(), &FindSyscallAfterFork);
  h_.start_loop();
  timeline::Mark("s1.loop.started");
  ForkHandoffContext ctx{h_.kernel, h_.tracer, {}, relisten_parent_};
  for (int fd : h_.relay_ends()) ctx.relay_fds.push_back(fd);
  uint32_t handed = 0;
  std::vector<std::string> failures;
  std::vector<std::pair<pid_t, int>> batch;  // {host pid, hand-off socket}
  std::vector<size_t> index;
  for (size_t i = 0; i < children.size(); ++i) {
    bool alive;
    {
      std::lock_guard<std::mutex> lock(h_.kernel.mu());
      alive = h_.kernel.tasks().Find(children[i]) != nullptr;
    }
    if (!alive) {
      failures.push_back(absl::StrCat("child ", i, " ended before its hand-off"));
    } else if (i >= prepared.handoffs.size()) {
      failures.push_back(absl::StrCat("child ", i, ": no hand-off socket for it"));
      KillForkChildren({children[i]}, "no hand-off socket for it");
    } else {
      batch.emplace_back(children[i], prepared.handoffs[i].get());
      index.push_back(i);
    }
  }
  // All at once: their supervisors seize and set up in parallel.
  std::vector<absl::Status> handed_off = HandOffForkedChildren(ctx, batch);
  for (size_t j = 0; j < handed_off.size(); ++j) {
    const absl::Status& s = handed_off[j];
    if (s.ok()) {
      ++handed;
      continue;
    }
    failures.push_back(absl::StrCat("child ", index[j], ": ", s.message()));
    KillForkChildren({batch[j].first}, std::string(s.message()));
  }
  prepared.handoffs.clear();  // S2s waiting on the others see their end
  timeline::Mark("s1.handed");
  ResumeQuiesced();
  relisten_busy_ = false;
  if (control_open_) {
    SendControlReply(h_.control_fd, ControlKind::kRelistened, prepared.id, 0,
                     absl::StrJoin(failures, "; "), handed);
  }
}

void ForkParent::ResumeQuiesced() {
  for (const Quiesced& q : quiesced_) {
    {
      std::lock_guard<std::mutex> lock(h_.kernel.mu());
      if (!h_.kernel.tasks().Find(q.tid)) continue;
    }
    // A task held in a group-stop (SIGSTOP) listens on, as before.
    ptrace(q.group_stop ? PTRACE_LISTEN : PTRACE_CONT, q.tid, nullptr, nullptr);
  }
  quiesced_.clear();
}

}  // namespace sentry::run_internal
