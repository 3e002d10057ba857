#include "sentry/platform/tracer.h"

#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "sentry/abi/guest_memory.h"
#include "sentry/base/timeline.h"
#include "sentry/kernel/dispatcher.h"
#include "sentry/trace/syscall_format.h"
#include "sentry/trace/trace_flags.h"
#include "sentry/trace/trace_structs.h"
#include "syscalls/fork_gate.h"
#include "syscalls/sys_exec.h"

namespace sentry {
namespace {

constexpr int kPidfdThread = O_EXCL;  // PIDFD_THREAD, Linux 6.9

UniqueFd OpenTaskPidfd(pid_t tid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, tid, kPidfdThread));
  if (fd < 0) fd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
  return UniqueFd(fd);
}

// GuestFds at a ptrace stop: fds can be read (execveat's dirfd), not installed.
class StopFds final : public GuestFds {
 public:
  explicit StopFds(int pidfd) : pidfd_(pidfd) {}
  SysResult<UniqueFd> Get(int guest_fd) override {
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd_, guest_fd, 0));
    if (fd < 0) return Errno{EBADF};
    return UniqueFd(fd);
  }
  SysResult<int> Install(int, bool) override { return Errno{EPERM}; }

 private:
  int pidfd_;
};

// Writes s (with its NUL) just below `below`, 16-byte aligned; *addr is where.
bool PushString(GuestMemory& mem, uint64_t below, const std::string& s, uint64_t* addr) {
  *addr = (below - s.size() - 1) & ~uint64_t{15};
  return mem.CopyOut(GuestAddr(*addr), s.c_str(), s.size() + 1).ok();
}

void SetExecPath(user_regs_struct& regs, bool at, uint64_t addr) {
  if (at) {
    regs.rdi = static_cast<uint64_t>(AT_FDCWD);
    regs.rsi = addr;
    regs.r8 = 0;
  } else {
    regs.rdi = addr;
  }
}

// Hands the kernel plan's binary instead of the path the guest named: its
// view path, and for a script the argv binfmt_script would have built (the
// new strings and pointer array below the guest's stack red zone, the old
// argv's strings reused in place). Guest memory, so a sibling thread may
// change any of it before the kernel reads it: see Tracer::OnExecEvent for why
// that gains it nothing. EFAULT for an unreadable argv, ENOMEM when the stack
// cannot take the strings.
int RewriteExec(GuestMemory& mem, user_regs_struct& regs, bool at, const sys::ExecPlan& plan) {
  constexpr size_t kMaxArgs = 1 << 16;
  uint64_t argv_addr = at ? regs.rdx : regs.rsi;
  std::vector<uint64_t> old_args;
  for (size_t i = 0; argv_addr != 0 && !plan.argv_head.empty() && i < kMaxArgs; ++i) {
    auto p = mem.CopyIn<uint64_t>(GuestAddr(argv_addr + 8 * i));
    if (!p.ok()) return EFAULT;
    if (*p == 0) break;
    old_args.push_back(*p);
  }
  uint64_t path_addr;
  if (!PushString(mem, regs.rsp - 256, plan.view_path, &path_addr)) return ENOMEM;
  if (!plan.argv_head.empty()) {
    uint64_t cursor = path_addr;
    std::vector<uint64_t> new_args;
    for (const std::string& w : plan.argv_head) {
      if (!PushString(mem, cursor, w, &cursor)) return ENOMEM;
      new_args.push_back(cursor);
    }
    for (size_t i = 1; i < old_args.size(); ++i) new_args.push_back(old_args[i]);
    new_args.push_back(0);
    uint64_t array = (cursor - 8 * new_args.size()) & ~uint64_t{15};
    if (!mem.CopyOut(GuestAddr(array), new_args.data(), 8 * new_args.size()).ok()) return ENOMEM;
    (at ? regs.rdx : regs.rsi) = array;
  }
  SetExecPath(regs, at, path_addr);
  return 0;
}

