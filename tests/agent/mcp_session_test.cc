// The session tools of `sentry mcp` (agent/mcp_sessions.h) through the real
// binary: a conversation's state across calls, a plot as an image block,
// files written, read and listed, a cancel that interrupts a cell and keeps
// its state, the session's end said in words.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/agent/agent_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

void Initialize(McpProcess& mcp) {
  mcp.Call(1, "initialize",
           {{"protocolVersion", "2025-06-18"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "mcp_session_test"}, {"version", "1"}}}});
  mcp.SendJson(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
}

json Tool(McpProcess& mcp, int id, const std::string& name, const json& args) {
  return mcp.Call(id, "tools/call", {{"name", name}, {"arguments", args}});
}

// The text blocks of a tools/call result, joined.
std::string TextOf(const json& r) {
  std::string text;
  for (const json& c : r["result"]["content"]) {
    if (c["type"] == "text") text += c["text"].get<std::string>() + "\n";
  }
  return text;
}

std::string Open(McpProcess& mcp, int id) {
  json r = Tool(mcp, id, "create_session", json::object());
  EXPECT_FALSE(r["result"]["isError"].get<bool>()) << r.dump();
  return r["result"]["structuredContent"]["sessionId"].get<std::string>();
}

TEST(McpSession, StateImagesAndFilesAcrossCalls) {
  McpProcess mcp;
  Initialize(mcp);
  json list = mcp.Call(2, "tools/list", json::object());
  std::string names;
  for (const json& t : list["result"]["tools"]) {
    names += t["name"].get<std::string>() + " ";
    if (t["name"] == "run_python") {
      EXPECT_TRUE(t["inputSchema"]["properties"].contains("sessionId"));
    }
  }
  EXPECT_EQ(names,
            "run_python run_command create_session close_session fork_session read_file "
            "write_file list_files ");
  std::string id = Open(mcp, 3);
  EXPECT_EQ(id.rfind("ses_", 0), 0u) << id;

  // State across three calls.
  json r = Tool(mcp, 4, "run_python", {{"sessionId", id}, {"code", "x = 40\nimport math"}});
  EXPECT_FALSE(r["result"]["isError"].get<bool>()) << r.dump();
  Tool(mcp, 5, "run_python", {{"sessionId", id}, {"code", "x += 1"}});
  r = Tool(mcp, 6, "run_python", {{"sessionId", id}, {"code", "print('x is', x)\nx + 1"}});
  EXPECT_EQ(TextOf(r).substr(0, 11), "x is 41\n\n42") << r.dump();
  const json& sc = r["result"]["structuredContent"];
  EXPECT_EQ(sc["executionCount"], 3);
  EXPECT_EQ(sc["results"][0]["text/plain"], "42");
  EXPECT_TRUE(sc["exitCode"].is_null());
  EXPECT_EQ(sc["sessionId"], id);

  // A plot comes back as an image block.
  r = Tool(mcp, 7, "run_python",
           {{"sessionId", id},
            {"code",
             "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.savefig('p.png')\n"
             "plt.show()"},
            {"returnFiles", {"p.png"}}});
  int images = 0;
  for (const json& c : r["result"]["content"]) {
    if (c["type"] != "image") continue;
    ++images;
    EXPECT_EQ(c["mimeType"], "image/png");
    EXPECT_EQ(c["data"].get<std::string>().substr(0, 8), "iVBORw0K");  // \x89PNG
  }
  EXPECT_EQ(images, 2) << r.dump().substr(0, 2000);  // plt.show() and returnFiles

  // A file written, then read, listed and used by a command and a cell.
  r = Tool(mcp, 8, "write_file", {{"sessionId", id}, {"path", "notes/a.txt"}, {"text", "hello"}});
  EXPECT_EQ(TextOf(r), "wrote 5 bytes to /home/sandbox/notes/a.txt\n") << r.dump();
  r = Tool(mcp, 9, "read_file", {{"sessionId", id}, {"path", "notes/a.txt"}});
  EXPECT_EQ(TextOf(r), "hello\n") << r.dump();
  r = Tool(mcp, 10, "write_file",
           {{"sessionId", id}, {"path", "notes/b.bin"}, {"base64", "AAEC/w=="}});
  EXPECT_FALSE(r["result"]["isError"].get<bool>()) << r.dump();
  r = Tool(mcp, 11, "list_files", {{"sessionId", id}, {"dir", "notes"}});
  EXPECT_EQ(TextOf(r), "/home/sandbox/notes:\na.txt  5\nb.bin  4\n\n") << r.dump();
  r = Tool(mcp, 12, "run_command", {{"sessionId", id}, {"argv", {"cat", "notes/a.txt"}}});
  EXPECT_EQ(TextOf(r).substr(0, 6), "hello\n") << r.dump();
  EXPECT_EQ(r["result"]["structuredContent"]["exitCode"], 0);
  r = Tool(mcp, 13, "run_python",
           {{"sessionId", id}, {"code", "open('notes/b.bin', 'rb').read()"}});
  EXPECT_EQ(r["result"]["structuredContent"]["results"][0]["text/plain"],
            "b'\\x00\\x01\\x02\\xff'");
  r = Tool(mcp, 14, "read_file", {{"sessionId", id}, {"path", "nope.txt"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>()) << r.dump();

  // An error is the traceback of the cell, and isError.
  r = Tool(mcp, 15, "run_python", {{"sessionId", id}, {"code", "def f():\n    return 1/0\nf()"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  std::string text = TextOf(r);
  EXPECT_NE(text.find("File \"<cell 6>\", line 2, in f"), std::string::npos) << text;
  EXPECT_NE(text.find("ZeroDivisionError"), std::string::npos) << text;
  EXPECT_EQ(r["result"]["structuredContent"]["error"]["name"], "ZeroDivisionError");

  // A fork: a new session with the same state, its own from then on (root
  // or not: agent_test_rootless runs this as an ordinary user).
  {
    r = Tool(mcp, 30, "fork_session", {{"sessionId", id}, {"count", 1}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    ASSERT_EQ(r["result"]["isError"], false) << r.dump();
    ASSERT_EQ(r["result"]["structuredContent"]["sessions"].size(), 1u) << r.dump();
    std::string child = r["result"]["structuredContent"]["sessions"][0].get<std::string>();
    EXPECT_NE(TextOf(r).find(child), std::string::npos) << r.dump();
    r = Tool(mcp, 31, "run_python", {{"sessionId", child}, {"code", "x = x * 2\nx"}});
    EXPECT_EQ(r["result"]["structuredContent"]["results"][0]["text/plain"], "82") << r.dump();
    r = Tool(mcp, 32, "run_python", {{"sessionId", id}, {"code", "x"}});
    EXPECT_EQ(r["result"]["structuredContent"]["results"][0]["text/plain"], "41") << r.dump();
    json bad = Tool(mcp, 33, "fork_session", {{"sessionId", id}, {"count", 0}});
    EXPECT_TRUE(bad.contains("error") || bad["result"]["isError"] == true) << bad.dump();
    Tool(mcp, 34, "close_session", {{"sessionId", child}});
  }

  // The end, said in words.
  r = Tool(mcp, 16, "close_session", {{"sessionId", id}});
  EXPECT_EQ(r["result"]["structuredContent"]["ended"]["reason"], "deleted") << r.dump();
  r = Tool(mcp, 17, "run_python", {{"sessionId", id}, {"code", "x"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(TextOf(r).find("the session has ended: deleted"), std::string::npos) << r.dump();
  EXPECT_FALSE(r["result"].contains("structuredContent"));
  r = Tool(mcp, 18, "run_python", {{"sessionId", "ses_0000"}, {"code", "1"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>()) << r.dump();
  EXPECT_EQ(mcp.Finish(), 0);
}

TEST(McpSession, ACancelledCallInterruptsItsCellAndTheStateStays) {
  McpProcess mcp;
  Initialize(mcp);
  std::string id = Open(mcp, 2);
  Tool(mcp, 3, "run_python", {{"sessionId", id}, {"code", "kept = 7"}});
  mcp.SendJson(
      json{{"jsonrpc", "2.0"},
           {"id", 4},
           {"method", "tools/call"},
           {"params",
            {{"name", "run_python"},
             {"arguments", {{"sessionId", id}, {"code", "import time\ntime.sleep(60)"}}}}}});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  mcp.SendJson(json{
      {"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 4}}}});
  // The next cell runs once the interrupted one is over (one at a time).
  json r;
  for (int i = 5; i < 100; ++i) {
    r = Tool(mcp, i, "run_python", {{"sessionId", id}, {"code", "kept"}});
    if (!r["result"]["isError"].get<bool>()) break;  // 409 while the first still runs
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r["result"]["structuredContent"]["results"][0]["text/plain"], "7") << r.dump();
  EXPECT_EQ(mcp.Finish(), 0);
}

TEST(McpSession, BadArgumentsAreProtocolErrors) {
  McpProcess mcp;
  Initialize(mcp);
  EXPECT_EQ(Tool(mcp, 2, "create_session", {{"bogus", 1}})["error"]["code"], -32602);
  std::string id = Open(mcp, 3);
  EXPECT_EQ(Tool(mcp, 4, "run_python",
                 {{"sessionId", id}, {"code", "1"}, {"stdin", "x"}})["error"]["code"],
            -32602);
  EXPECT_EQ(Tool(mcp, 5, "run_python", {{"sessionId", 7}, {"code", "1"}})["error"]["code"], -32602);
  EXPECT_EQ(
      Tool(mcp, 6, "write_file",
           {{"sessionId", id}, {"path", "a"}, {"text", "x"}, {"base64", "eA=="}})["error"]["code"],
      -32602);
  EXPECT_EQ(
      Tool(mcp, 7, "read_file", {{"sessionId", id}, {"path", "../../etc/passwd"}})["error"]["code"],
      -32602);
  EXPECT_EQ(Tool(mcp, 8, "list_files", {{"sessionId", id}, {"recursive", "yes"}})["error"]["code"],
            -32602);
  EXPECT_EQ(mcp.Finish(), 0);
}

TEST(McpSession, NoSessionToolsWithMaxSessionsZero) {
  McpProcess mcp({"--max-sessions", "0"});
  Initialize(mcp);
  EXPECT_EQ(mcp.Call(2, "tools/list", json::object())["result"]["tools"].size(), 2u);
  json r = Tool(mcp, 3, "run_python", {{"sessionId", "ses_1"}, {"code", "1"}});
  EXPECT_EQ(r["error"]["code"], -32602) << r.dump();
  EXPECT_EQ(Tool(mcp, 4, "create_session", json::object())["error"]["code"], -32602);
  EXPECT_EQ(mcp.Finish(), 0);
}

}  // namespace
}  // namespace sentry::testing
