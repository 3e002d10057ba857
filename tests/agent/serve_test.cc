// `sentry serve` through its HTTP API, on 127.0.0.1 and a unix socket.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "tests/agent/agent_util.h"
#include "tests/util/subprocess.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

TEST(Serve, HealthNeedsNoTokenEverythingElseDoes) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  HttpReply h = serve.Request("GET", "/v1/health", "", false);
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.Json()["status"], "ok");
  const std::string body = "{\"code\": \"1\"}";
  HttpReply none = serve.Request("POST", "/v1/runs", body, false);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers["www-authenticate"], "Bearer");
  HttpReply wrong = serve.Request("POST", "/v1/runs", body, false,
                                  {"Authorization: Bearer test-token-0123456789abcdeX"});
  EXPECT_EQ(wrong.status, 401);
  HttpReply shorter =
      serve.Request("GET", "/metrics", "", false, {"Authorization: Bearer test-token"});
  EXPECT_EQ(shorter.status, 401);
  EXPECT_EQ(serve.Request("GET", "/metrics", "", false).status, 401);
  EXPECT_EQ(serve.Request("GET", "/metrics").status, 200);
  EXPECT_EQ(serve.Request("GET", "/v1/nothing").status, 404);
  EXPECT_EQ(serve.Request("GET", "/v1/runs").status, 405);
}