// The path the kernel read for the exec just done: AT_EXECFN points at its
// copy of bprm->filename on the new stack (fs/exec.c), which no guest code has
// run to change yet. The auxv is found past argc, argv[] and envp[] from rsp,
// as the ELF loader lays them out (fs/binfmt_elf.c, create_elf_tables), read
// through the tracee's memory: /proc/PID/auxv is closed to the sentry's fs
// identity when the image is not dumpable (a --root guest's, whose exec
// gains capabilities). nullopt if it cannot be read: the task is dying (a
// kill from the run's end can land at this very stop, and its memory is
// gone); no guest code runs in the new image before this check, so nothing
// of the guest's can make it unreadable.
std::optional<std::string> PathTheKernelRead(pid_t pid) {
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) < 0) return std::nullopt;
  ProcessMemoryBackend backend(pid);
  GuestMemory mem(backend);
  auto argc = mem.CopyIn<uint64_t>(GuestAddr(regs.rsp));
  if (!argc.ok() || *argc > (uint64_t{1} << 32)) return {};
  uint64_t at = regs.rsp + 8 * (*argc + 2);  // argc, argv[], NULL
  // Read to the end of each page at a time: the stack ends on a page boundary.
  std::vector<uint64_t> words;
  size_t next = 0;
  auto word = [&](uint64_t* out) {
    if (next == words.size()) {
      uint64_t page_end = (at | (GuestMemory::kPageSize - 1)) + 1;
      words.resize((page_end - at) / 8);
      if (words.empty() || !mem.CopyIn(GuestAddr(at), words.data(), 8 * words.size()).ok()) {
        return false;
      }
      at = page_end;
      next = 0;
    }
    *out = words[next++];
    return true;
  };
  uint64_t w;
  do {
    if (!word(&w)) return {};
  } while (w != 0);  // envp[], NULL
  uint64_t type, value;
  while (word(&type) && word(&value) && type != AT_NULL) {
    if (type != AT_EXECFN) continue;
    auto path = mem.CopyInString(GuestAddr(value), PATH_MAX);
    if (!path.ok()) return std::nullopt;
    return *path;
  }
  return std::nullopt;
}

// Whether the image an exec loaded is one the plan refuses (IsForeignElf):
// an i386 task (its code segment is the 32-bit one, __USER32_CS), or an
// x32 or other image by its ELF header. Its stack is not laid out in
// x86-64 words, so PathTheKernelRead would find nothing there.
bool RunsForeignImage(pid_t pid) {
  constexpr uint64_t kUser32Cs = 0x23;
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) == 0 && regs.cs == kUser32Cs) return true;
  int fd = open(("/proc/" + std::to_string(pid) + "/exe").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[sizeof(Elf64_Ehdr)];
  ssize_t n = pread(fd, head, sizeof(head), 0);
  close(fd);
  return n > 0 && sys::IsForeignElf(std::string_view(head, n));
}

bool ExeIs(pid_t pid, const ExecCheck& check) {
  struct stat st;
  std::string exe = "/proc/" + std::to_string(pid) + "/exe";
  return stat(exe.c_str(), &st) == 0 && st.st_dev == check.dev && st.st_ino == check.ino;
}

}  // namespace

int Tracer::Seize(pid_t pid) {
  // TRACESYSGOOD: the only syscall stops are the re-listen's, told from a
  // SIGTRAP by their 0x80.
  long opts = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
              PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD;
  if (ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(opts)) < 0) return -errno;
  return 0;
}

void Tracer::Resume(pid_t pid, int sig) {
  ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
}

