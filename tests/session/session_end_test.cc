// How sessions end, through the real `sentry serve`: every reason reached
// and then answered as 410 {"error": {"reason", "at"}}; hostile cells end
// their own session only; many sessions opened and closed leave nothing on
// the host (processes, cgroups).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "sentry/base/small_file.h"
#include "tests/session/session_client.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

void ExpectEnded(const SessionClient& c, const std::string& id, const std::string& reason) {
  HttpReply r = c.Cell(id, "1");
  EXPECT_EQ(r.status, 410) << r.body;
  json e = r.Json()["error"];
  EXPECT_EQ(e["reason"], reason) << r.body;
  EXPECT_TRUE(e["at"].is_string()) << r.body;
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Whether pid is gone (or a zombie its parent has yet to reap) within 3 s.
bool Ends(pid_t pid) {
  for (int i = 0; i < 300; ++i) {
    // Not an ifstream: a read of a process that ends meanwhile fails
    // (ESRCH), which libstdc++'s filebuf throws.
    std::string stat = ReadFileText("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat.substr(paren + 2, 1) == "Z") return true;
    SleepMs(10);
  }
  return false;
}

TEST(SessionEndTest, EveryReasonIsReported) {
  ServeProcess server({"--session-spares", "0", "--pool-size", "0"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);

  std::string idle = c.Create({{"idleTimeoutMs", 400}});
  std::string lifetime = c.Create({{"maxLifetimeMs", 1500}});
  ASSERT_FALSE(idle.empty());
  ASSERT_FALSE(lifetime.empty());
  // Kept busy, the lifetime session is never idle; it ends all the same.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.Eval(lifetime, "1"), "1");
    SleepMs(250);
  }
  SleepMs(1000);
  ExpectEnded(c, idle, "idle");
  ExpectEnded(c, lifetime, "lifetime");

  // The whole cgroup's memory: a hog kills the kernel, the session says so.
  std::string memory = c.Create({{"limits", {{"memoryMb", 96}}}});
  ASSERT_FALSE(memory.empty());
  json hog = c.Cell(memory, "b = bytearray(400 << 20)\nlen(b)").Json();
  EXPECT_EQ(hog["sessionEnded"]["reason"], "memory") << hog;
  EXPECT_EQ(hog["limit"], "memory");
  ExpectEnded(c, memory, "memory");

  // The interpreter dies.
  std::string crashed = c.Create();
  json died = c.Cell(crashed, "import os\nos._exit(3)").Json();
  EXPECT_EQ(died["sessionEnded"]["reason"], "crashed") << died;
  ExpectEnded(c, crashed, "crashed");

  // A cell that ignores its interrupt past the grace ends the session.
  std::string stubborn = c.Create();
  json t = c.Cell(stubborn,
                  "import time\nwhile True:\n  try:\n    time.sleep(10)\n"
                  "  except KeyboardInterrupt:\n    pass",
                  200)
               .Json();
  EXPECT_TRUE(t["timedOut"].get<bool>()) << t;
  EXPECT_EQ(t["sessionEnded"]["reason"], "timeout");
  ExpectEnded(c, stubborn, "timeout");

  std::string deleted = c.Create();
  EXPECT_EQ(c.Delete(deleted).Json()["ended"]["reason"], "deleted");
  ExpectEnded(c, deleted, "deleted");
  EXPECT_EQ(c.Delete(deleted).status, 410);
  EXPECT_EQ(c.Call("GET", "/v1/sessions/" + deleted + "/files?path=x").status, 410);
  EXPECT_EQ(c.Cell("ses_000000000000000000000000", "1").status, 404);
  std::string metrics = c.Call("GET", "/metrics").body;
  for (const char* reason : {"idle", "lifetime", "memory", "crashed", "timeout", "deleted"}) {
    EXPECT_NE(metrics.find(std::string("sentry_sessions_ended_total{reason=\"") + reason + "\"} 1"),
              std::string::npos)
        << reason << "\n"
        << metrics;
  }

  // The server's shutdown ends the sessions; a cell in progress says so.
  std::string last = c.Create();
  HttpReply during;
  std::thread cell([&] { during = c.Cell(last, "import time\ntime.sleep(30)"); });
  SleepMs(500);
  kill(server.pid(), SIGTERM);
  cell.join();
  EXPECT_EQ(during.Json()["sessionEnded"]["reason"], "shutdown") << during.body;
  EXPECT_EQ(server.Stop(), 0);
}

TEST(SessionEndTest, HostileCellsEndOnlyTheirOwnSession) {
  ServeProcess server({"--session-spares", "0", "--pool-size", "0"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);
  std::string calm = c.Create();
  c.Cell(calm, "calm = 'still here'");

  // A fork bomb meets the session's process cap; the calm session goes on.
  std::string bomb = c.Create({{"limits", {{"maxProcesses", 24}}}});
  json b = c.Cell(bomb,
                  "import os, time\nn = 0\nfor i in range(200):\n  try:\n"
                  "    if os.fork() == 0:\n      time.sleep(60)\n      os._exit(0)\n    n += 1\n"
                  "  except OSError:\n    break\nn",
                  20000)
               .Json();
  EXPECT_LE(
      std::stoi(b["results"].empty() ? "999" : b["results"][0]["text/plain"].get<std::string>()),
      24)
      << b;
  EXPECT_EQ(c.Eval(calm, "calm"), "'still here'");

  // A process left behind (its own session, detached) goes with the session.
  std::string leaver = c.Create();
  c.Cell(leaver, "import subprocess\nsubprocess.Popen(['sleep', '93.25'], start_new_session=True)");
  EXPECT_FALSE(ProcessesWith("93.25").empty());
  EXPECT_EQ(c.Delete(leaver).status, 200);
  EXPECT_TRUE(ProcessesWith("93.25").empty());
  EXPECT_EQ(c.Delete(bomb).status, 200);
  EXPECT_EQ(c.Eval(calm, "calm"), "'still here'");
}

TEST(SessionEndTest, BadFramesEndTheSessionNotTheServer) {
  ServeProcess server({"--session-spares", "0", "--pool-size", "0", "--session-kernel",
                       std::string(SESSION_TEST_DIR) + "/bad_frame_kernel.py"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);
  std::string id = c.Create();
  ASSERT_FALSE(id.empty());
  json r = c.Cell(id, "1").Json();
  EXPECT_EQ(r["sessionEnded"]["reason"], "crashed") << r;
  EXPECT_NE(r["sessionEnded"]["detail"].get<std::string>().find("frame"), std::string::npos);
  ExpectEnded(c, id, "crashed");
  EXPECT_EQ(server.Request("GET", "/v1/health").status, 200);
}

TEST(SessionEndTest, ManySessionsLeaveNothing) {
  // 20 here (seconds); bench/session.py opens and closes 200.
  ServeProcess server({"--session-spares", "2", "--pool-size", "0"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);
  std::set<pid_t> before = Descendants(server.pid());  // its zygotes
  std::set<pid_t> seen;
  for (int i = 0; i < 20; ++i) {
    std::string id = c.Create();
    ASSERT_FALSE(id.empty()) << i;
    std::string mark = "marker-" + std::to_string(i);
    // Nothing of an earlier session is there.
    EXPECT_EQ(c.Eval(id, "import os\n'v' in dir() or os.path.exists('/home/sandbox/prev')"),
              "False");
    EXPECT_EQ(c.Eval(id, "v = '" + mark + "'\nv"), "'" + mark + "'");
    c.Call("PUT", "/v1/sessions/" + id + "/files?path=prev", "x");
    for (pid_t p : Descendants(server.pid())) {
      if (!before.count(p)) seen.insert(p);
    }
    EXPECT_EQ(c.Delete(id).status, 200);
  }
  server.Stop();
  for (pid_t p : seen) {
    std::string what = ReadFileText("/proc/" + std::to_string(p) + "/status");
    EXPECT_TRUE(Ends(p)) << "pid " << p << " outlived its session: " << what.substr(0, 300);
    EXPECT_FALSE(SentryCgroupExists(p)) << "the cgroup of " << p;
  }
}

}  // namespace
}  // namespace sentry::testing
