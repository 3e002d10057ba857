// The census's phases (sentry/kernel/census.h): a task started in a phase
// counts in it while it lives; once it has ended, its tid is forgotten, so a
// later task with the same tid counts in no phase and the census keeps
// nothing for the tasks that are gone. A call answered later counts where it
// was made.
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <nlohmann/json.hpp>

#include "sentry/kernel/census.h"

namespace sentry {
namespace {

SyscallEvent Call(pid_t tid, int nr) {
  SyscallEvent e;
  e.pid = e.tid = tid;
  e.nr = nr;
  return e;
}

uint64_t PhaseCalls(const Census& c, const char* name, size_t phase = 0) {
  auto j = nlohmann::json::parse(c.ToJson({"probe"}));
  return j["phases"][phase]["calls"].value(name, uint64_t{0});
}

TEST(CensusPhaseTest, AnEndedTaskIsForgotten) {
  Census census(/*namespaces=*/true);
  SyscallEvent exec = Call(100, SYS_execve);  // the count starts at the guest's execve
  exec.action = EventAction::kTrace;
  census.OnSyscall(exec);
  census.OnMark(100, "case");
  census.OnNewTask(100, 101);
  census.OnSyscall(Call(101, SYS_getpid));
  EXPECT_EQ(PhaseCalls(census, "getpid"), 1u);
  census.OnTaskGone(101);
  census.OnSyscall(Call(101, SYS_getpid));  // a later task given the same tid
  EXPECT_EQ(PhaseCalls(census, "getpid"), 1u);
  census.OnSyscall(Call(100, SYS_getpid));  // the marking task still counts
  EXPECT_EQ(PhaseCalls(census, "getpid"), 2u);
}

// A call answered later (a FIFO open a signal interrupted) counts in the
// phase its task was in when it came, though the task has marked others since.
TEST(CensusPhaseTest, ALateAnswerCountsWhereTheCallWasMade) {
  Census census(/*namespaces=*/true);
  SyscallEvent exec = Call(100, SYS_execve);
  exec.action = EventAction::kTrace;
  census.OnSyscall(exec);
  census.OnMark(100, "waits");
  SyscallEvent open = Call(100, SYS_openat);
  open.arrival = census.Arrival(100);
  census.OnMark(100, "");
  census.OnMark(100, "next");
  census.OnSyscall(open);
  EXPECT_EQ(PhaseCalls(census, "openat", 0), 1u);
  EXPECT_EQ(PhaseCalls(census, "openat", 1), 0u);
  // One made outside any phase counts in none.
  census.OnMark(100, "");
  SyscallEvent outside = Call(100, SYS_openat);
  outside.arrival = census.Arrival(100);
  census.OnMark(100, "last");
  census.OnSyscall(outside);
  EXPECT_EQ(PhaseCalls(census, "openat", 0), 1u);
  EXPECT_EQ(PhaseCalls(census, "openat", 2), 0u);
}

}  // namespace
}  // namespace sentry