void Tracer::OnWaitStatus(pid_t pid, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    RelistenDone(pid, ESRCH);  // a re-listen it was in ends with it
    {
      std::lock_guard<std::mutex> lock(kernel_.mu());
      if (trace_) TraceExit(pid, status);
      kernel_.tasks().Remove(pid);
      if (pid == leader_) {
        leader_done_ = true;
        leader_status_ = status;
      }
    }
    if (observer_) observer_->OnTaskGone(pid);
    return;
  }
  if (!WIFSTOPPED(status)) return;
  if (RelistenOwnsStop(pid, status)) return;
  int sig = WSTOPSIG(status);
  int event = status >> 16;
  switch (event) {
    case PTRACE_EVENT_SECCOMP:
      if (!OnTraceStop(pid)) Resume(pid, 0);
      return;
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK:
    case PTRACE_EVENT_CLONE: {
      unsigned long child = 0;
      ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &child);
      OnNewTask(pid, static_cast<pid_t>(child), event);
      Resume(pid, 0);
      return;
    }
    case PTRACE_EVENT_EXEC:
      OnExecEvent(pid);
      Resume(pid, 0);
      return;
    case PTRACE_EVENT_STOP: {
      std::lock_guard<std::mutex> lock(kernel_.mu());
      Task* task = kernel_.tasks().Find(pid);
      if (!task) {
        early_stops_.insert(pid);  // resumed once its parent's event registers it
        return;
      }
      if (!task->started) {
        task->started = true;
        if (task->fork_child) {
          task->held_stopped = true;  // held for its hand-off (never resumed here)
          return;
        }
        Resume(pid, 0);
        return;
      }
      // A group-stop (SIGSTOP and friends): stay stopped but keep listening.
      // Any other PTRACE_EVENT_STOP (the re-trap after SIGCONT) ends it.
      task->group_stopped = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
      if (task->group_stopped) {
        if (trace_) {
          trace_->Event(task->ns_tid,
                        absl::StrCat("--- stopped by ", trace::SignalName(sig), " ---"));
        }
        ptrace(PTRACE_LISTEN, pid, nullptr, nullptr);
      } else {
        Resume(pid, 0);
      }
      return;
    }
    default: {
      {
        // A signal is delivered only to a running task: no group-stop holds it.
        std::lock_guard<std::mutex> lock(kernel_.mu());
        if (Task* task = kernel_.tasks().Find(pid)) task->group_stopped = false;
      }
      if (trace_) TraceSignal(pid);
      Resume(pid, sig);  // signal-delivery-stop: deliver it
    }
  }
}

void Tracer::OnNewTask(pid_t parent, pid_t child, int event) {
  std::lock_guard<std::mutex> lock(kernel_.mu());
  // A second task: the guest may want every CPU from now on, and the task
  // that traps most is followed (see colocation.h). The child is stopped
  // until resumed, so unpinned in time.
  kernel_.colocation().Inherit(parent, child);
  kernel_.colocation().Spread();
  Task* p = kernel_.tasks().Find(parent);
  if (!p) return;
  bool thread = false, share_fs = false, fork_child = false;
  if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK) {
    user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, parent, nullptr, &regs) == 0 && regs.orig_rax == SYS_clone) {
      thread = event == PTRACE_EVENT_CLONE && (regs.rdi & CLONE_THREAD);
      share_fs = event == PTRACE_EVENT_CLONE && (regs.rdi & CLONE_FS);
      // Only a granted one runs (OnForkGate): its child is pid 1 of a pid
      // namespace of its own, and the sandbox names it one level out.
      fork_child = IsForkClone(SYS_clone, regs.rdi);
      if (fork_child && p->forks_granted > 0) --p->forks_granted;  // the grant used (OnForkGate)
    }
  }
  Task t;
  t.tid = child;
  t.ns_tid = ReadNsPid(child, fork_child ? 1 : 0);
  t.pidfd = OpenTaskPidfd(child);
  t.fs = share_fs ? p->fs : std::make_shared<FsContext>(*p->fs);
  if (thread) {
    t.process = p->process;
  } else {
    t.process = std::make_shared<Process>(*p->process);
    t.process->tgid = child;
    t.process->ns_pid = t.ns_tid;
  }
  if (trace_) TraceNewTask(parent, t.ns_tid, event);
  if (observer_) observer_->OnNewTask(parent, child);
  t.fork_child = fork_child;
  if (fork_child) timeline::Mark("s1.clone", static_cast<long>(kernel_.fork_children.size()));
  if (fork_child && kernel_.fork_children.size() < Kernel::kMaxForkChildren) {
    kernel_.fork_children.push_back(child);
  }
  Task& added = kernel_.tasks().Add(std::move(t));
  if (early_stops_.erase(child)) {
    added.started = true;
    if (fork_child) {
      added.held_stopped = true;
    } else {
      Resume(child, 0);
    }
  }
}

