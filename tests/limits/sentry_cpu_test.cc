// The sentry's own CPU on a guest's behalf, through the real binary (issue 23,
// item 3). The sentry runs outside the guest's cgroup, so --cpus caps only the
// guest; a guest whose threads do nothing but cheap trapped calls made the
// sentry burn 13 to 20 times the guest's cap. The bound the README states:
// over a run, the sentry's CPU <= 2 x the cap + 0.3 s. Measured here as the
// sentry process's own CPU (utime + stime of /proc/PID/stat, read once it
// has exited and before it is reaped: every thread of it, no child of it).
//
//   storms:   16 threads of getdents64 (64-byte buffer) over an 18,000-entry
//             directory, and 16 threads of stat of a missing path (the
//             throttle, not only the listing's cursor, bounds it), for 5 s
//             at --cpus 0.05 (0.25 s of CPU): the sentry within 0.8 s;
//   no cap:   an ordinary workload without --cpus is never throttled;
//   groups:   a root sentry holds no supplementary group while it runs.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/limits/limits_util.h"
#include "tests/util/json_read.h"
#include "tests/util/subprocess.h"

namespace sentry::limits {
namespace {

constexpr double kSeconds = 5;
constexpr double kCpus = 0.05;
// 2 x the cap over the storm + 0.3 s.
constexpr double kBoundSec = 2 * kCpus * kSeconds + 0.3;
constexpr int kThreads = 16;
constexpr int kEntries = 18000;

struct Measured {
  Finished run;
  double sentry_cpu_sec = -1;  // utime + stime of the sentry process itself
  std::optional<nlohmann::json> result;
};

// The sentry's own CPU once it has exited (a zombie still shows it).
double ZombieCpuSec(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) < 0) return -1;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  // Fields after the command: state (3) ... utime (14), stime (15).
  std::vector<std::string> fields;
  size_t at = paren + 2;
  while (at < stat.size()) {
    size_t end = stat.find(' ', at);
    if (end == std::string::npos) end = stat.size();
    fields.push_back(stat.substr(at, end - at));
    at = end + 1;
  }
  if (fields.size() < 13) return -1;
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) / ticks;
}

Measured RunMeasured(const std::vector<std::string>& flags, const std::vector<std::string>& cmd) {
  Child c = SpawnSentry(flags, cmd);
  Measured m;
  m.sentry_cpu_sec = ZombieCpuSec(c.pid);
  m.run = Collect(c, 60);
  m.result = ResultOf(m.run.out);
  return m;
}

std::string Describe(const Measured& m) {
  std::string s = "sentry CPU " + std::to_string(m.sentry_cpu_sec) + " s, run " +
                  std::to_string(m.run.wall) + " s, exit " + std::to_string(m.run.exit_code);
  if (m.result) {
    s += ", guest cpuMs " + std::to_string(Int(At(*m.result, "cpuMs")));
    if (m.result->contains("sentryCpuMs")) {
      s += ", sentryCpuMs " + std::to_string(Int(At(*m.result, "sentryCpuMs"))) +
           ", sentryThrottledMs " + std::to_string(Int(At(*m.result, "sentryThrottledMs")));
    }
    s += ", guest said: " + Clip(Str(At(*m.result, "stdout")), 200);
  }
  return s + "\nstderr: " + Clip(m.run.err, 600);
}

std::string GuestBinary() { return CPU_STORM_GUEST; }

