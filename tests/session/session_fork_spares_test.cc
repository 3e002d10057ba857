// The supervisors of forked sessions started ahead (sentry/session/
// fork_spares.h), through the real `sentry serve`: none before the first
// fork; a fork's child is adopted by one started before the fork was asked;
// the pool refills to its size and no further; a server's end ends the
// unused ones with their cgroups; 100 children in one request work and end.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sentry/base/small_file.h"
#include "tests/session/session_client.h"

namespace sentry::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The value of a gauge in /metrics (-1 if absent).
long Gauge(const SessionClient& c, const std::string& name) {
  std::string text = c.Call("GET", "/metrics").body;
  size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::atol(text.c_str() + at + name.size() + 2);
}

bool WaitGauge(const SessionClient& c, const std::string& name, long want, double sec) {
  auto deadline = Clock::now() + std::chrono::duration<double>(sec);
  while (Gauge(c, name) != want) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

std::string Comm(pid_t pid) {
  // Not an ifstream: a read of a process that ends meanwhile fails
  // (ESRCH), which libstdc++'s filebuf throws.
  std::string comm = ReadFileText("/proc/" + std::to_string(pid) + "/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// Whether pid runs (a zombie the init of this host has yet to reap does not).
bool Alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// The tracer of pid (its supervisor, for a session's kernel), or 0.
pid_t TracerOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("TracerPid:", 0) == 0) return std::atoi(line.c_str() + 10);
  }
  return 0;
}

// The server's descendants that run python (the sessions' kernels).
std::set<pid_t> Kernels(pid_t server) {
  std::set<pid_t> out;
  for (pid_t p : Descendants(server)) {
    if (Comm(p).rfind("python3", 0) == 0) out.insert(p);
  }
  return out;
}

constexpr const char* kSpares = "sentry_session_fork_spares_ready";

