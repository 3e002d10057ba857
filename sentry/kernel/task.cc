#include "sentry/kernel/task.h"

#include <set>

namespace sentry {

size_t TaskTable::ProcessCount() const {
  std::set<const Process*> seen;
  for (const auto& [tid, task] : tasks_) seen.insert(task.process.get());
  return seen.size();
}

}  // namespace sentry
