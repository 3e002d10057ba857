// `sentry mcp` spoken to over pipes, as an MCP client does: JSON-RPC 2.0, one
// message a line.
#include <gtest/gtest.h>

#include "tests/agent/agent_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

json Initialize(McpProcess& mcp) {
  json r = mcp.Call(1, "initialize",
                    {{"protocolVersion", "2025-06-18"},
                     {"capabilities", json::object()},
                     {"clientInfo", {{"name", "mcp_test"}, {"version", "1"}}}});
  mcp.SendJson(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  return r;
}

json Tool(McpProcess& mcp, int id, const std::string& name, const json& args) {
  return mcp.Call(id, "tools/call", {{"name", name}, {"arguments", args}});
}

TEST(Mcp, InitializeListsToolsWithSchemas) {
  McpProcess mcp;
  json init = Initialize(mcp);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "sentry");
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));
  json list = mcp.Call(2, "tools/list", json::object());
  // run_python, run_command, and the six session tools (mcp_session_test.cc)
  ASSERT_EQ(list["result"]["tools"].size(), 8u) << list.dump();
  for (const json& t : list["result"]["tools"]) {
    EXPECT_EQ(t["inputSchema"]["type"], "object");
    if (t["name"] != "run_python" && t["name"] != "run_command") continue;
    EXPECT_EQ(t["outputSchema"]["type"], "object");
    EXPECT_TRUE(t["outputSchema"]["properties"].contains("exitCode"));
  }
  EXPECT_EQ(mcp.Call(3, "ping", json::object())["result"], json::object());
  EXPECT_EQ(mcp.Finish(), 0);
}

// No `type` array (["string", "null"]) anywhere: the MCP Inspector warns
// that not every client takes one.
void ExpectNoTypeArray(const json& schema, const std::string& where) {
  if (schema.is_object()) {
    if (schema.contains("type")) {
      EXPECT_FALSE(schema["type"].is_array()) << where;
    }
    for (const auto& [k, v] : schema.items()) ExpectNoTypeArray(v, where + "." + k);
  } else if (schema.is_array()) {
    for (const json& v : schema) ExpectNoTypeArray(v, where + "[]");
  }
}

TEST(Mcp, SchemasArePortableAndListNotices) {
  McpProcess mcp;
  Initialize(mcp);
  json list = mcp.Call(2, "tools/list", json::object());
  for (const json& t : list["result"]["tools"]) {
    ExpectNoTypeArray(t["inputSchema"], "inputSchema");
    if (t.contains("outputSchema")) ExpectNoTypeArray(t["outputSchema"], "outputSchema");
    // The run tools' results are `--json` results, notices included.
    if (t["name"] == "run_python" || t["name"] == "run_command") {
      EXPECT_TRUE(t["outputSchema"]["properties"].contains("notices")) << t["name"];
    }
  }
  // A program not found says nothing of --copy, a flag mcp has not.
  json r = Tool(mcp, 3, "run_command", {{"argv", {"nosuchprogram"}}});
  EXPECT_EQ(r.dump().find("--copy"), std::string::npos) << r.dump();
  EXPECT_NE(r.dump().find("command not found"), std::string::npos) << r.dump();
  EXPECT_EQ(mcp.Finish(), 0);
}

TEST(Mcp, RunPythonGivesTextAndStructuredResult) {
  McpProcess mcp;
  Initialize(mcp);
  json r = Tool(mcp, 2, "run_python",
                {{"code",
                  "import sys\nprint(open('data.txt').read().upper())\n"
                  "print(sys.stdin.read()[::-1])"},
                 {"files", {{"data.txt", "hello"}}},
                 {"stdin", "abc"}});
  const json& res = r["result"];
  EXPECT_FALSE(res["isError"].get<bool>()) << r.dump();
  EXPECT_EQ(res["structuredContent"]["stdout"], "HELLO\ncba\n");
  EXPECT_EQ(res["structuredContent"]["exitCode"], 0);
  EXPECT_EQ(res["content"][0]["text"], "HELLO\ncba\n");
  std::string status = res["content"].back()["text"];
  EXPECT_NE(status.find("exit code 0"), std::string::npos) << status;
}

TEST(Mcp, ReturnFilesGiveImagesAsImageContent) {
  McpProcess mcp;
  Initialize(mcp);
  json r = Tool(mcp, 2, "run_python",
                {{"code",
                  "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                  "plt.plot([1, 3, 2])\nplt.savefig('plot.png')\n"
                  "open('notes.txt', 'w').write('three points')"},
                 {"returnFiles", {"plot.png", "notes.txt", "missing.txt"}}});
  const json& res = r["result"];
  ASSERT_FALSE(res["isError"].get<bool>()) << r.dump().substr(0, 2000);
  int images = 0;
  std::string text;
  for (const json& c : res["content"]) {
    if (c["type"] == "image") {
      ++images;
      EXPECT_EQ(c["mimeType"], "image/png");
      EXPECT_EQ(c["data"].get<std::string>().substr(0, 8), "iVBORw0K");  // \x89PNG
    } else {
      text += c["text"].get<std::string>() + "\n";
    }
  }
  EXPECT_EQ(images, 1);
  // The keys are the names as asked (relative to the working directory).
  EXPECT_NE(text.find("file notes.txt:\nthree points"), std::string::npos) << text;
  EXPECT_NE(text.find("file missing.txt: not returned (ENOENT"), std::string::npos) << text;
  EXPECT_TRUE(res["structuredContent"]["files"].contains("plot.png"));
}

