// The sentry process and its sandbox as the host sees them during a run:
// what they hold, and where the kernel put them.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

// The children of a process (every thread's), by pid.
std::set<pid_t> Children(pid_t pid) {
  std::set<pid_t> out;
  std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& tid : std::filesystem::directory_iterator(tasks, ec)) {
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

// A `sentry run -- CMD` (by default /bin/sleep 2) in the background: the
// sentry's host pid and its guest, found while it runs.
class BackgroundRun {
 public:
  // guest_comm: the comm of the guest's program (python3 runs as python3.X).
  explicit BackgroundRun(std::vector<std::string> cmd = {"/bin/sleep", "2"},
                         std::string guest_comm = "sleep")
      : guest_comm_(std::move(guest_comm)) {
    thread_ = std::thread([this, cmd] { result_ = RunSentry({}, cmd); });
    for (int i = 0; i < 200 && sentry_ <= 0; ++i) {
      usleep(10000);
      for (pid_t p : Children(getpid())) {
        if (ReadHostFile("/proc/" + std::to_string(p) + "/comm") == "sentry\n") sentry_ = p;
      }
    }
  }
  ~BackgroundRun() { Finish(); }
  // The run's result, once it has ended.
  const ProcessResult& Finish() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }
  pid_t sentry() const { return sentry_; }
  // The guest, a grandchild of the sentry: its host pid.
  pid_t Guest() const {
    // The sentry's child is the sandbox's pid 1, whose one child is the guest
    // (once it has exec'd: comm is then the program's).
    for (int i = 0; i < 200; ++i) {
      for (pid_t init : Children(sentry_)) {
        for (pid_t guest : Children(init)) {
          if (ReadHostFile("/proc/" + std::to_string(guest) + "/comm") == guest_comm_ + "\n") {
            return guest;
          }
        }
      }
      usleep(10000);
    }
    return -1;
  }
  const ProcessResult& result() const { return result_; }

 private:
  std::string guest_comm_;
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
  ASSERT_GT(run.Guest(), 0);  // the sentry is past its start-up (slow under ASan)
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

// The loader makes the sandbox's network namespace itself, after its clone
// (see loader.h): the guest, forked after that, is in it, with the loader,
// and the host's is no one's in the sandbox.
TEST(SentryProcessTest, TheGuestHasANetworkNamespaceOfItsOwn) {
  BackgroundRun run;
  ASSERT_GT(run.sentry(), 0);
  pid_t guest = run.Guest();
  ASSERT_GT(guest, 0);
  auto netns = [](pid_t pid) {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/net", ec).string();
  };
  std::set<pid_t> init = Children(run.sentry());
  ASSERT_EQ(init.size(), 1u);
  std::string ns = netns(guest);
  ASSERT_FALSE(ns.empty());
  EXPECT_NE(ns, netns(getpid()));
  EXPECT_NE(ns, netns(run.sentry()));
  EXPECT_EQ(ns, netns(*init.begin()));
}

// The run's cgroup directories in each v1 hierarchy ("sentry-PID" under the
// sentry's own cgroup, which is this process's: it is the sentry's parent).
std::vector<std::string> RunCgroupDirs(pid_t sentry) {
  std::vector<std::string> out;
  std::istringstream own(ReadHostFile("/proc/self/cgroup"));
  std::string line;
  while (std::getline(own, line)) {
    // "N:controllers:/path"
    size_t a = line.find(':'), b = line.find(':', a + 1);
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) continue;  // the v2 line
    std::string dir = "/sys/fs/cgroup/" + controllers + (path == "/" ? "" : path) + "/sentry-" +
                      std::to_string(sentry);
    if (std::filesystem::is_directory(dir)) out.push_back(dir);
  }
  return out;
}

