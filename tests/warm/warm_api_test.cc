// WarmPythonPool, the in-process API of `sentry serve` and `sentry mcp`: a
// request (code, stdin, files, limits) gives the `--json` result of a cold
// run of it, and nullopt when the caller must run it cold.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "sentry/pool/pool_wire.h"
#include "sentry/pool/warm_bootstrap.h"
#include "sentry/pool/warm_python.h"
#include "sentry/run/cgroups.h"
#include "tests/util/subprocess.h"

namespace sentry {
namespace {

using nlohmann::json;

std::unique_ptr<WarmPythonPool> StartPool(int size, int accept_timeout_ms = 10000) {
  WarmPythonOptions o;
  o.size = size;
  o.sentry_binary = testing::SentryBinary();
  o.accept_timeout_ms = accept_timeout_ms;
  auto pool = WarmPythonPool::Start(o);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? std::move(*pool) : nullptr;
}

TEST(WarmApiTest, RunsCodeWithStdinAndFiles) {
  auto pool = StartPool(1);
  ASSERT_TRUE(pool);
  WarmRunRequest req;
  req.code =
      "import sys\n"
      "print(input(), open('data/in.txt').read(), open('/tmp/abs.txt').read())\n"
      "print(sys.argv, __file__)\n"
      "raise ValueError('bad')\n";
  req.stdin_bytes = "from stdin\n";
  req.files = {{"data/in.txt", "relative"}, {"/tmp/abs.txt", "absolute"}};
  req.limits.timeout_sec = 10;
  std::string why;
  std::optional<std::string> result = pool->Run(req, &why);
  ASSERT_TRUE(result) << why;
  json r = json::parse(*result);
  EXPECT_EQ(r["stdout"], "from stdin relative absolute\n['main.py'] /home/sandbox/main.py\n");
  EXPECT_EQ(r["exitCode"], 1);
  std::string err = r["stderr"];
  EXPECT_NE(err.find("File \"/home/sandbox/main.py\", line 4, in <module>"), std::string::npos)
      << err;
  EXPECT_NE(err.find("ValueError: bad"), std::string::npos) << err;
  EXPECT_EQ(err.find("line 1, in _w"), std::string::npos) << err;
}

// The daemon and its workers are named "sentry" however the binary was
// started (serve's is /proc/self/exe), so that other sentries' sweeps of
// stale cgroups leave their cgroups alone while they are being made: a warm
// run keeps its pids and memory cgroups while sweeps run all along.
TEST(WarmApiTest, SweepsOfStaleCgroupsLeaveThePoolsAlone) {
  char dir[] = "/tmp/sentry-sweep-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string link = std::string(dir) + "/not-named-sentry";
  ASSERT_EQ(symlink(testing::SentryBinary().c_str(), link.c_str()), 0);
  std::atomic<bool> sweeping{true};
  std::thread sweeper([&] {
    while (sweeping) {
      Cgroups::SweepStale();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  WarmPythonOptions o;
  o.size = 2;
  o.refill = 2;
  o.sentry_binary = link;
  o.accept_timeout_ms = 10000;
  auto pool = WarmPythonPool::Start(o);
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::ifstream comm("/proc/" + std::to_string((*pool)->daemon_pid()) + "/comm");
  std::string name;
  std::getline(comm, name);
  EXPECT_EQ(name, "sentry");
  for (int i = 0; i < 3; ++i) {
    WarmRunRequest req;
    req.code = "print(1)";
    std::string why;
    std::optional<std::string> result = (*pool)->Run(req, &why);
    ASSERT_TRUE(result) << why;
    json walls = json::parse(*result)["walls"];
    for (const char* wall : {"cgroup-pids", "cgroup-memory"}) {
      EXPECT_TRUE(std::find(walls.begin(), walls.end(), wall) != walls.end()) << walls.dump();
    }
  }
  sweeping = false;
  sweeper.join();
  unlink(link.c_str());
  rmdir(dir);
}

TEST(WarmApiTest, WhatItCannotRunIsLeftToTheCaller) {
  auto pool = StartPool(1);
  ASSERT_TRUE(pool);
  WarmRunRequest req;
  req.argv = {"/bin/echo", "hi"};
  std::string why;
  EXPECT_FALSE(pool->Run(req, &why));
  EXPECT_NE(why.find("python3"), std::string::npos) << why;
}

TEST(WarmApiTest, NoFreeInterpreterIsNulloptNotAWait) {
  auto pool = StartPool(1, 200);
  ASSERT_TRUE(pool);
  WarmRunRequest slow;
  slow.code = "import time; time.sleep(3); print('slow')";
  // The first run takes the only interpreter (it may have to wait for it to
  // be made: retried until it is taken).
  std::optional<std::string> first;
  std::thread t([&] {
    for (int i = 0; i < 100 && !first; ++i) first = pool->Run(slow);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  WarmRunRequest quick;
  quick.code = "print(1)";
  std::string why;
  auto second = pool->Run(quick, &why);
  t.join();
  ASSERT_TRUE(first);
  EXPECT_EQ(json::parse(*first)["stdout"], "slow\n");
  EXPECT_FALSE(second) << *second;
  EXPECT_EQ(why, "no warm interpreter free");
}

}  // namespace
}  // namespace sentry

namespace sentry {
namespace {

TEST(WarmRequestTest, FilesTravelOnTheWire) {
  RunOptions o;
  o.argv = {"python3", "main.py"};
  o.files = {{"main.py", std::string("print(1)\0x", 10)}, {"/tmp/b", ""}};
  auto r = pool::DecodeRequest(pool::EncodeRequest(o, "/"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->options.files, o.files);
  // And the files to read back after the run, with their cap.
  o.return_files = {"out.txt", "/tmp/b"};
  o.return_file_max = 12345;
  r = pool::DecodeRequest(pool::EncodeRequest(o, "/"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->options.return_files, o.return_files);
  EXPECT_EQ(r->options.return_file_max, 12345u);
  // A path without its bytes, and bytes without a path, are malformed.
  std::string body = pool::EncodeRequest(o, "/");
  std::string path_only = body + std::string("\x11\x01\x00\x00\x00x", 6);
  EXPECT_FALSE(pool::DecodeRequest(path_only).ok());
  std::string bytes_only = body + std::string("\x12\x01\x00\x00\x00x", 6);
  EXPECT_FALSE(pool::DecodeRequest(bytes_only).ok());
}

TEST(WarmRequestTest, WhatAWarmInterpreterServes) {
  std::string why;
  RunOptions o;
  for (auto argv : std::vector<std::vector<std::string>>{{"python3", "job.py", "-x"},
                                                         {"/usr/bin/python3", "-c", "pass", "a"},
                                                         {"python", "job.py"},
                                                         {"python3", "-u", "job.py"},
                                                         {"python3", "-u", "-c", "pass"}}) {
    o.argv = argv;
    EXPECT_TRUE(WarmPythonCanServe(o, &why)) << why;
  }
  for (auto argv : std::vector<std::vector<std::string>>{{"python3"},
                                                         {"python3", "-B", "job.py"},
                                                         {"python3", "-u", "-B", "job.py"},
                                                         {"python3", "-u"},
                                                         {"python3", "-u", "-c"},
                                                         {"python3", "-c"},
                                                         {"python3", "-m", "http.server"},
                                                         {"python3.11", "job.py"},
                                                         {"/bin/sh", "-c", "python3 x.py"}}) {
    o.argv = argv;
    EXPECT_FALSE(WarmPythonCanServe(o, &why)) << argv[0];
  }
  o.argv = {"python3", "job.py"};
  for (const char* env : {"PYTHONPATH=/x", "LD_PRELOAD=/x.so", "LC_ALL=C", "HOME=/", "PATH=/x",
                          "OPENBLAS_NUM_THREADS=1"}) {
    o.env = {env};
    EXPECT_FALSE(WarmPythonCanServe(o, &why)) << env;
  }
  o.env = {"FOO=bar", "API_KEY="};
  EXPECT_TRUE(WarmPythonCanServe(o, &why)) << why;
}

TEST(WarmRequestTest, TheBootstrapRequestIsFramed) {
  std::string r = EncodeBootstrapRequest({"python3", "-c", "x"}, {"A=1"}, "/w");
  uint32_t n;
  std::memcpy(&n, r.data(), 4);
  EXPECT_EQ(n, r.size() - 4);
  EXPECT_EQ(r.substr(4, 1), "a");
  EXPECT_NE(r.find(std::string("e\x03\x00\x00\x00"
                               "A=1",
                               8)),
            std::string::npos);
  EXPECT_NE(r.find(std::string("d\x02\x00\x00\x00/w", 7)), std::string::npos);
}

}  // namespace
}  // namespace sentry
