// The census's phases (sentry/kernel/census.h): a task started in a phase
// counts in it while it lives; once it has ended, its tid is forgotten, so a
// later task with the same tid counts in no phase and the census keeps
// nothing for the tasks that are gone.
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

uint64_t PhaseCalls(const Census& c, const char* name) {
  auto j = nlohmann::json::parse(c.ToJson({"probe"}));
  return j["phases"][0]["calls"].value(name, uint64_t{0});
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

}  // namespace
}  // namespace sentry