void Tracer::OnExecStop(pid_t pid, user_regs_struct& regs) {
  long nr = static_cast<long>(regs.orig_rax);
  SyscallEvent event;
  if (observer_) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    event.duration_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + ts.tv_nsec;
    event.tid = pid;
    event.nr = static_cast<int>(nr);
    uint64_t raw[6] = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
    for (int i = 0; i < 6; ++i) event.args[i] = raw[i];
    event.action = EventAction::kTrace;
  }
  // Reported once answered: let run (result unseen) or failed with err.
  auto report = [&](int err) {
    if (!observer_) return;
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    event.duration_ns =
        static_cast<uint64_t>(ts.tv_sec) * 1000000000u + ts.tv_nsec - event.duration_ns;
    event.result_known = err != 0;
    event.value = -err;
    observer_->OnSyscall(event);
  };
  std::lock_guard<std::mutex> lock(kernel_.mu());
  Task* task = kernel_.tasks().Find(pid);
  int err = ESRCH;
  if (task) {
    task->exec_check = {};
    kernel_.current = task;
    ProcessMemoryBackend backend(pid);
    GuestMemory mem(backend);
    StopFds fds(task->pidfd.get());
    SyscallContext ctx{kernel_, *task, mem, fds, {}};
    uint64_t raw[6] = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
    for (int i = 0; i < 6; ++i) ctx.args.raw[i] = raw[i];
    bool at = nr == SYS_execveat;
    int dirfd = at ? static_cast<int>(regs.rdi) : AT_FDCWD;
    GuestAddr path(at ? regs.rsi : regs.rdi);
    int flags = at ? static_cast<int>(regs.r8) : 0;
    auto plan = sys::PlanExec(ctx, dirfd, path, flags, view_roots_);
    if (trace_) {
      // Printed once the kernel has done it (at the exec event), as strace
      // does; at once if the sentry refuses it.
      std::string call = Dispatcher::Describe(ctx, static_cast<int>(nr));
      if (plan.ok()) {
        task->trace_exec = std::move(call);
      } else {
        trace::TracedCall refused{static_cast<int>(nr)};
        refused.done = true;
        refused.ret = -plan.error();
        trace_->Call(task->ns_tid, call, trace::FormatReturn(refused));
      }
    }
    if (plan.ok()) {
      err = RewriteExec(mem, regs, at, *plan);
      if (err == 0) {
        task->exec_check = {true, plan->guest_path, plan->view_path, plan->dev, plan->ino};
        ptrace(PTRACE_SETREGS, pid, nullptr, &regs);
        report(0);
        return;
      }
    } else {
      err = plan.error();
    }
  }
  regs.orig_rax = static_cast<uint64_t>(-1);  // skip the call...
  regs.rax = static_cast<uint64_t>(-err);     // ...and fail it
  ptrace(PTRACE_SETREGS, pid, nullptr, &regs);
  report(err);
}

void Tracer::OnExecEvent(pid_t pid) {
  unsigned long former = 0;
  ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &former);
  std::lock_guard<std::mutex> lock(kernel_.mu());
  if (static_cast<pid_t>(former) != pid) kernel_.tasks().Rename(static_cast<pid_t>(former), pid);
  Task* task = kernel_.tasks().Find(pid);
  if (!task) return;
  // A thread that exec'd took its leader's pid: its pidfd (a thread pidfd of
  // its former tid) names a thread that is gone. It is stopped here: its own.
  if (static_cast<pid_t>(former) != pid) task->pidfd = OpenTaskPidfd(pid);
  ExecCheck check = task->exec_check;
  task->exec_check = {};
  if (trace_ && !task->trace_exec.empty()) trace_->Call(task->ns_tid, task->trace_exec, "0");
  task->trace_exec.clear();
  task->process->exe = check.guest_path;
  if (!mapping_dirs_.empty() && !MapsOnlyAllowedFiles(pid)) {
    violation_ = "exec mapped a host file outside the sandbox's lower layer and store";
    kill(pid, SIGKILL);
    return;
  }
  // The kernel must have read the very path the sentry wrote, and the image
  // must be the binary the sentry planned at the exec's stop (for a script,
  // the interpreter that ends its "#!" chain). An exec without a plan (none
  // reaches here but through that stop) is killed too.
  //
  // The identity check alone would suffice, although the kernel read the
  // path from guest memory after the plan was made: a thread that rewrote it
  // can make the kernel open another file of the mount view (of the host's
  // tree, without namespaces), but whatever it opened, what runs is this one
  // binary, which the sentry allowed this task to exec. The
  // kernel may have walked a "#!" chain to get there, and then the binary's
  // argv holds the names (and "#!" arguments) of the files on that chain: all
  // strings the guest could have passed in argv itself, to a binary it may
  // run anyway (so are the argv words RewriteExec wrote: its own memory).
  // The binary then opens those names (if it is an interpreter) through the
  // sentry's trapped open, with the guest's own permissions. So the race can
  // only produce an exec the guest could have asked for directly; the
  // kernel's reading a "#!" line from a file of the mount view shows the
  // guest no more than Linux shows any interpreter it runs. The path check
  // takes even that away: no file but the planned one was opened.
  if (!check.active) {
    violation_ = "exec ran without the sentry's plan";
    kill(pid, SIGKILL);
    return;
  }
  // A foreign image of the planned file itself was rewritten between the
  // plan's read and the kernel's (the guest may write its own files): no
  // path was raced, and the plan would have refused it with ENOEXEC. Past
  // the kernel's point of no return that exec can only end the task, as
  // the kernel ends one it cannot finish; the run goes on. A foreign image
  // of another file is a race like any other.
  if (RunsForeignImage(pid)) {
    if (!ExeIs(pid, check)) violation_ = "exec ran a file other than the one the sentry allowed";
    kill(pid, SIGKILL);
    return;
  }
  std::optional<std::string> read = PathTheKernelRead(pid);
  if (!read) {  // dying: ended, not a race the guest won
    kill(pid, SIGKILL);
    return;
  }
  if (*read != check.view_path) {
    violation_ = "exec read a path other than the one the sentry wrote";
    kill(pid, SIGKILL);
    return;
  }
  if (!ExeIs(pid, check)) {
    violation_ = "exec ran a file other than the one the sentry allowed";
    kill(pid, SIGKILL);
  }
}

