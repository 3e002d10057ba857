// Sessions through the real `sentry serve` over loopback HTTP: state kept
// across cells, the result's shape, commands, files, interrupt, one cell at
// a time, and tenants (issue 25).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "tests/session/session_client.h"
#include "tests/util/subprocess.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

TEST(SessionTest, StateResultsCommandsAndFiles) {
  ServeProcess server({"--session-spares", "1", "--pool-size", "0"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);
  HttpReply created;
  std::string id = c.Create({{"files", {{"data.csv", "a,b\n1,2\n"}}}}, &created);
  ASSERT_FALSE(id.empty()) << created.status << " " << created.body;
  EXPECT_EQ(c.Eval(id, "open('/home/sandbox/data.csv').read()"), "'a,b\\n1,2\\n'");
  EXPECT_TRUE(created.Json().contains("expiresAt"));

  // Globals, imports and the working directory persist between cells.
  json first =
      c.Cell(id, "import os\nx = 41\nos.makedirs('w', exist_ok=True)\nos.chdir('w')").Json();
  EXPECT_EQ(first["executionCount"], 2) << first;
  EXPECT_EQ(c.Eval(id, "x + 1"), "42");
  EXPECT_EQ(c.Eval(id, "os.getcwd()"), "'/home/sandbox/w'");

  // Output in order, as two streams and as one list; the last expression
  // is a result; a display is one more.
  json r = c.Cell(id,
                  "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')\n"
                  "display(7)\n'last'")
               .Json();
  EXPECT_EQ(r["stdout"], "a\nc\n");
  EXPECT_EQ(r["stderr"], "b\n");
  ASSERT_EQ(r["streams"].size(), 3u) << r;
  EXPECT_EQ(r["streams"][0], (json{{"name", "stdout"}, {"text", "a\n"}}));
  EXPECT_EQ(r["streams"][1], (json{{"name", "stderr"}, {"text", "b\n"}}));
  ASSERT_EQ(r["results"].size(), 2u) << r;
  EXPECT_EQ(r["results"][0]["text/plain"], "7");
  EXPECT_EQ(r["results"][1]["text/plain"], "'last'");
  for (const char* k : {"error", "timedOut", "limit", "denied", "durationMs", "sessionId"}) {
    EXPECT_TRUE(r.contains(k)) << k;
  }
  EXPECT_EQ(r["sessionId"], id);

  // An error is data: its traceback names the cell, nothing of the kernel.
  json e = c.Cell(id, "def f():\n    return {}['nope']\nf()").Json();
  ASSERT_TRUE(e["error"].is_object()) << e;
  EXPECT_EQ(e["error"]["name"], "KeyError");
  std::string tb = e["error"]["traceback"].dump();
  EXPECT_NE(tb.find("<cell"), std::string::npos) << tb;
  EXPECT_EQ(tb.find("kernel"), std::string::npos) << tb;

  // A command runs in the same sandbox: it sees the cell's files.
  c.Cell(id, "open('made.txt', 'w').write('by a cell')");
  json cmd = c.Command(id, {{"bash", "cat /home/sandbox/w/made.txt; exit 3"}}).Json();
  EXPECT_EQ(cmd["stdout"], "by a cell") << cmd;
  EXPECT_EQ(cmd["exitCode"], 3);
  json argv = c.Command(id, {{"argv", {"ls", "/home/sandbox/w"}}}).Json();
  EXPECT_EQ(argv["stdout"], "made.txt\n") << argv;

  // Files in and out, a listing, a glob.
  std::string bytes("\x00\x01png\xff", 6);
  HttpReply put = c.Call("PUT", "/v1/sessions/" + id + "/files?path=out/a.bin", bytes);
  EXPECT_EQ(put.status, 201) << put.body;
  c.Call("PUT", "/v1/sessions/" + id + "/files?path=out/b.png", "x");
  HttpReply got = c.Call("GET", "/v1/sessions/" + id + "/files?path=out/a.bin");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, bytes);
  EXPECT_EQ(c.Eval(id, "open('/home/sandbox/out/a.bin', 'rb').read()[2:5]"), "b'png'");
  json list = c.Call("GET", "/v1/sessions/" + id + "/files?dir=out").Json();
  ASSERT_EQ(list["entries"].size(), 2u) << list;
  json glob = c.Call("GET", "/v1/sessions/" + id + "/files?dir=&glob=out%2F*.png").Json();
  ASSERT_EQ(glob["entries"].size(), 1u) << glob;
  EXPECT_NE(glob["entries"][0]["path"].get<std::string>().find("b.png"), std::string::npos);
  EXPECT_EQ(c.Call("GET", "/v1/sessions/" + id + "/files?path=nope").status, 404);

  // The listing of sessions.
  json sessions = c.Call("GET", "/v1/sessions").Json();
  ASSERT_EQ(sessions["sessions"].size(), 1u) << sessions;
  EXPECT_EQ(sessions["sessions"][0]["id"], id);
  EXPECT_GE(sessions["sessions"][0]["cells"].get<int>(), 8);
  json one = c.Call("GET", "/v1/sessions/" + id).Json();
  EXPECT_EQ(one["id"], id);
  EXPECT_EQ(one["state"], "idle");

  // Streamed: NDJSON lines, then the result.
  HttpReply streamed = c.Call("POST", "/v1/sessions/" + id + "/cells?stream=1",
                              json{{"code", "print('live')\n1"}}.dump());
  EXPECT_EQ(streamed.status, 200);
  EXPECT_NE(streamed.body.find("{\"stream\":\"stdout\",\"data\":\"live"), std::string::npos)
      << streamed.body;
  EXPECT_NE(streamed.body.find("{\"result\":"), std::string::npos);

  EXPECT_EQ(c.Delete(id).status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(SessionTest, InterruptKeepsStateAndOneCellAtATime) {
  ServeProcess server({"--session-spares", "0", "--pool-size", "0"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);
  std::string id = c.Create();
  ASSERT_FALSE(id.empty());
  c.Cell(id, "kept = 'yes'");
  HttpReply slow;
  std::thread t([&] { slow = c.Cell(id, "import time\nfor i in range(600): time.sleep(0.05)"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // A second cell while one runs: 409, and the first is not disturbed.
  EXPECT_EQ(c.Cell(id, "1").status, 409);
  EXPECT_EQ(c.Command(id, {{"argv", {"true"}}}).status, 409);
  // Files are served while the cell runs.
  EXPECT_EQ(c.Call("PUT", "/v1/sessions/" + id + "/files?path=during.txt", "ok").status, 201);
  EXPECT_EQ(c.Call("POST", "/v1/sessions/" + id + "/interrupt").status, 200);
  t.join();
  json r = slow.Json();
  ASSERT_TRUE(r["error"].is_object()) << slow.body;
  EXPECT_EQ(r["error"]["name"], "KeyboardInterrupt");
  EXPECT_FALSE(r["timedOut"].get<bool>());
  EXPECT_EQ(c.Eval(id, "kept"), "'yes'");

  // Past its timeout a cell is interrupted, and the session lives on.
  json late = c.Cell(id, "import time\ntime.sleep(20)", 300).Json();
  EXPECT_TRUE(late["timedOut"].get<bool>()) << late;
  EXPECT_EQ(late["limit"], "timeout");
  EXPECT_EQ(late["error"]["name"], "KeyboardInterrupt");
  EXPECT_FALSE(late.contains("sessionEnded"));
  EXPECT_EQ(c.Eval(id, "kept"), "'yes'");
  EXPECT_EQ(c.Delete(id).status, 200);
}

TEST(SessionTest, TenantsSeeOnlyTheirOwn) {
  TenantTokens tokens;
  ServeProcess server({"--token-file", tokens.path(), "--session-spares", "0", "--pool-size", "0",
                       "--max-sessions-per-token", "2"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient alice(server, kAlice), bob(server, kBob);
  std::string a = alice.Create(), b = bob.Create();
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(server.Request("GET", "/v1/sessions").status, 401);  // the file's tokens only

  // Another tenant's session is 404, exactly as an id never made.
  EXPECT_EQ(bob.Cell(a, "1").status, 404);
  EXPECT_EQ(bob.Call("GET", "/v1/sessions/" + a + "/files?path=x").status, 404);
  EXPECT_EQ(bob.Delete(a).status, 404);
  EXPECT_EQ(bob.Call("POST", "/v1/sessions/" + a + "/interrupt").status, 404);
  json bobs = bob.Call("GET", "/v1/sessions").Json();
  ASSERT_EQ(bobs["sessions"].size(), 1u);
  EXPECT_EQ(bobs["sessions"][0]["id"], b);

  // Files, globals, environment, processes and /proc: nothing crosses.
  alice.Cell(a,
             "import os, subprocess\nsecret = 1\nos.environ['ALICE'] = '1'\n"
             "open('/home/sandbox/alice.txt', 'w').write('a')\nopen('/tmp/alice', 'w')\n"
             "p = subprocess.Popen(['sleep', '77.5'])");
  EXPECT_EQ(bob.Eval(b, "'secret' in globals()"), "False");
  EXPECT_EQ(bob.Eval(b, "import os\n'ALICE' in os.environ"), "False");
  EXPECT_EQ(
      bob.Eval(b, "'alice.txt' in os.listdir('/home/sandbox') or 'alice' in os.listdir('/tmp')"),
      "False");
  std::string procs = bob.Eval(
      b, "[open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()]");
  EXPECT_EQ(procs.find("77.5"), std::string::npos) << procs;
  EXPECT_NE(alice.Eval(a, "p.poll()"), "0");

  // Caps per token: alice may hold two, not three; bob is not counted.
  EXPECT_FALSE(alice.Create().empty());
  HttpReply third;
  EXPECT_TRUE(alice.Create({}, &third).empty());
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(alice.Delete(a).status, 200);
  EXPECT_EQ(bob.Eval(b, "2 + 2"), "4");
}

TEST(SessionTest, TokenFilesAreChecked) {
  // NAME TOKEN lines: a short token, a name or token twice, a bad name.
  for (const char* text : {"alice short\n", "a 0123456789abcdef0\na 0123456789abcdef1\n",
                           "a 0123456789abcdef0\nb 0123456789abcdef0\n", "a/b 0123456789abcdef0\n",
                           "a 0123456789abcdef0 extra\n"}) {
    char tmpl[] = "/tmp/sentry-tokens-XXXXXX";
    int fd = mkstemp(tmpl);
    (void)!write(fd, text, strlen(text));
    close(fd);
    ProcessResult r =
        RunProcess({SentryBinary(), "serve", "--listen", "127.0.0.1:0", "--token-file", tmpl});
    EXPECT_EQ(r.exit_code, 125) << text << r.err;
    EXPECT_NE(r.err.find("token file"), std::string::npos) << r.err;
    unlink(tmpl);
  }
}

TEST(SessionTest, CellsAreLoggedWithTheSessionId) {
  char tmpl[] = "/tmp/sentry-session-log-XXXXXX";
  close(mkstemp(tmpl));
  ServeProcess server({"--session-spares", "0", "--pool-size", "0", "--log", tmpl});
  ASSERT_TRUE(server.ok());
  SessionClient c(server);
  std::string id = c.Create();
  c.Cell(id, "y = 1");
  c.Command(id, {{"argv", {"true"}}});
  c.Delete(id);
  server.Stop();
  std::ifstream f(tmpl);
  std::string line;
  int lines = 0;
  while (std::getline(f, line)) {
    json j = json::parse(line);
    EXPECT_EQ(j["result"]["sessionId"], id) << line;
    EXPECT_NE(j["runId"].get<std::string>().find(id), std::string::npos);
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  unlink(tmpl);
}

// The file routes as an attacker would try them first: names that leave the
// tree, system paths, a symlink the guest planted toward a host secret. Each
// is refused or answered inside the sandbox, and the host is unchanged.
TEST(SessionTest, FileRoutesStayInsideTheSandbox) {
  ServeProcess server({"--session-spares", "0", "--pool-size", "0"});
  ASSERT_TRUE(server.ok()) << server.Stderr();
  SessionClient c(server);
  std::string id = c.Create();
  ASSERT_FALSE(id.empty());
  const std::string files = "/v1/sessions/" + id + "/files";
  // Names that climb out, or into the kernel's own files, are refused.
  for (const char* bad : {"../../../tmp/sentry-session-escape", "/proc/self/mem", "%00x", ""}) {
    HttpReply r = c.Call("PUT", files + "?path=" + bad, "x");
    EXPECT_GE(r.status, 400) << bad << " " << r.body;
  }
  EXPECT_NE(access("/tmp/sentry-session-escape", F_OK), 0);
  // A write to a system path stays in the sandbox's memory, if allowed at all.
  c.Call("PUT", files + "?path=/usr/bin/sentry-session-planted", "x");
  EXPECT_NE(access("/usr/bin/sentry-session-planted", F_OK), 0);
  // The host's secrets are not the sandbox's: /etc/shadow is the sandbox's
  // view (or absent), and a guest symlink to it reads the same.
  std::string shadow = c.Call("GET", files + "?path=/etc/shadow").body;
  EXPECT_EQ(shadow.find("root:$"), std::string::npos);
  EXPECT_EQ(c.Eval(id, "import os\nos.symlink('/etc/shadow', 'link')\n'ok'"), "'ok'");
  EXPECT_EQ(c.Call("GET", files + "?path=link").body.find("root:$"), std::string::npos);
  // A listing of / names the sandbox's tree, never a path outside it.
  HttpReply listing = c.Call("GET", files + "?dir=/..");
  EXPECT_EQ(listing.body.find("sentry-session-escape"), std::string::npos);
}

}  // namespace
}  // namespace sentry::testing
