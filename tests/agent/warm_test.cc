// `sentry serve` and `sentry mcp` with a pool of warm interpreters
// (--pool-size): a warm run's result is the cold run's, a request the pool
// cannot take runs cold, and no warm run sees what an earlier one left.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/agent/agent_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

// A value of GET /metrics (-1 if missing).
long Metric(const ServeProcess& serve, const std::string& name) {
  std::istringstream text(serve.Request("GET", "/metrics").body);
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stol(line.substr(name.size() + 1));
  }
  return -1;
}

// Waits until the pool has `n` interpreters ready (a run then goes warm).
bool WaitReady(const ServeProcess& serve, long n) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < end) {
    if (Metric(serve, "sentry_pool_ready") >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// A result without what differs from run to run.
json Stable(json r) {
  for (const char* key :
       {"durationMs", "cpuMs", "sentryCpuMs", "sentryThrottledMs", "peakMemoryBytes"}) {
    r.erase(key);
  }
  return r;
}

const json kRequests = json::array({
    {{"language", "python"}, {"code", "print(48271*6933)"}},
    {{"language", "python"}, {"code", "def f():\n    raise ValueError('bad value')\nf()\n"}},
    {{"language", "python"}, {"code", "import sys\nprint('out')\nsys.exit(7)"}},
    {{"language", "python"},
     {"code", "import sys\nprint(sys.stdin.read()[::-1])"},
     {"stdin", "abc\ndef"}},
    {{"language", "python"},
     {"code", "import os\nprint(open('in/data.txt').read().upper(), os.getcwd())"},
     {"files", {{"in/data.txt", "hello"}, {"/tmp/abs.txt", "x"}}}},
    {{"language", "python"},
     {"code", "open('out.txt','w').write('made')\nprint(1)"},
     {"returnFiles", {"out.txt"}}},
    // A file left open is flushed by the interpreter's exit, before it is read
    // back; one never made, and bytes that are not text, as a cold run has them.
    {{"language", "python"},
     {"code",
      "f = open('late.txt', 'w')\nf.write('flushed at exit')\n"
      "open('/tmp/b.bin', 'wb').write(bytes(range(256)) * 3)"},
     {"returnFiles", {"late.txt", "missing.txt", "/tmp/b.bin"}}},
    {{"language", "python"}, {"code", "print('x' * 100)"}, {"limits", {{"maxOutputBytes", 20}}}},
});

TEST(Warm, ServeResultsAreTheColdOnes) {
  ServeProcess cold({"--pool-size", "0"});
  ServeProcess warm({"--pool-size", "1"});
  ASSERT_TRUE(cold.ok()) << cold.Stderr();
  ASSERT_TRUE(warm.ok()) << warm.Stderr();
  EXPECT_EQ(Metric(cold, "sentry_pool_ready"), 0);
  long warm_runs = 0;
  for (const json& req : kRequests) {
    ASSERT_TRUE(WaitReady(warm, 1)) << warm.Stderr();
    HttpReply c = cold.Post(req);
    HttpReply w = warm.Post(req);
    ASSERT_EQ(c.status, 200) << c.body;
    ASSERT_EQ(w.status, 200) << w.body;
    EXPECT_EQ(Stable(w.Json()), Stable(c.Json())) << req.dump();
    EXPECT_EQ(Metric(warm, "sentry_pool_runs_total"), ++warm_runs) << req.dump();
  }
  // bash runs cold, with the same result.
  HttpReply bash = warm.Post({{"language", "bash"}, {"code", "echo $((6*7))"}});
  EXPECT_EQ(bash.Json()["stdout"], "42\n");
  EXPECT_EQ(Metric(warm, "sentry_pool_runs_total"), warm_runs);
  EXPECT_EQ(cold.Stop(), 0);
  EXPECT_EQ(warm.Stop(), 0);
}

// The NDJSON lines of a streamed reply: stdout and stderr as they came
// (joined), the number of output lines, and the result.
struct Streamed {
  std::string out, err;
  size_t chunks = 0;
  json result;
};
Streamed ParseStream(const HttpReply& r) {
  Streamed s;
  std::istringstream in(r.body);
  for (std::string l; std::getline(in, l);) {
    json j = json::parse(l);
    if (j.contains("result")) {
      s.result = j["result"];
    } else {
      ++s.chunks;
      (j["stream"] == "stdout" ? s.out : s.err) += j["data"].get<std::string>();
    }
  }
  return s;
}

// ?stream=1 goes warm: the output as it comes (each flushed line before the
// next one is written), then the result, as a cold run gives them.
TEST(Warm, StreamedRunsGoWarm) {
  ServeProcess cold({"--pool-size", "0"});
  ServeProcess warm({"--pool-size", "1"});
  ASSERT_TRUE(cold.ok()) << cold.Stderr();
  ASSERT_TRUE(warm.ok()) << warm.Stderr();
  ASSERT_TRUE(WaitReady(warm, 1)) << warm.Stderr();
  const json req = {{"language", "python"},
                    {"code",
                     "import sys, time\nfor i in range(3):\n    print('line', i, flush=True)\n"
                     "    time.sleep(0.05)\nprint('é', file=sys.stderr)\n"
                     "print('x' * 200000)\nsys.exit(3)"}};
  HttpReply c = cold.Post(req, "/v1/runs?stream=1");
  HttpReply w = warm.Post(req, "/v1/runs?stream=1");
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.headers["content-type"], "application/x-ndjson");
  EXPECT_EQ(Metric(warm, "sentry_pool_runs_total"), 1) << warm.Stderr();
  Streamed sc = ParseStream(c), sw = ParseStream(w);
  EXPECT_EQ(sw.out, sc.out);
  EXPECT_EQ(sw.err, "\u00e9\n");
  EXPECT_EQ(sw.err, sc.err);
  EXPECT_GE(sw.chunks, 4u);  // three flushed lines apart, and the rest
  EXPECT_EQ(Stable(sw.result), Stable(sc.result));
  EXPECT_EQ(sw.result["exitCode"], 3);
  EXPECT_EQ(cold.Stop(), 0);
  EXPECT_EQ(warm.Stop(), 0);
}

TEST(Warm, AnEmptyPoolFallsBackToColdStarts) {
  ServeProcess serve({"--pool-size", "1", "--max-concurrent", "3"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  ASSERT_TRUE(WaitReady(serve, 1)) << serve.Stderr();
  // Three at once against one warm interpreter: two start cold, all answer.
  std::vector<HttpReply> replies(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      replies[i] =
          serve.Post({{"language", "python"},
                      {"code", "import time\ntime.sleep(0.3)\nprint(" + std::to_string(i) + ")"}});
    });
  }
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(replies[i].status, 200) << replies[i].body;
    EXPECT_EQ(replies[i].Json()["stdout"], std::to_string(i) + "\n");
  }
  long warm_runs = Metric(serve, "sentry_pool_runs_total");
  EXPECT_GE(warm_runs, 1);
  EXPECT_LE(warm_runs, 2);  // one warm; a second only if the refill was that quick
  EXPECT_EQ(serve.Stop(), 0);
}

