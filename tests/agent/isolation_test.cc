// Many runs through one `sentry serve`: none sees a file, environment
// variable, process, socket or Python global an earlier one left (each run
// leaves all of these: isolation_probe.py), and nothing is left on the host.
// SENTRY_ISOLATION_RUNS sets the count (bench/agent.sh runs 1,000).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/agent/agent_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

std::string Probe() {
  std::ifstream in(std::string(AGENT_TEST_DIR) + "/isolation_probe.py");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Host processes whose command line holds marker (a probe's sleeper).
int ProcessesWith(const std::string& marker) {
  int n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (atoi(e->d_name) <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(marker) != std::string::npos) ++n;
  }
  closedir(d);
  return n;
}

// sentry-PID cgroups (a run's) whose process is gone, at most 4 levels down.
void StaleCgroups(const std::string& dir, int depth, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (e->d_type != DT_DIR || name == "." || name == "..") continue;
    if (name.rfind("sentry-", 0) == 0) {
      if (kill(atoi(name.c_str() + 7), 0) != 0) out->push_back(dir + "/" + name);
    } else if (depth < 4) {
      StaleCgroups(dir + "/" + name, depth + 1, out);
    }
  }
  closedir(d);
}

TEST(Isolation, NoRunSeesWhatAnEarlierOneLeft) {
  int runs = 100;
  if (const char* env = getenv("SENTRY_ISOLATION_RUNS")) runs = atoi(env);
  const std::string probe = Probe();
  ASSERT_FALSE(probe.empty());
  std::vector<std::string> stale_before;
  StaleCgroups("/sys/fs/cgroup", 0, &stale_before);
  ServeProcess serve({"--max-concurrent", "2"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  std::atomic<int> next{0}, clean{0};
  std::vector<std::string> failures;
  std::mutex mu;
  auto client = [&] {
    for (int i; (i = next++) < runs;) {
      HttpReply r = serve.Post(
          {{"language", "python"},
           {"code", "import sys\nsys.argv.append('" + std::to_string(i) + "')\n" + probe}});
      json j = r.Json();
      if (r.status == 200 && j["stdout"] == "CLEAN\n" && j["exitCode"] == 0) {
        ++clean;
      } else {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(std::to_string(i) + ": " + r.body.substr(0, 2000));
      }
    }
  };
  std::thread a(client), b(client);
  a.join();
  b.join();
  EXPECT_EQ(clean.load(), runs) << (failures.empty() ? "" : failures[0]);
  EXPECT_EQ(serve.Stop(), 0);
  // Nothing of theirs on the host: no file, no process, no socket, no cgroup.
  for (const char* d : {"/tmp", "/var/tmp", "/dev/shm"}) {
    DIR* dir = opendir(d);
    while (dirent* e = readdir(dir)) {
      EXPECT_NE(std::string(e->d_name).rfind("iso-", 0), 0u) << d << "/" << e->d_name;
    }
    closedir(dir);
  }
  EXPECT_NE(access("/tmp/iso.sock", F_OK), 0);
  std::ifstream unix_sockets("/proc/net/unix");
  std::string text((std::istreambuf_iterator<char>(unix_sockets)), {});
  EXPECT_EQ(text.find("@iso-abstract"), std::string::npos);
  EXPECT_EQ(ProcessesWith("iso-sleeper"), 0);
  // (Another sentry on this host, killed, may leave its own: only new ones count.)
  std::vector<std::string> stale;
  StaleCgroups("/sys/fs/cgroup", 0, &stale);
  for (const std::string& c : stale) {
    EXPECT_NE(std::find(stale_before.begin(), stale_before.end(), c), stale_before.end())
        << "a dead run's cgroup is left: " << c;
  }
}

}  // namespace
}  // namespace sentry::testing