TEST(Mcp, FailingCodeIsAnErrorWithItsTracebackIntact) {
  McpProcess mcp;
  Initialize(mcp);
  json r = Tool(mcp, 2, "run_python", {{"code", "x = 1\ny = x / 0\n"}});
  const json& res = r["result"];
  EXPECT_TRUE(res["isError"].get<bool>());
  std::string err = res["structuredContent"]["stderr"];
  EXPECT_NE(err.find("File \"/home/sandbox/main.py\", line 2, in <module>"), std::string::npos)
      << err;
  EXPECT_NE(err.find("ZeroDivisionError: division by zero"), std::string::npos);
  std::string text;
  for (const json& c : res["content"]) text += c["text"].get<std::string>();
  EXPECT_NE(text.find("ZeroDivisionError"), std::string::npos);
  EXPECT_NE(text.find("exit code 1"), std::string::npos);
}

TEST(Mcp, RunCommandAndItsDenialsWithHints) {
  McpProcess mcp;
  Initialize(mcp);
  json r = Tool(mcp, 2, "run_command",
                {{"argv",
                  {"python3", "-c",
                   "import socket\ns=socket.socket()\ntry:\n s.connect(('1.1.1.1',80))\n"
                   "except OSError as e: print(e.errno)"}}});
  const json& res = r["result"];
  EXPECT_EQ(res["structuredContent"]["exitCode"], 0) << r.dump();
  ASSERT_FALSE(res["structuredContent"]["denied"].empty());
  std::string status = res["content"].back()["text"];
  EXPECT_NE(status.find("ENETUNREACH"), std::string::npos) << status;
  EXPECT_NE(status.find("network access is disabled"), std::string::npos) << status;
}

TEST(Mcp, TimeoutIsReportedAndCappedByTheServer) {
  McpProcess mcp({"--timeout", "2"});
  Initialize(mcp);
  json r =
      Tool(mcp, 2, "run_python", {{"code", "import time\ntime.sleep(30)"}, {"timeoutMs", 300}});
  EXPECT_TRUE(r["result"]["structuredContent"]["timedOut"].get<bool>()) << r.dump();
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(r["result"]["content"].back()["text"].get<std::string>().find("limit timeout"),
            std::string::npos);
  json above = Tool(mcp, 3, "run_python", {{"code", "1"}, {"timeoutMs", 5000}});
  EXPECT_EQ(above["error"]["code"], -32602) << above.dump();
  EXPECT_NE(above["error"]["message"].get<std::string>().find("limits.timeoutMs"),
            std::string::npos);
}

TEST(Mcp, FlagsTakeEqualsFormsAndUnits) {
  McpProcess mcp({"--timeout=2s", "--pool-size=0", "--memory=256MiB"});
  Initialize(mcp);
  json ok = Tool(mcp, 2, "run_python", {{"code", "print(1)"}, {"timeoutMs", 2000}});
  EXPECT_EQ(ok["result"]["structuredContent"]["stdout"], "1\n") << ok.dump();
  json above = Tool(mcp, 3, "run_python", {{"code", "1"}, {"timeoutMs", 2001}});
  EXPECT_EQ(above["error"]["code"], -32602) << above.dump();
}

TEST(Mcp, ProtocolErrors) {
  McpProcess mcp;
  Initialize(mcp);
  EXPECT_EQ(mcp.Call(2, "resources/list", json::object())["error"]["code"], -32601);
  EXPECT_EQ(Tool(mcp, 3, "rm_rf", json::object())["error"]["code"], -32602);
  EXPECT_EQ(Tool(mcp, 4, "run_python", {{"code", "1"}, {"shell", true}})["error"]["code"], -32602);
  EXPECT_EQ(Tool(mcp, 5, "run_python", json::object())["error"]["code"], -32602);
  EXPECT_EQ(Tool(mcp, 6, "run_command", {{"argv", json::array()}})["error"]["code"], -32602);
  EXPECT_EQ(
      Tool(mcp, 7, "run_python", {{"code", "1"}, {"files", {{"../x", "y"}}}})["error"]["code"],
      -32602);
  mcp.Send("{not json");
  json parse = json::parse(*mcp.ReadLine());
  EXPECT_EQ(parse["error"]["code"], -32700);
  EXPECT_TRUE(parse["id"].is_null());
  mcp.Send(R"({"jsonrpc":"2.0","id":8})");
  EXPECT_EQ(json::parse(*mcp.ReadLine())["error"]["code"], -32600);
  mcp.Send(R"([{"jsonrpc":"2.0","id":9,"method":"ping"}])");
  EXPECT_EQ(json::parse(*mcp.ReadLine())["error"]["code"], -32600);
  // A notification gets no answer: the next line is the ping's.
  mcp.Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
  EXPECT_EQ(mcp.Call(10, "ping", json::object())["id"], 10);
  EXPECT_EQ(mcp.Finish(), 0);
}

TEST(Mcp, CallsRunConcurrentlyAndPingsAreAnsweredMeanwhile) {
  McpProcess mcp;
  Initialize(mcp);
  mcp.SendJson(
      json{{"jsonrpc", "2.0"},
           {"id", 2},
           {"method", "tools/call"},
           {"params",
            {{"name", "run_python"}, {"arguments", {{"code", "import time\ntime.sleep(1)"}}}}}});
  json ping = mcp.Call(3, "ping", json::object());
  EXPECT_EQ(ping["id"], 3);  // answered before the run's end
  auto line = mcp.ReadLine();
  ASSERT_TRUE(line);
  EXPECT_EQ(json::parse(*line)["id"], 2);
}

}  // namespace
}  // namespace sentry::testing
