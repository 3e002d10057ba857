// The sandbox's cgroups (cgroup v1) against the host kernel: made, joined by
// a process, and removed once it is gone. Needs root and v1's memory and pids
// controllers; skipped elsewhere.
#include "sentry/run/cgroups.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <string>

namespace sentry {
namespace {

// <root>/<controller>/<this process's cgroup>/<name>, where Cgroups makes it.
std::string CgroupDir(const std::string& controller, const std::string& name) {
  std::ifstream f("/proc/self/cgroup");
  for (std::string line; std::getline(f, line);) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (controllers.find("," + controller + ",") == std::string::npos) continue;
    std::string path = line.substr(b + 1);
    return "/sys/fs/cgroup/" + controller + (path == "/" ? "" : path) + "/" + name;
  }
  return "";
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A task on its way out holds every controller's cgroup until it is gone;
// Remove gives them all the same time. (It used to try memory alone first,
// for 200 ms, and give up on it while the process still lived, then remove
// the pids cgroup once it was gone: a memory cgroup was left behind.)
TEST(CgroupsTest, RemoveWaitsForALastTaskInEveryControllerAtOnce) {
  if (geteuid() != 0 || !Exists("/sys/fs/cgroup/memory/cgroup.procs") ||
      !Exists("/sys/fs/cgroup/pids/cgroup.procs")) {
    GTEST_SKIP() << "needs root and cgroup v1's memory and pids controllers";
  }
  // Not "sentry-PID": another sentry's sweep of stale cgroups leaves it alone.
  const std::string name = "sentry-unit-" + std::to_string(getpid());
  Cgroups cgroups;
  cgroups.Create(name, {.memory_bytes = 64 << 20, .pids = 16});
  ASSERT_TRUE(cgroups.has_memory() && cgroups.has_pids());
  const std::string memory = CgroupDir("memory", name), pids = CgroupDir("pids", name);
  ASSERT_TRUE(Exists(memory) && Exists(pids)) << memory << " " << pids;
  int joined[2];
  ASSERT_EQ(pipe(joined), 0);
  std::array<UniqueFd, 4> files = cgroups.OpenJoinFiles();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (const UniqueFd& f : files) {
      if (f && write(f.get(), "0", 1) != 1) _exit(1);
    }
    (void)!write(joined[1], "j", 1);
    usleep(400 * 1000);  // longer than the old 200 ms for memory's cgroup
    _exit(0);
  }
  for (UniqueFd& f : files) f.Reset();
  close(joined[1]);
  char c;
  ASSERT_EQ(read(joined[0], &c, 1), 1);
  close(joined[0]);
  auto start = std::chrono::steady_clock::now();
  cgroups.Remove();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);
  EXPECT_FALSE(Exists(memory)) << memory << " left after " << ms << " ms";
  EXPECT_FALSE(Exists(pids)) << pids << " left after " << ms << " ms";
  EXPECT_GE(ms, 300) << "removed while the process was in it";
  rmdir(memory.c_str());  // whatever a failure left
  rmdir(pids.c_str());
}

// A cold run sweeps at most every interval (SweepStaleNowAndThen): the
// stamp's mtime says when the last sweep began. A dead sentry's cgroup is
// swept by the first call, one left after it waits for the interval.
TEST(CgroupsTest, SweepsNowAndThenByTheStamp) {
  if (geteuid() != 0 || !Exists("/sys/fs/cgroup/pids/cgroup.procs")) {
    GTEST_SKIP() << "needs root and cgroup v1's pids controller";
  }
  // A pid no process has now: a child's, reaped.
  pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string stale = CgroupDir("pids", "sentry-" + std::to_string(dead));
  char dir[] = "/tmp/sweep-stamp-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string stamp = std::string(dir) + "/stamp";
  constexpr std::chrono::milliseconds kInterval{60000};

  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0) << stale;
  Cgroups::SweepStaleNowAndThen(stamp.c_str(), kInterval);
  EXPECT_FALSE(Exists(stale));  // no stamp yet: swept
  ASSERT_TRUE(Exists(stamp));

  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0) << stale;
  Cgroups::SweepStaleNowAndThen(stamp.c_str(), kInterval);
  EXPECT_TRUE(Exists(stale));  // swept a moment ago: left for later

  timespec old[2] = {{0, UTIME_OMIT}, {time(nullptr) - 61, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, stamp.c_str(), old, 0), 0);
  Cgroups::SweepStaleNowAndThen(stamp.c_str(), kInterval);
  EXPECT_FALSE(Exists(stale));  // the interval is over: swept
  rmdir(stale.c_str());
  unlink(stamp.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace sentry
