// The sentry process and its sandbox as the host sees them during a run:
// what they hold, and where the kernel put them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

// The children of this test process (every thread's), by pid.
std::set<pid_t> OwnChildren() {
  std::set<pid_t> out;
  std::string tasks = "/proc/self/task";
  for (const auto& tid : std::filesystem::directory_iterator(tasks)) {
    std::ifstream f(tid.path() / "children");
    pid_t pid;
    while (f >> pid) out.insert(pid);
  }
  return out;
}

std::string StatusField(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return "";
}

// A `sentry run -- /bin/sleep 2` in the background: the sentry's host pid
// and its sandbox's processes, found while it runs.
class BackgroundRun {
 public:
  BackgroundRun() {
    thread_ = std::thread([this] { result_ = RunSentry({}, {"/bin/sleep", "2"}); });
    for (int i = 0; i < 200 && sentry_ <= 0; ++i) {
      usleep(10000);
      for (pid_t p : OwnChildren()) {
        if (ReadHostFile("/proc/" + std::to_string(p) + "/comm") == "sentry\n") sentry_ = p;
      }
    }
  }
  ~BackgroundRun() { thread_.join(); }
  pid_t sentry() const { return sentry_; }
  // The guest (the sleep), a grandchild of the sentry: its host pid.
  pid_t Guest() const {
    for (int i = 0; i < 200; ++i) {
      for (const auto& t : std::filesystem::directory_iterator("/proc")) {
        std::string name = t.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (ReadHostFile(t.path() / "comm") != "sleep\n") continue;
        std::string ppid = StatusField(std::stoi(name), "PPid");
        pid_t parent = std::stoi(ppid.empty() ? "0" : ppid);
        std::string gp = StatusField(parent, "PPid");
        if (!gp.empty() && std::stoi(gp) == sentry_) return std::stoi(name);
      }
      usleep(10000);
    }
    return -1;
  }
  const ProcessResult& result() const { return result_; }

 private:
  std::thread thread_;
  pid_t sentry_ = -1;
  ProcessResult result_;
};

// The kernel grows a shared fd table only after an RCU grace period (a stall
// of milliseconds inside a guest's syscall): the sentry grows its own before
// it has threads.
TEST(SentryProcessTest, FdTableIsGrownBeforeAnyThread) {
  BackgroundRun run;
  ASSERT_GT(run.sentry(), 0);
  std::string size = StatusField(run.sentry(), "FDSize");
  std::string threads = StatusField(run.sentry(), "Threads");
  ASSERT_FALSE(size.empty());
  EXPECT_GE(std::stoi(size), 4096) << "FDSize" << size;
  EXPECT_GT(std::stoi(threads), 1);
}

// The sandbox's pid 1 joins its cgroups itself (see loader.h): the guest, its
// child, is in the run's own cgroups from its start.
TEST(SentryProcessTest, TheGuestIsInTheRunsCgroups) {
  BackgroundRun run;
  ASSERT_GT(run.sentry(), 0);
  pid_t guest = run.Guest();
  ASSERT_GT(guest, 0);
  std::string own = "/sentry-" + std::to_string(run.sentry());
  std::istringstream cgroups(ReadHostFile("/proc/" + std::to_string(guest) + "/cgroup"));
  std::set<std::string> joined;
  std::string line;
  while (std::getline(cgroups, line)) {
    // "N:controller:/path": the path ends with the run's cgroup.
    std::string controller = line.substr(line.find(':') + 1);
    controller = controller.substr(0, controller.find(':'));
    if (line.ends_with(own)) joined.insert(controller);
  }
  EXPECT_TRUE(joined.count("memory")) << ReadHostFile("/proc/" + std::to_string(guest) + "/cgroup");
  EXPECT_TRUE(joined.count("pids"));
  EXPECT_TRUE(joined.count("cpuacct"));
}

}  // namespace
}  // namespace sentry::testing