// A host directory of n empty files, removed with the fixture.
class StormDir final {
 public:
  explicit StormDir(int n) {
    char tmpl[] = "/tmp/sentry-cpu-storm.XXXXXX";
    path_ = mkdtemp(tmpl);
    chmod(path_.c_str(), 0755);
    for (int i = 0; i < n; ++i) {
      std::string name = path_ + "/entry-" + std::to_string(i);
      int fd = open(name.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd >= 0) close(fd);
    }
  }
  ~StormDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> StormFlags(std::vector<std::string> more) {
  std::vector<std::string> flags = {"--json",
                                    "--cpus",
                                    "0.05",
                                    "--timeout",
                                    "30",
                                    "--copy",
                                    GuestBinary() + ":/home/sandbox/storm"};
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

void ExpectWithinBound(const Measured& m) {
  std::printf("  %s\n", Describe(m).c_str());
  ASSERT_EQ(m.run.exit_code, 0) << Describe(m);
  ASSERT_TRUE(m.result) << Describe(m);
  EXPECT_NE(Str(At(*m.result, "stdout")).find("calls "), std::string::npos) << Describe(m);
  ASSERT_GE(m.sentry_cpu_sec, 0) << "could not read the sentry's CPU time";
  EXPECT_LE(m.sentry_cpu_sec, kBoundSec) << Describe(m);
  // The result says it too: the sentry's CPU on the guest's calls, and that
  // the guest's calls waited for it.
  EXPECT_LE(Int(At(*m.result, "sentryCpuMs")), kBoundSec * 1000) << Describe(m);
  EXPECT_GT(Int(At(*m.result, "sentryThrottledMs")), 0) << Describe(m);
}

TEST(SentryCpu, GetdentsStormStaysWithinTwiceTheCapPlusAThirdOfASecond) {
  StormDir dir(kEntries);
  Measured m = RunMeasured(StormFlags({"-v", dir.path() + ":/data:ro"}),
                           {"/home/sandbox/storm", "getdents", "/data", std::to_string(kThreads),
                            std::to_string(kSeconds)});
  ExpectWithinBound(m);
}

// The same bound for a call the cursor does not help: a stat of a missing
// path (a walk and ENOENT). The path is made long (1,500 "./" steps) so that
// the sentry's part of each call outweighs the guest's, which its own cap
// would otherwise bound first.
TEST(SentryCpu, StatStormStaysWithinTwiceTheCapPlusAThirdOfASecond) {
  std::string path = "/usr/";
  for (int i = 0; i < 1500; ++i) path += "./";
  path += "no-such-name";
  Measured m = RunMeasured(StormFlags({}), {"/home/sandbox/storm", "stat", path,
                                            std::to_string(kThreads), std::to_string(kSeconds)});
  ExpectWithinBound(m);
}

// Without --cpus the share is one CPU (twice that for the sentry): an
// ordinary busy workload of trapped calls is never held back.
TEST(SentryCpu, FindOverUsrWithoutCapIsNotThrottled) {
  Measured m = RunMeasured({"--json", "--timeout", "60"},
                           {"/usr/bin/find", "/usr", "-name", "no-such-name"});
  std::printf("  %s\n", Describe(m).c_str());
  ASSERT_TRUE(m.result) << Describe(m);
  EXPECT_GT(Int(At(*m.result, "sentryCpuMs")), 0) << Describe(m);
  EXPECT_EQ(Int(At(*m.result, "sentryThrottledMs")), 0) << Describe(m);
}

// A root sentry drops root's supplementary groups at start: a thread that
// takes a guest's fsuid/fsgid must not keep group 0 (or any other) beside it.
TEST(SentryGroups, RootSentryHoldsNoSupplementaryGroups) {
  if (geteuid() != 0) GTEST_SKIP() << "the sentry drops groups only when it runs as root";
  std::vector<std::string> argv = {"/usr/bin/setpriv", "--groups", "0,4,27", "--"};
  std::vector<std::string> run =
      sentry::testing::SentryRunArgv({"--timeout", "20"}, {"/bin/sleep", "3"});
  argv.insert(argv.end(), run.begin(), run.end());
  Child c = Spawn(argv);
  // setpriv execs the sentry: the same pid. Every thread, once started.
  usleep(1500 * 1000);
  std::string task_dir = "/proc/" + std::to_string(c.pid) + "/task";
  std::vector<std::string> groups;
  if (DIR* d = opendir(task_dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string status = ReadFile(task_dir + "/" + e->d_name + "/status");
      size_t at = status.find("Groups:");
      if (at == std::string::npos) continue;
      groups.push_back(status.substr(at, status.find('\n', at) - at));
    }
    closedir(d);
  }
  Finished f = Collect(c, 30);
  EXPECT_EQ(f.exit_code, 0) << f.err;
  ASSERT_FALSE(groups.empty()) << "no thread of the sentry was read";
  for (std::string g : groups) {
    while (!g.empty() && (g.back() == ' ' || g.back() == '\t')) g.pop_back();
    EXPECT_EQ(g, "Groups:") << g;
  }
}

}  // namespace
}  // namespace sentry::limits