TEST(Warm, NoWarmRunSeesWhatAnEarlierOneLeft) {
  std::ifstream in(std::string(AGENT_TEST_DIR) + "/isolation_probe.py");
  std::stringstream probe;
  probe << in.rdbuf();
  ASSERT_FALSE(probe.str().empty());
  ServeProcess serve({"--pool-size", "2"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  constexpr int kRuns = 8;
  for (int i = 0; i < kRuns; ++i) {
    ASSERT_TRUE(WaitReady(serve, 1)) << serve.Stderr();
    HttpReply r = serve.Post(
        {{"language", "python"},
         {"code", "import sys\nsys.argv.append('" + std::to_string(i) + "')\n" + probe.str()}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Json()["stdout"], "CLEAN\n") << i << ": " << r.body;
  }
  EXPECT_EQ(Metric(serve, "sentry_pool_runs_total"), kRuns);
  EXPECT_EQ(serve.Stop(), 0);
}

// The pool daemon among mcp's children: `sentry pool --python`.
bool HasPoolChild(pid_t parent) {
  std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) +
                   "/children");
  for (pid_t pid; in >> pid;) {
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
    std::string c((std::istreambuf_iterator<char>(cmd)), {});
    if (c.find(std::string("pool\0--python", 13)) != std::string::npos) return true;
  }
  return false;
}

TEST(Warm, McpResultsAreTheColdOnes) {
  McpProcess cold({"--pool-size", "0"});
  McpProcess warm({"--pool-size", "1", "--preload", "json"});
  for (McpProcess* m : {&cold, &warm}) {
    m->Call(1, "initialize",
            {{"protocolVersion", "2025-06-18"},
             {"capabilities", json::object()},
             {"clientInfo", {{"name", "warm_test"}, {"version", "1"}}}});
  }
  EXPECT_TRUE(HasPoolChild(warm.pid()));
  EXPECT_FALSE(HasPoolChild(cold.pid()));
  int id = 2;
  for (const json& args :
       {json{{"code", "print(48271*6933)"}},
        json{{"code", "import json, sys\nprint(json.dumps(sys.stdin.read()))"}, {"stdin", "in"}},
        json{{"code", "print(open('a.txt').read())\nraise SystemExit(3)"},
             {"files", {{"a.txt", "file"}}}}}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the refill
    json c = cold.Call(id, "tools/call", {{"name", "run_python"}, {"arguments", args}});
    json w = warm.Call(id, "tools/call", {{"name", "run_python"}, {"arguments", args}});
    ++id;
    EXPECT_EQ(Stable(w["result"]["structuredContent"]), Stable(c["result"]["structuredContent"]))
        << args.dump();
    EXPECT_EQ(w["result"]["isError"], c["result"]["isError"]);
    EXPECT_EQ(w["result"]["content"][0], c["result"]["content"][0]);
  }
  EXPECT_EQ(cold.Finish(), 0);
  EXPECT_EQ(warm.Finish(), 0);
}

}  // namespace
}  // namespace sentry::testing
