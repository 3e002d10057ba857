#include "sentry/kernel/task.h"

#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sentry/base/small_file.h"

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

// From the NSpid line of its status: the host's pid namespace's first, the
// innermost last.
namespace {

// A field of /proc/PID/status that lists an id at each pid namespace level
// ("NSpid:", "NSpgid:"), `outer` levels out from the innermost.
pid_t ReadNsLevel(pid_t host_tid, std::string_view field, int outer) {
  std::string status = ReadFileText("/proc/" + std::to_string(host_tid) + "/status", 64 << 10);
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, absl::string_view(field.data(), field.size()))) continue;
    std::vector<pid_t> levels;
    for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      pid_t p;
      if (!absl::SimpleAtoi(word, &p)) break;
      levels.push_back(p);
    }
    if (outer < 0 || static_cast<size_t>(outer) >= levels.size()) return 0;
    return levels[levels.size() - 1 - outer];
  }
  return 0;
}

}  // namespace

pid_t ReadNsPid(pid_t host_tid, int outer) { return ReadNsLevel(host_tid, "NSpid:", outer); }

pid_t ReadNsPgid(pid_t host_pid, int outer) { return ReadNsLevel(host_pid, "NSpgid:", outer); }

}  // namespace sentry
