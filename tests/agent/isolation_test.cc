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
#include <cstdio>
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

// This test's runs make their cgroups beside no other test's: the test
// process (and so its server, and the server's sandboxes, which make theirs
// under their own) moves into a cgroup of its own in each v1 controller the
// sentry uses, and back at the end. A cgroup another test's killed sentry
// leaves meanwhile is then not counted as this test's. Without root or v1,
// none (a run then makes no cgroup either).
class OwnCgroups final {
 public:
  OwnCgroups() {
    if (geteuid() != 0) return;
    std::ifstream f("/proc/self/cgroup");
    for (std::string line; std::getline(f, line);) {
      size_t a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      std::string path = line.substr(b + 1) == "/" ? "" : line.substr(b + 1);
      std::stringstream controllers(line.substr(a + 1, b - a - 1));
      for (std::string c; std::getline(controllers, c, ',');) {
        if (c != "memory" && c != "pids" && c != "cpu" && c != "cpuacct") continue;
        std::string parent = "/sys/fs/cgroup/" + c + path;
        std::string dir = parent + "/isolation-test-" + std::to_string(getpid());
        if (mkdir(dir.c_str(), 0755) == 0 && Join(dir)) moved_.push_back({parent, dir});
      }
    }
  }
  ~OwnCgroups() {
    for (const auto& [parent, dir] : moved_) {
      Join(parent);
      rmdir(dir.c_str());  // fails while a cgroup of a run is left in it
    }
  }
  // sentry-PID cgroups in them whose process is gone.
  std::vector<std::string> Stale() const {
    std::vector<std::string> out;
    for (const auto& [parent, dir] : moved_) {
      DIR* d = opendir(dir.c_str());
      while (dirent* e = d ? readdir(d) : nullptr) {
        std::string name = e->d_name;
        if (e->d_type == DT_DIR && name.rfind("sentry-", 0) == 0 &&
            kill(atoi(name.c_str() + 7), 0) != 0) {
          out.push_back(dir + "/" + name);
        }
      }
      if (d) closedir(d);
    }
    return out;
  }
  bool made() const { return !moved_.empty(); }

 private:
  static bool Join(const std::string& dir) {
    std::ofstream procs(dir + "/cgroup.procs");
    procs << getpid() << std::flush;
    return procs.good();
  }
  std::vector<std::pair<std::string, std::string>> moved_;  // (where it was, its own)
};

TEST(Isolation, NoRunSeesWhatAnEarlierOneLeft) {
  int runs = 100;
  if (const char* env = getenv("SENTRY_ISOLATION_RUNS")) runs = atoi(env);
  // The sleeper each run leaves is named for this test process: the same
  // probe's sleepers, of another agent_test running beside it (as the user),
  // are not this one's.
  const std::string sleeper = "iso-sleeper-" + std::to_string(getpid());
  std::string probe = Probe();
  ASSERT_FALSE(probe.empty());
  for (size_t at = 0; (at = probe.find("\"iso-sleeper\"]", at)) != std::string::npos;) {
    probe.replace(at + 1, 11, sleeper);
    at += sleeper.size();
  }
  ASSERT_NE(probe.find(sleeper), std::string::npos);
  OwnCgroups cgroups;
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
  EXPECT_EQ(HostProcessesWith(sleeper).size(), 0u);
  for (const std::string& c : cgroups.Stale())
    ADD_FAILURE() << "a dead run's cgroup is left: " << c;
  if (!cgroups.made()) std::printf("(no cgroup of its own here: its runs' cgroups unchecked)\n");
}

}  // namespace
}  // namespace sentry::testing
