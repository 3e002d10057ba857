// The run request's checks (sentry/agent/run_request.h), without a sandbox:
// guest paths confined, nothing of a request reaching the host's files,
// limits only tightened.
#include "sentry/agent/run_request.h"

#include <gtest/gtest.h>

namespace sentry::agent {
namespace {

using nlohmann::json;

std::string Confined(const std::string& p) {
  std::string why;
  std::string out = ConfineGuestPath(p, &why);
  return out.empty() ? "refused: " + why : out;
}

TEST(RunRequest, GuestPathsAreConfined) {
  EXPECT_EQ(Confined("data.csv"), "/home/sandbox/data.csv");
  EXPECT_EQ(Confined("a//b/"), "/home/sandbox/a/b");
  EXPECT_EQ(Confined("/tmp/x"), "/tmp/x");
  for (const char* bad : {"", "../x", "a/../../etc/passwd", "/tmp/../etc/x", "./x", "/", "//",
                          "/proc/self/mem", "/dev/sda", "/sys/kernel/x", "/proc"}) {
    EXPECT_EQ(Confined(bad).rfind("refused", 0), 0u) << bad;
  }
  EXPECT_EQ(Confined(std::string("a\0b", 3)).rfind("refused", 0), 0u);
  EXPECT_EQ(Confined(std::string(300, 'a')).rfind("refused", 0), 0u);
  EXPECT_EQ(Confined("////a"), "/a");
  EXPECT_EQ(Confined(std::string(5000, '/') + "a").rfind("refused", 0), 0u);
  std::string deep;
  for (int i = 0; i < 500; ++i) deep += "abcdefghi/";
  EXPECT_EQ(Confined(deep).rfind("refused", 0), 0u);
}

TEST(RunRequest, NothingOfARequestNamesAHostFile) {
  ServerPolicy policy;
  policy.base.copies = {{"/etc/shadow", "/x"}};
  policy.base.stdin_path = "/etc/shadow";
  RunJob job;
  RequestError err;
  ASSERT_TRUE(ParseRunRequest(json{{"argv", {"python3", "secret.py"}}}, policy, false, &job, &err));
  EXPECT_FALSE(job.options.copy_script);
  EXPECT_TRUE(job.options.copies.empty());
  EXPECT_EQ(job.options.stdin_path, "-");
  EXPECT_TRUE(job.options.json);
}

TEST(RunRequest, LimitsOnlyTighten) {
  ServerPolicy policy;
  policy.base.timeout_sec = 10;
  policy.base.memory_bytes = 256 << 20;
  policy.base.cpus = 1;
  RunJob job;
  RequestError err;
  ASSERT_TRUE(ParseRunRequest(
      json{{"code", "1"}, {"limits", {{"timeoutMs", 500}, {"memoryMb", 64}, {"cpus", 0.5}}}},
      policy, false, &job, &err));
  EXPECT_EQ(job.options.timeout_sec, 0.5);
  EXPECT_EQ(job.options.memory_bytes, 64u << 20);
  for (const json& limits : {json{{"timeoutMs", 10001}}, json{{"memoryMb", 257}}, json{{"cpus", 2}},
                             json{{"maxProcesses", 129}}, json{{"diskMb", 513}},
                             json{{"maxOutputBytes", 65537}}, json{{"nofile", 1025}}}) {
    EXPECT_FALSE(
        ParseRunRequest(json{{"code", "1"}, {"limits", limits}}, policy, false, &job, &err))
        << limits;
    EXPECT_EQ(err.http_status, 403) << limits;
    EXPECT_EQ(err.field, "limits." + limits.begin().key());
  }
  // No server timeout: a request may set any.
  policy.base.timeout_sec = 0;
  EXPECT_TRUE(ParseRunRequest(json{{"code", "1"}, {"limits", {{"timeoutMs", 1e9}}}}, policy, false,
                              &job, &err));
}

TEST(RunRequest, NetworkOnlyNarrows) {
  ServerPolicy policy;
  net::AllowRule a, b;
  std::string why;
  ASSERT_TRUE(net::ParseAllowRule("*.example.com:443", &a, &why));
  ASSERT_TRUE(net::ParseAllowRule("pypi.org", &b, &why));
  policy.base.net.allow = {a, b};
  RunJob job;
  RequestError err;
  ASSERT_TRUE(ParseRunRequest(
      json{{"code", "1"}, {"network", {{"allow", {"api.example.com:443", "pypi.org:443"}}}}},
      policy, false, &job, &err))
      << err.message;
  EXPECT_EQ(job.options.net.allow.size(), 2u);
  for (const char* bad :
       {"api.example.com:80", "example.com:443", "evil.com", "pypi.org.evil.com"}) {
    EXPECT_FALSE(ParseRunRequest(json{{"code", "1"}, {"network", {{"allow", {bad}}}}}, policy,
                                 false, &job, &err))
        << bad;
    EXPECT_EQ(err.http_status, 403);
  }
  ASSERT_TRUE(ParseRunRequest(json{{"code", "1"}, {"network", "none"}}, policy, false, &job, &err));
  EXPECT_TRUE(job.options.net.allow.empty());
}

// A loopback or private IP literal is refused as the request is read (400,
// naming the server's flag), unless the server was started with it.
TEST(RunRequest, APrivateAddressIsRefusedUnlessTheServerAllowsIt) {
  ServerPolicy policy;
  net::AllowRule any;
  std::string why;
  ASSERT_TRUE(net::ParseAllowRule("10.1.2.3", &any, &why));
  policy.base.net.allow = {any};
  RunJob job;
  RequestError err;
  EXPECT_FALSE(ParseRunRequest(json{{"code", "1"}, {"network", {{"allow", {"10.1.2.3:80"}}}}},
                               policy, false, &job, &err));
  EXPECT_EQ(err.http_status, 400);
  EXPECT_NE(err.message.find("--unsafe-allow-private-address"), std::string::npos) << err.message;
  policy.base.net.allow_private = true;
  EXPECT_TRUE(ParseRunRequest(json{{"code", "1"}, {"network", {{"allow", {"10.1.2.3:80"}}}}},
                              policy, false, &job, &err))
      << err.message;
}

TEST(RunRequest, SizesAreBounded) {
  ServerPolicy policy;
  policy.max_files = 2;
  RunJob job;
  RequestError err;
  EXPECT_FALSE(ParseRunRequest(json{{"code", "1"}, {"files", {{"a", ""}, {"b", ""}, {"c", ""}}}},
                               policy, false, &job, &err));
  EXPECT_EQ(err.http_status, 413);
  json many = json::array();
  for (int i = 0; i < 40; ++i) many.push_back("f" + std::to_string(i));
  EXPECT_FALSE(
      ParseRunRequest(json{{"code", "1"}, {"returnFiles", many}}, policy, false, &job, &err));
  EXPECT_EQ(err.field, "returnFiles");
  EXPECT_FALSE(ParseRunRequest(json{{"argv", json::array({std::string(2 << 20, 'a')})}}, policy,
                               false, &job, &err));
  EXPECT_EQ(err.http_status, 413);
  EXPECT_FALSE(ParseRunRequest(json{{"files", {{"a", ""}, {"/home/sandbox/a", ""}}}, {"code", "1"}},
                               policy, false, &job, &err));
}

}  // namespace
}  // namespace sentry::agent
