#include "sentry/kernel/task.h"

#include <cstdlib>
#include <fstream>
#include <set>

namespace sentry {

size_t TaskTable::ProcessCount() const {
  std::set<const Process*> seen;
  for (const auto& [tid, task] : tasks_) seen.insert(task.process.get());
  return seen.size();
}

std::map<pid_t, std::shared_ptr<Process>> TaskTable::Processes() const {
  std::map<pid_t, std::shared_ptr<Process>> out;
  for (const auto& [tid, task] : tasks_) out[task.process->tgid] = task.process;
  return out;
}

std::vector<const Task*> TaskTable::TasksOf(const Process* p) const {
  std::vector<const Task*> out;
  for (const auto& [tid, task] : tasks_)
    if (task.process.get() == p) out.push_back(&task);
  return out;
}

const Task* TaskTable::FindByNsTid(pid_t ns_tid) const {
  for (const auto& [tid, task] : tasks_)
    if (task.ns_tid == ns_tid) return &task;
  return nullptr;
}

pid_t TaskTable::NsPidOfHost(pid_t host_pid) const {
  auto it = tasks_.find(host_pid);
  return it == tasks_.end() ? 0 : it->second.ns_tid;
}

// The innermost pid of a host task, from the NSpid line of its status.
pid_t ReadNsPid(pid_t host_tid) {
  std::ifstream f("/proc/" + std::to_string(host_tid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    size_t last = line.find_last_of(" \t");
    return static_cast<pid_t>(std::atoi(line.c_str() + last + 1));
  }
  return 0;
}

}  // namespace sentry