bool Tracer::MapsOnlyAllowedFiles(pid_t pid) const {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return false;
  std::string line;
  int files = 0;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode   path": a file's path starts with '/'
    // (the kernel escapes a newline in it); [stack], [vdso] and anonymous
    // memory are not files.
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string_view path(line.data() + slash, line.size() - slash);
    bool allowed = false;
    for (const std::string& dir : mapping_dirs_) {
      if (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
          path[dir.size()] == '/') {
        allowed = true;
      }
    }
    if (!allowed) return false;
    ++files;
  }
  return files > 0;  // the new image is a file: no mapping at all means an unreadable maps
}

// "+++ exited with 0 +++", "+++ killed by SIGKILL +++": every task's end, as
// strace -f shows it (under kernel_.mu(), before the task leaves the table).
void Tracer::TraceExit(pid_t pid, int status) {
  Task* task = kernel_.tasks().Find(pid);
  pid_t tid = task ? task->ns_tid : pid;
  if (task && !task->trace_exec.empty()) {
    trace_->Call(tid, task->trace_exec, "?");  // an exec that never returned
  }
  if (WIFEXITED(status)) {
    trace_->Event(tid, absl::StrCat("+++ exited with ", WEXITSTATUS(status), " +++"));
  } else {
    trace_->Event(tid, absl::StrCat("+++ killed by ", trace::SignalName(WTERMSIG(status)),
                                    WCOREDUMP(status) ? " (core dumped)" : "", " +++"));
  }
  trace_->TaskEnded();
}

// "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, ...} ---"
void Tracer::TraceSignal(pid_t pid) {
  siginfo_t si{};
  if (ptrace(PTRACE_GETSIGINFO, pid, nullptr, &si) < 0) return;
  pid_t tid = pid;
  {
    std::lock_guard<std::mutex> lock(kernel_.mu());
    if (Task* task = kernel_.tasks().Find(pid)) tid = task->ns_tid;
  }
  trace_->Event(
      tid, absl::StrCat("--- ", trace::SignalName(si.si_signo), " ", trace::SigInfo(si), " ---"));
}

// The parent's clone, fork or vfork, with the child's pid as the guest sees
// it: the call runs natively, and this event is where the sentry sees it end.
void Tracer::TraceNewTask(pid_t parent, pid_t child_ns_tid, int event) {
  Task* p = kernel_.tasks().Find(parent);
  user_regs_struct regs;
  trace::TracedCall call;
  if (ptrace(PTRACE_GETREGS, parent, nullptr, &regs) == 0) {
    call.nr = static_cast<int>(regs.orig_rax);
    uint64_t raw[6] = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
    std::copy(std::begin(raw), std::end(raw), call.args);
  } else {
    call.nr = event == PTRACE_EVENT_VFORK  ? SYS_vfork
              : event == PTRACE_EVENT_FORK ? SYS_fork
                                           : SYS_clone;
  }
  call.done = true;
  call.ret = child_ns_tid;
  trace_->Call(p ? p->ns_tid : parent, trace::FormatCall(call, nullptr), trace::FormatReturn(call));
  trace_->TaskStarted();
}

}  // namespace sentry
