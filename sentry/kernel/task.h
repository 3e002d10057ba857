// The task table: what the sentry knows of each guest thread and process.
//
// Kept exact by ptrace lifecycle events (fork, vfork, clone, exec, exit), which
// arrive before the new task runs, so a notification never comes from a task the
// table does not know.
#ifndef SENTRY_KERNEL_TASK_H_
#define SENTRY_KERNEL_TASK_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sentry/base/unique_fd.h"
#include "vfs/node.h"
#include "vfs/vfs.h"

namespace sentry {

// Shared by threads made with CLONE_FS, copied by fork: cwd and umask.
struct FsContext {
  vfs::NodeRef cwd;
  mode_t umask = 022;
};

// Per thread group.
struct Process {
  pid_t tgid = 0;    // host pid
  pid_t ns_pid = 0;  // the pid the sandbox sees
  vfs::Creds creds;  // emulated identity for the VFS
  std::string exe;   // the guest path of what it last executed (/proc/PID/exe)
};

// The binary the sentry allowed a task's pending execve to run (for a script,
// the interpreter at the end of its "#!" chain), set at the exec's ptrace stop.
// At the exec event the kernel must have read view_path (AT_EXECFN) and
// /proc/PID/exe must be this file, else the task is killed; so is an exec
// event with no check active.
struct ExecCheck {
  bool active = false;
  std::string guest_path;
  std::string view_path;  // the path the sentry wrote for the kernel to read
  dev_t dev = 0;
  ino_t ino = 0;
};

struct Task {
  pid_t tid = 0;     // host tid
  pid_t ns_tid = 0;  // the tid the sandbox sees
  UniqueFd pidfd;    // a thread pidfd for pidfd_getfd, opened while the task was stopped
  std::shared_ptr<FsContext> fs;
  std::shared_ptr<Process> process;
  bool started = false;  // its first ptrace stop was seen and resumed
  // Held by the sentry in a group-stop (SIGSTOP and friends, PTRACE_LISTEN):
  // the one tracing stop /proc shows as "T (stopped)" (procfs_task.cc).
  bool group_stopped = false;
  ExecCheck exec_check;
  // How many more clones with the fork's flags the supervisor lets this
  // thread run (Tracer::GrantFork; syscalls/fork_gate.h).
  int forks_granted = 0;
  // The child of a granted fork clone (pid 1 of its own namespaces): not the
  // sandbox's (the pid rule names it not; sys_pid.cc), held at its first
  // stop (never resumed by this tracer) until it is handed to its own
  // supervisor or killed (sentry/session/FORK.md, steps 2-3).
  bool fork_child = false;
  bool held_stopped = false;  // that first stop has come: it waits there
  std::string trace_exec;     // --trace: the execve line, printed at its exec event
  // Its calls the sentry answered, and that count at the last pin check
  // (colocation.h: a guest of several tasks follows the one that traps most).
  uint64_t traps = 0;
  uint64_t traps_checked = 0;
  bool own_affinity = false;  // the guest set its CPU affinity: never pinned
};

class TaskTable final {
 public:
  Task* Find(pid_t tid) {
    auto it = tasks_.find(tid);
    return it == tasks_.end() ? nullptr : &it->second;
  }
  Task& Add(Task task) { return tasks_[task.tid] = std::move(task); }
  void Remove(pid_t tid) {
    Gone(tid);
    tasks_.erase(tid);
  }
  // After a non-leader thread execs, the kernel gives it the leader's tid.
  void Rename(pid_t from, pid_t to) {
    Gone(from);
    Gone(to);
    auto node = tasks_.extract(from);
    if (node.empty()) return;
    node.key() = to;
    node.mapped().tid = to;
    tasks_.erase(to);
    tasks_.insert(std::move(node));
  }
  size_t size() const { return tasks_.size(); }
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [tid, task] : tasks_) f(task);
  }
  // Called with a thread's sandbox tid as it leaves the table (its id may
  // then be reused): the fast-metadata region's working directory of it.
  void set_on_gone(std::function<void(pid_t ns_tid)> f) { on_gone_ = std::move(f); }
  // Processes are counted by distinct thread groups.
  size_t ProcessCount() const;
  // The live processes, by host tgid.
  std::map<pid_t, std::shared_ptr<Process>> Processes() const;
  // Every task of a process.
  std::vector<const Task*> TasksOf(const Process* p) const;
  // The task or process the sandbox calls ns_pid, or null.
  const Task* FindByNsTid(pid_t ns_tid) const;
  Task* FindByNsTid(pid_t ns_tid) {
    return const_cast<Task*>(static_cast<const TaskTable*>(this)->FindByNsTid(ns_tid));
  }
  pid_t NsPidOfHost(pid_t host_pid) const;

 private:
  void Gone(pid_t tid) {
    if (!on_gone_) return;
    auto it = tasks_.find(tid);
    if (it != tasks_.end()) on_gone_(it->second.ns_tid);
  }
  std::map<pid_t, Task> tasks_;
  std::function<void(pid_t)> on_gone_;
};

// The pid of a host task in its innermost pid namespace, or `outer` levels
// out from there (0 if it has no such level).
pid_t ReadNsPid(pid_t host_tid, int outer = 0);
// Its process group's id, likewise (also of a zombie, until it is reaped).
pid_t ReadNsPgid(pid_t host_pid, int outer = 0);

}  // namespace sentry

#endif  // SENTRY_KERNEL_TASK_H_