TEST(SessionForkSparesTest, StartedAfterTheFirstForkTakenRefilledAndEndedWithTheServer) {
  if (geteuid() != 0) GTEST_SKIP() << "a child's supervisor maps its ids as root only (adopt.h)";
  TenantTokens tokens;
  ServeProcess server({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                       "--session-fork-spares", "2"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  std::string parent = alice.Create();
  ASSERT_FALSE(parent.empty());
  ASSERT_EQ(alice.Eval(parent, "x = 41\nx"), "41");
  // A server that has not forked starts none.
  std::set<pid_t> before_fork = Descendants(server.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Gauge(alice, kSpares), 0);
  EXPECT_EQ(Descendants(server.pid()), before_fork);

  // The first fork starts its child's supervisor itself, then the pool fills
  // to its size, and no further.
  HttpReply first = alice.Call("POST", "/v1/sessions/" + parent + "/fork", R"({"count":1})");
  ASSERT_EQ(first.status, 201) << first.body;
  ASSERT_TRUE(WaitGauge(alice, kSpares, 2, 20)) << Gauge(alice, kSpares);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Gauge(alice, kSpares), 2);
  std::set<pid_t> ahead = Descendants(server.pid());  // the spares among them

  // The next fork's children are adopted by supervisors that ran before it
  // was asked (each child's tracer).
  std::set<pid_t> kernels = Kernels(server.pid());
  HttpReply second = alice.Call("POST", "/v1/sessions/" + parent + "/fork", R"({"count":2})");
  ASSERT_EQ(second.status, 201) << second.body;
  std::vector<std::string> kids = ForkedIds(second);
  ASSERT_EQ(kids.size(), 2u);
  std::vector<pid_t> spare_pids;
  for (pid_t k : Kernels(server.pid())) {
    if (kernels.count(k)) continue;
    pid_t s2 = TracerOf(k);
    EXPECT_TRUE(ahead.count(s2)) << "child kernel " << k << " is traced by " << s2
                                 << ", started with the fork, not ahead";
    spare_pids.push_back(s2);
  }
  EXPECT_EQ(spare_pids.size(), 2u);
  for (const std::string& k : kids) EXPECT_EQ(alice.Eval(k, "x + 1"), "42") << k;
  // Refilled (two new ones) after the fork.
  ASSERT_TRUE(WaitGauge(alice, kSpares, 2, 20)) << Gauge(alice, kSpares);

  // The server's end ends the unused spares, their cgroups with them.
  std::set<pid_t> unused;
  for (pid_t p : Descendants(server.pid())) {
    if (!ahead.count(p) && !before_fork.count(p) && Comm(p).rfind("python3", 0) != 0) {
      unused.insert(p);
    }
  }
  EXPECT_GE(unused.size(), 2u);
  EXPECT_EQ(server.Stop(), 0);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  for (pid_t p : unused) {
    while (Alive(p) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(Alive(p)) << "spare " << p << " (" << Comm(p) << ") outlived the server";
    EXPECT_FALSE(SentryCgroupExists(p)) << "spare " << p << "'s cgroup is left";
  }
}

// A spare fits only a parent of the server's own limits: another parent's
// children get supervisors started for them (and the pool is left alone).
TEST(SessionForkSparesTest, AParentOfOtherLimitsTakesNoSpare) {
  if (geteuid() != 0) GTEST_SKIP() << "a child's supervisor maps its ids as root only (adopt.h)";
  TenantTokens tokens;
  ServeProcess server({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                       "--session-fork-spares", "1"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  std::string plain = alice.Create();
  ASSERT_FALSE(plain.empty());
  ASSERT_EQ(alice.Call("POST", "/v1/sessions/" + plain + "/fork", R"({"count":1})").status, 201);
  ASSERT_TRUE(WaitGauge(alice, kSpares, 1, 20));
  std::string small = alice.Create({{"limits", {{"memoryMb", 300}}}});
  ASSERT_FALSE(small.empty());
  ASSERT_EQ(alice.Eval(small, "y = 7\ny"), "7");
  std::set<pid_t> ahead = Descendants(server.pid());
  std::set<pid_t> kernels = Kernels(server.pid());
  HttpReply forked = alice.Call("POST", "/v1/sessions/" + small + "/fork", R"({"count":1})");
  ASSERT_EQ(forked.status, 201) << forked.body;
  EXPECT_EQ(Gauge(alice, kSpares), 1);  // not taken
  for (pid_t k : Kernels(server.pid())) {
    if (kernels.count(k)) continue;
    EXPECT_FALSE(ahead.count(TracerOf(k))) << k;
  }
  std::vector<std::string> kids = ForkedIds(forked);
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(alice.Eval(kids[0], "y * 6"), "42");
  EXPECT_EQ(server.Stop(), 0);
}

// The issue's 100 children in one request: each a working session of its
// own; all end, and nothing of them is left. --pids-limit 1024: each child's
// user namespace nests in its parent's, where the kernel counts every task
// of every child against the parent's RLIMIT_NPROC (its --pids) too: six
// threads a child, 100 children need 600 of it.
TEST(SessionForkSparesTest, AHundredChildrenAtOnceWorkAndEnd) {
  if (geteuid() != 0) GTEST_SKIP() << "a child's supervisor maps its ids as root only (adopt.h)";
  TenantTokens tokens;
  ServeProcess server({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                       "--session-fork-spares", "0", "--pids-limit", "1024", "--max-sessions",
                       "128", "--max-sessions-per-token", "128"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice);
  const size_t base = Descendants(server.pid()).size();
  std::string parent = alice.Create();
  ASSERT_FALSE(parent.empty());
  ASSERT_EQ(alice.Eval(parent, "x = 41\nx"), "41");
  HttpReply forked = alice.Call("POST", "/v1/sessions/" + parent + "/fork", R"({"count":100})");
  ASSERT_EQ(forked.status, 201) << forked.body;
  std::vector<std::string> kids = ForkedIds(forked);
  ASSERT_EQ(kids.size(), 100u);
  EXPECT_EQ(std::set<std::string>(kids.begin(), kids.end()).size(), 100u);
  for (size_t i : {0, 1, 50, 98, 99}) {
    EXPECT_EQ(alice.Eval(kids[i], "x = x + 1\nx"), "42") << i;
  }
  EXPECT_EQ(alice.Eval(kids[1], "x"), "42");
  EXPECT_EQ(alice.Eval(kids[2], "x"), "41");  // its own, untouched by the others
  EXPECT_EQ(alice.Eval(parent, "x"), "41");
  for (const std::string& k : kids) EXPECT_EQ(alice.Delete(k).status, 200);
  EXPECT_EQ(alice.Delete(parent).status, 200);
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Descendants(server.pid()).size() > base && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Descendants(server.pid()).size(), base);
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace sentry::testing