TEST(Serve, RunReturnsTheJsonResultAndFiles) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  std::string png("\x89PNG\r\n\x1a\n\0\xff", 10);
  HttpReply r = serve.Post(
      {{"language", "python"},
       {"code",
        "import sys, os\nprint(48271*6933)\nprint(sys.stdin.read())\n"
        "data = open('in/blob.bin','rb').read()\nprint(len(data), os.access('tool.sh', "
        "os.X_OK))\n"
        "open('out.txt','w').write('made inside')\nopen('/tmp/raw.bin','wb').write(data)\n"},
       {"stdin", "from stdin"},
       {"files",
        {{"in/blob.bin", {{"base64", absl::Base64Escape(png)}}},
         {"tool.sh", {{"text", "#!/bin/sh\necho hi\n"}, {"executable", true}}}}},
       {"returnFiles", {"out.txt", "/tmp/raw.bin", "missing.txt"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["stdout"], "334662843\nfrom stdin\n10 True\n");
  EXPECT_EQ(j["exitCode"], 0);
  EXPECT_EQ(j["files"]["out.txt"]["text"], "made inside");  // the key as asked
  std::string raw;
  ASSERT_TRUE(absl::Base64Unescape(j["files"]["/tmp/raw.bin"]["base64"].get<std::string>(), &raw));
  EXPECT_EQ(raw, png);
  EXPECT_TRUE(j["files"]["missing.txt"].contains("error"));
  for (const char* key : {"stdout", "stderr", "exitCode", "signal", "timedOut", "limit",
                          "durationMs", "walls", "denied", "network", "error", "version"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(Serve, ReturnedFilesAreCappedAndReadAsTheGuest) {
  ServeProcess serve({"--return-file-max", "1k"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  json j = serve
               .Post({{"code", "open('big.txt','w').write('x'*5000)"},
                      {"returnFiles", {"big.txt", "/etc/passwd", "/root/x", "/usr"}}})
               .Json();
  EXPECT_EQ(j["files"]["big.txt"]["size"], 5000);
  EXPECT_EQ(j["files"]["big.txt"]["text"].get<std::string>().size(), 1024u);
  EXPECT_TRUE(j["files"]["big.txt"]["truncated"].get<bool>());
  // The sandbox's own generated passwd, not the host's.
  EXPECT_EQ(j["files"]["/etc/passwd"].value("text", "").find("root:x:0:0"), std::string::npos)
      << j["files"]["/etc/passwd"].dump();
  EXPECT_TRUE(j["files"]["/root/x"].contains("error"));
  // A directory is taken whole, up to the bytes four names may bring.
  EXPECT_NE(j.value("filesLimit", "").find("in all"), std::string::npos) << j.dump();
}

TEST(Serve, ArgvAndBashRequests) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  json a = serve.Post({{"argv", {"sh", "-c", "echo $HOME; exit 7"}}}).Json();
  EXPECT_EQ(a["stdout"], "/home/sandbox\n");
  EXPECT_EQ(a["exitCode"], 7);
  json b = serve.Post({{"language", "bash"}, {"code", "echo $((6*7)) >&2; false"}}).Json();
  EXPECT_EQ(b["stderr"], "42\n");
  EXPECT_EQ(b["exitCode"], 1);
}

TEST(Serve, BadRequestsAreRefusedNamingTheProblem) {
  ServeProcess serve({"--memory", "256m", "--timeout", "5", "--max-request-bytes", "64k"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  auto field = [&](const json& req) {
    HttpReply r = serve.Post(req);
    return std::to_string(r.status) + " " + r.Json()["error"].value("field", "?");
  };
  EXPECT_EQ(field({{"code", "1"}, {"shell", true}}), "400 shell");
  EXPECT_EQ(field({{"code", "1"}, {"limits", {{"memoryMb", 512}}}}), "403 limits.memoryMb");
  EXPECT_EQ(field({{"code", "1"}, {"limits", {{"timeoutMs", 6000}}}}), "403 limits.timeoutMs");
  EXPECT_EQ(field({{"code", "1"}, {"limits", {{"timeoutMs", "5"}}}}), "400 limits.timeoutMs");
  EXPECT_EQ(field({{"code", "1"}, {"limits", {{"swap", 1}}}}), "400 limits.swap");
  EXPECT_EQ(field({{"code", "1"}, {"network", {{"allow", {"example.com:443"}}}}}),
            "403 network.allow");
  EXPECT_EQ(field({{"code", "1"}, {"argv", {"ls"}}}), "400 code");
  EXPECT_EQ(field(json::object()), "400 code");
  EXPECT_EQ(field({{"argv", {"ls"}}, {"language", "python"}}), "400 language");
  EXPECT_EQ(field({{"language", "ruby"}, {"code", "1"}}), "400 language");
  EXPECT_EQ(field({{"code", 1}}), "400 code");
  EXPECT_EQ(field({{"code", "1"}, {"files", {{"main.py", "x"}}}}),
            "400 files[\"/home/sandbox/main.py\"]");
  EXPECT_EQ(field({{"code", "1"}, {"stdin", {{"base64", "!!"}}}}), "400 stdin");
  EXPECT_EQ(field(json::array()), "400 ");
  HttpReply bad = serve.Request("POST", "/v1/runs", "{\"code\": ");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.Json()["error"]["message"].get<std::string>().find("not JSON"), std::string::npos);
  HttpReply big = serve.Request("POST", "/v1/runs", std::string(100 << 10, ' '));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(serve.Request("POST", "/v1/runs?stream=2", "{}").status, 400);
  // Chunked past the cap: refused while it is read.
  std::string chunked = "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                        std::string(kToken) + "\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 80; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_EQ(ParseHttpReply(RawExchange(serve.address(), chunked)).status, 413);
  EXPECT_EQ(ParseHttpReply(RawExchange(serve.address(), "GARBAGE\r\n\r\n")).status, 400);
}

TEST(Serve, StreamSendsOutputAsItComesThenTheResult) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  HttpReply r = serve.Post({{"code",
                             "import sys, time\nprint('one')\ntime.sleep(0.3)\n"
                             "print('two', file=sys.stderr)\nprint('trois \\u00e9')\nsys.exit(2)"}},
                           "/v1/runs?stream=1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/x-ndjson");
  std::vector<json> lines;
  std::istringstream in(r.body);
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_GE(lines.size(), 4u) << r.body;
  std::string out, err;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    (lines[i]["stream"] == "stdout" ? out : err) += lines[i]["data"].get<std::string>();
  }
  EXPECT_EQ(out, "one\ntrois \u00e9\n");
  EXPECT_EQ(err, "two\n");
  EXPECT_EQ(lines[0]["data"].get<std::string>().substr(0, 3), "one");  // before the sleep
  const json& result = lines.back()["result"];
  EXPECT_EQ(result["exitCode"], 2);
  EXPECT_EQ(result["stdout"], "one\ntrois \u00e9\n");
  // A request refused before its run gets an ordinary answer.
  EXPECT_EQ(serve.Post({{"bogus", 1}}, "/v1/runs?stream=1").status, 400);
}

TEST(Serve, AFullQueueIsTooManyRequests) {
  ServeProcess serve({"--max-concurrent", "1", "--max-queue", "0", "--pool-size", "0"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  std::thread slow([&] { serve.Post({{"code", "import time\ntime.sleep(1.5)"}}); });
  usleep(500 * 1000);
  HttpReply busy = serve.Post({{"code", "print(1)"}});
  EXPECT_EQ(busy.status, 429) << busy.body;
  EXPECT_EQ(busy.headers["retry-after"], "1");
  slow.join();
  EXPECT_EQ(serve.Post({{"code", "print(1)"}}).status, 200);
  std::string metrics = serve.Request("GET", "/metrics").body;
  EXPECT_NE(metrics.find("sentry_requests_rejected_total{reason=\"busy\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sentry_runs_total{outcome=\"ok\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("sentry_run_duration_seconds_count 2"), std::string::npos);
  EXPECT_NE(metrics.find("sentry_pool_ready 0"), std::string::npos);
}

TEST(Serve, SigtermLetsTheRunInProgressFinish) {
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  HttpReply r;
  std::thread run([&] { r = serve.Post({{"code", "import time\ntime.sleep(1)\nprint('done')"}}); });
  usleep(400 * 1000);
  double start = time(nullptr);
  EXPECT_EQ(serve.Stop(), 0);
  run.join();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["stdout"], "done\n");
  EXPECT_LT(time(nullptr) - start, 10);
  EXPECT_NE(serve.Stderr().find("shutting down"), std::string::npos);
}

TEST(Serve, UnixSocketAndOneLogLinePerRun) {
  char dir[] = "/tmp/sentry-serve-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string sock = std::string(dir) + "/api.sock";
  std::string log = std::string(dir) + "/runs.log";
  {
    ServeProcess serve({"--log", log}, "unix:" + sock);
    ASSERT_TRUE(serve.ok()) << serve.Stderr();
    struct stat st;
    ASSERT_EQ(stat(sock.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(serve.Post({{"code", "print('via unix')"}}).Json()["stdout"], "via unix\n");
    EXPECT_EQ(serve.Post({{"argv", {"true"}}}).status, 200);
    EXPECT_EQ(serve.Post({{"bogus", 1}}).status, 400);
    EXPECT_EQ(serve.Stop(), 0);
  }
  std::ifstream in(log);
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["code"], "print('via unix')");
  EXPECT_EQ(lines[0]["result"]["stdout"], "via unix\n");
  EXPECT_EQ(lines[1]["argv"], json({"true"}));
  unlink(log.c_str());
  rmdir(dir);
}

// A request names guest paths only: a script named in argv is not copied in
// from the server's cwd (as `sentry run` would), files never land on the host.
TEST(Serve, NothingOfARequestReachesTheHostsFiles) {
  const std::string secret = "agent-test-secret.py";
  { std::ofstream(secret) << "print('host secret 5551212')\n"; }
  ServeProcess serve;
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  json r = serve.Post({{"argv", {"python3", secret}}}).Json();
  EXPECT_EQ(r["exitCode"], 2) << r.dump();
  EXPECT_EQ(r["stdout"].get<std::string>().find("5551212"), std::string::npos);
  json w = serve
               .Post({{"code", "print(open('/tmp/agent-test-planted').read())"},
                      {"files", {{"/tmp/agent-test-planted", "x"}}}})
               .Json();
  EXPECT_EQ(w["stdout"], "x\n");
  EXPECT_NE(access("/tmp/agent-test-planted", F_OK), 0);  // in the sandbox's tree only
  for (const char* path : {"../../../tmp/escape", "/home/sandbox/../../tmp/escape"}) {
    EXPECT_EQ(serve.Post({{"code", "1"}, {"files", {{path, "x"}}}}).status, 400) << path;
  }
  EXPECT_NE(access("/tmp/escape", F_OK), 0);
  unlink(secret.c_str());
}

// The flags read as `sentry run`'s do: --flag=value, sizes and durations
// with units; each takes effect as the request's ceiling.
TEST(Serve, FlagsTakeEqualsFormsAndUnits) {
  ServeProcess serve({"--memory=1.5g", "--timeout=1500ms", "--max-request-bytes=0.5k",
                      "--pool-size=0", "--log-level=warn"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  auto status = [&](const json& limits) {
    return serve.Post({{"code", "1"}, {"limits", limits}}).status;
  };
  EXPECT_EQ(status({{"memoryMb", 1536}, {"timeoutMs", 1500}}), 200);
  EXPECT_EQ(status({{"memoryMb", 1537}}), 403);
  EXPECT_EQ(status({{"timeoutMs", 1501}}), 403);
  EXPECT_EQ(serve.Request("POST", "/v1/runs", std::string(513, ' ')).status, 413);
}

// The sentry's own notices go through its log, which --log-level sets.
TEST(Serve, LogLevelSilencesTheSentrysNotices) {
  ServeProcess loud({"--no-cgroups"});
  ASSERT_TRUE(loud.ok()) << loud.Stderr();
  EXPECT_NE(loud.Stderr().find("sentry: no warm pool"), std::string::npos) << loud.Stderr();
  ServeProcess quiet({"--no-cgroups", "--log-level", "off"});
  ASSERT_TRUE(quiet.ok()) << quiet.Stderr();
  EXPECT_EQ(quiet.Stderr().find("no warm pool"), std::string::npos) << quiet.Stderr();
}

TEST(Serve, FlagsAreChecked) {
  EXPECT_FALSE(ServeProcess({}, "localhost:80").ok());
  ProcessResult no_token = RunProcess({SentryBinary(), "serve", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(no_token.exit_code, 125);
  EXPECT_NE(no_token.err.find("token"), std::string::npos);
  ProcessResult short_token =
      RunProcess({SentryBinary(), "serve", "--listen", "127.0.0.1:0", "--token", "abc"});
  EXPECT_EQ(short_token.exit_code, 125);
}

}  // namespace
}  // namespace sentry::testing