// A sentry killed outright cannot remove its cgroups: a later run removes
// them (Cgroups::SweepStale, which reads a hierarchy only when its link count
// says it has subdirectories; a cold run sweeps at most every 250 ms of the
// host's runs, Cgroups::SweepStaleNowAndThen).
TEST(SentryProcessTest, TheCgroupsOfAKilledSentryAreSweptByTheNextRun) {
  std::vector<std::string> dirs;
  pid_t sentry;
  {
    BackgroundRun run({"/bin/sleep", "30"});
    sentry = run.sentry();
    ASSERT_GT(sentry, 0);
    ASSERT_GT(run.Guest(), 0);
    dirs = RunCgroupDirs(sentry);
    ASSERT_FALSE(dirs.empty());
    kill(sentry, SIGKILL);
  }  // reaped; its sandbox dies with it (the loader's parent-death signal)
  EXPECT_EQ(RunCgroupDirs(sentry), dirs);  // left behind
  // The next run sweeps them once their last task has left (rmdir fails
  // with EBUSY until then: the next run after that tries again).
  for (int i = 0; i < 50 && !RunCgroupDirs(sentry).empty(); ++i) {
    ProcessResult r = RunSentry({}, {"/bin/true"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    if (!RunCgroupDirs(sentry).empty()) usleep(20000);
  }
  EXPECT_EQ(RunCgroupDirs(sentry), std::vector<std::string>{});
}

// python3 -c script under a BackgroundRun (python3 runs as python3.X).
std::unique_ptr<BackgroundRun> StartPython(const char* script) {
  std::string comm = std::filesystem::canonical("/usr/bin/python3").filename();
  return std::make_unique<BackgroundRun>(std::vector<std::string>{"/usr/bin/python3", "-c", script},
                                         comm);
}

std::string AllowedCpus(pid_t pid) { return StatusField(pid, "Cpus_allowed_list"); }

// The guest and the notification thread share a CPU while the guest traps
// often (see colocation.h): the pin pauses while the guest computes, and
// comes back when it traps often again.
TEST(SentryProcessTest, TheCpuPinPausesWhileTheGuestComputes) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: nothing is pinned";
  const char* script =
      "import os, time\n"
      "t = time.time()\n"
      "while time.time() - t < 1.0: pass\n"  // computes
      "t = time.time()\n"
      // traps often: /proc is never answered from the fast-metadata region
      // (a stat of /usr, /tmp or a file of /tmp would be, after the first)
      "while time.time() - t < 1.5: os.stat('/proc/self/status')\n";
  std::unique_ptr<BackgroundRun> run = StartPython(script);
  ASSERT_GT(run->sentry(), 0);
  pid_t guest = run->Guest();
  ASSERT_GT(guest, 0);
  std::string all = AllowedCpus(getpid());
  auto allowed = [guest] { return AllowedCpus(guest); };
  usleep(600000);  // computing
  std::string computing = allowed();
  usleep(1200000);  // statting
  std::string trapping = allowed();
  EXPECT_EQ(computing, all);
  EXPECT_NE(trapping, all);
  EXPECT_EQ(trapping.find_first_of(",-"), std::string::npos) << trapping;  // one CPU
}

// The sentry's notification thread, by tid (-1 if not found).
pid_t NotifierOf(pid_t sentry) {
  std::error_code ec;
  std::string tasks = "/proc/" + std::to_string(sentry) + "/task";
  for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
    if (ReadHostFile((t.path() / "comm").string()) == "sentry-notify\n") {
      return static_cast<pid_t>(std::stol(t.path().filename().string()));
    }
  }
  return -1;
}

// A guest of several tasks (colocation.h): the one that traps often shares
// the notification thread's one CPU while it does, the one that computes
// beside it is never pinned, and neither sees a pin of its own.
TEST(SentryProcessTest, TheTaskThatTrapsOftenIsFollowed) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: nothing is pinned";
  const char* script =
      "import os, subprocess, sys, time\n"
      "c = subprocess.Popen([sys.executable, '-c', 'import time\\nt = time.time()\\n"
      "while time.time() - t < 3.5: pass'])\n"
      "t = time.time()\n"
      "while time.time() - t < 1.8: os.stat('/proc/self/status')\n"  // traps often
      "seen = os.sched_getaffinity(0)\n"
      "t = time.time()\n"
      "while time.time() - t < 1.5: pass\n"  // computes
      "c.wait()\n"
      "print(len(seen))\n";
  std::unique_ptr<BackgroundRun> run = StartPython(script);
  ASSERT_GT(run->sentry(), 0);
  pid_t guest = run->Guest();
  ASSERT_GT(guest, 0);
  std::string all = AllowedCpus(getpid());
  usleep(1000000);  // the parent traps, the child computes
  pid_t child = -1;
  for (pid_t p : Children(guest)) child = p;
  pid_t notifier = NotifierOf(run->sentry());
  ASSERT_GT(child, 0);
  ASSERT_GT(notifier, 0);
  std::string trapping = AllowedCpus(guest);
  std::string computing = AllowedCpus(child);
  std::string notifying = AllowedCpus(notifier);
  usleep(1500000);  // both compute
  std::string after = AllowedCpus(guest);
  std::string notifying_after = AllowedCpus(notifier);
  EXPECT_EQ(trapping.find_first_of(",-"), std::string::npos) << trapping;  // one CPU
  EXPECT_EQ(notifying, trapping);
  EXPECT_EQ(computing, all);
  EXPECT_EQ(after, all);
  EXPECT_EQ(notifying_after, all);
  // What the pinned parent saw of its own CPUs: all of them.
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  const ProcessResult& r = run->Finish();
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, std::to_string(CPU_COUNT(&mine)) + "\n");
}

// A task whose affinity the guest set is its own: never followed.
TEST(SentryProcessTest, ATaskWithItsOwnAffinityIsNotFollowed) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: nothing is pinned";
  const char* script =
      "import os, subprocess, sys, time\n"
      "c = subprocess.Popen(['/bin/sleep', '3'])\n"
      "os.sched_setaffinity(0, os.sched_getaffinity(0))\n"
      "t = time.time()\n"
      "while time.time() - t < 2.0: os.stat('/proc/self/status')\n"  // traps often
      "c.wait()\n";
  std::unique_ptr<BackgroundRun> run = StartPython(script);
  ASSERT_GT(run->sentry(), 0);
  pid_t guest = run->Guest();
  ASSERT_GT(guest, 0);
  std::string all = AllowedCpus(getpid());
  usleep(1200000);
  pid_t notifier = NotifierOf(run->sentry());
  ASSERT_GT(notifier, 0);
  EXPECT_EQ(AllowedCpus(guest), all);
  EXPECT_EQ(AllowedCpus(notifier), all);
}

}  // namespace
}  // namespace sentry::testing
