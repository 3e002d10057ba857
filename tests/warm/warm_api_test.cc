// WarmPythonPool, the in-process API of `sentry serve` and `sentry mcp`: a
// request (code, stdin, files, limits) gives the `--json` result of a cold
// run of it, and nullopt when the caller must run it cold.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "sentry/run/warm_python.h"
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
