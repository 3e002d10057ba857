// Census: what a guest called, syscall by syscall (sentry run --census FILE).
//
// Fed by SyscallEvents from every thread that answers the guest; written once
// the run is over as one JSON object (the format: docs/census.md). A guest
// may split it into phases (loader/census_filter.h, kCensusMarkNr): each
// phase then lists how often each syscall was called by the task that marked
// it and the tasks that task started while it was current. A phase is the
// task's own, not the sandbox's, so a thread or child left running by one
// phase never counts in the next one's (the conformance suite's cases get
// the same counts from run to run).
#ifndef SENTRY_KERNEL_CENSUS_H_
#define SENTRY_KERNEL_CENSUS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sentry/kernel/syscall_event.h"

namespace sentry {

class Census final : public SyscallObserver {
 public:
  // Rows are named from the table the run's filter was built from.
  explicit Census(bool namespaces) : namespaces_(namespaces) {}
  Census(const Census&) = delete;
  Census& operator=(const Census&) = delete;

  void OnSyscall(const SyscallEvent& event) override;
  // The task's phase as a late call comes in (-1: none): the call counts there.
  int64_t Arrival(pid_t tid) override;
  // A phase mark from the guest: the calls that follow belong to `label`
  // ("" for none). At most kMaxPhases phases are kept; calls in later ones
  // count in the totals only.
  void OnMark(pid_t tid, const std::string& label) override;
  // The child takes its parent's current phase.
  void OnNewTask(pid_t parent, pid_t child) override;
  // Its entry goes, so the tasks a guest starts in a phase cost nothing
  // once they have ended (a guest could otherwise grow the map to pid_max).
  void OnTaskGone(pid_t tid) override;

  // The census as one JSON object; argv is the guest's command.
  std::string ToJson(const std::vector<std::string>& argv) const;
  // Writes ToJson to path (made or truncated); "" or why not.
  std::string Write(const std::string& path, const std::vector<std::string>& argv) const;

  static constexpr size_t kMaxPhases = 4096;

 private:
  struct Row {
    uint64_t calls = 0, native = 0, trapped = 0, traced = 0, refused = 0;
    uint64_t unknown_result = 0;  // let run by the kernel: result not seen
    uint64_t trap_ns = 0;         // answering the trapped ones
    uint64_t max_trap_ns = 0;
    uint64_t refuse_ns = 0;  // answering the refused ones
    uint64_t native_ns = 0;  // letting the native ones go (census mode's own cost)
    std::map<int, uint64_t> errnos;
  };
  struct Phase {
    std::string label;
    std::map<int, uint64_t> calls;  // nr → calls
  };

  mutable std::mutex mu_;
  bool namespaces_;
  std::map<int, Row> rows_;
  std::vector<Phase> phases_;
  bool started_ = false;  // the first execve was seen
  // Each task's current phase (an index into phases_); a task not listed
  // is in none.
  std::map<pid_t, size_t> phase_of_;
  uint64_t dropped_marks_ = 0;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_CENSUS_H_
