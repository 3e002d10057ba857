// serve's and mcp's returnFiles through the real binary: keys as asked,
// directories and patterns, symlinks never followed below a name, the caps
// said in the result; mcp's content blocks for them; mergeStderr's one
// ordered stream.
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agent/agent_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

constexpr const char* kMake =
    "import os\n"
    "os.makedirs('out/sub')\n"
    "open('out/a.csv','w').write('1,2')\n"
    "open('out/b.csv','w').write('3,4')\n"
    "open('out/notes.txt','w').write('n')\n"
    "open('out/sub/c.txt','w').write('deep')\n"
    "os.symlink('/etc/hostname', 'out/link')\n"
    "os.symlink('/etc', 'out/sub/etc')\n";

TEST(ReturnFiles, PatternsAndDirectoriesKeepTheKeysAsAsked) {
  ServeProcess serve({"--pool-size", "0"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  HttpReply r = serve.Post(
      {{"code", kMake}, {"returnFiles", {"out/*.csv", "out/sub", "/home/sandbox/out/notes.txt"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json f = r.Json()["files"];
  EXPECT_EQ(f["out/a.csv"]["text"], "1,2") << f.dump();
  EXPECT_EQ(f["out/b.csv"]["text"], "3,4");
  EXPECT_FALSE(f.contains("out/notes.txt"));  // not *.csv
  EXPECT_EQ(f["out/sub/c.txt"]["text"], "deep");
  EXPECT_EQ(f["out/sub/etc"]["error"], "a symlink (not followed)");
  EXPECT_EQ(f["/home/sandbox/out/notes.txt"]["text"], "n");
  EXPECT_EQ(f.size(), 5u) << f.dump();
  EXPECT_FALSE(r.Json().contains("filesLimit"));
  // A pattern that matches nothing says so; a matched symlink is not read.
  json none = serve.Post({{"code", kMake}, {"returnFiles", {"out/*.xlsx", "out/l*"}}}).Json();
  EXPECT_EQ(none["files"]["out/*.xlsx"]["error"], "no file matches") << none.dump();
  EXPECT_EQ(none["files"]["out/link"]["error"], "a symlink (not followed)");
}

TEST(ReturnFiles, CapsEndTheListAndTheResultSaysSo) {
  ServeProcess serve({"--pool-size", "0", "--return-file-max", "1k"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  // 50 files of 1 KiB: one name brings at most 1 KiB and 4 KiB of names
  // (5 KiB), each file counted with its name.
  json j = serve
               .Post({{"code",
                       "import os\nos.mkdir('many')\n"
                       "for i in range(50): open(f'many/{i:02}','w').write('x'*1024)\n"},
                      {"returnFiles", {"many"}}})
               .Json();
  EXPECT_EQ(j["files"].size(), 4u) << j.dump().substr(0, 500);
  EXPECT_EQ(j["files"]["many/03"]["size"], 1024);
  EXPECT_NE(j.value("filesLimit", "").find("in all (many/04 and what follows not taken)"),
            std::string::npos)
      << j.dump().substr(0, 500);
  // 1,500 empty files: the count cap (1,000 entries) before the bytes of
  // two names.
  json n = serve
               .Post({{"code",
                       "import os\nos.mkdir('e')\n"
                       "for i in range(1500): open(f'e/{i:04}','w')\n"},
                      {"returnFiles", {"e", "f"}}})
               .Json();
  EXPECT_EQ(n["files"].size(), 999u);  // the directory is the first entry
  EXPECT_EQ(n["filesLimit"], "at most 1000 files");
}

TEST(ReturnFiles, McpReturnsTextImagesAndBytes) {
  McpProcess mcp;
  mcp.Call(1, "initialize",
           {{"protocolVersion", "2025-06-18"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  json r = mcp.Call(2, "tools/call",
                    {{"name", "run_python"},
                     {"arguments",
                      {{"code",
                        "open('r.txt','w').write('report')\n"
                        "open('p.png','wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(8))\n"
                        "open('b.bin','wb').write(bytes([0, 255, 1]))\n"},
                       {"returnFiles", {"r.txt", "p.png", "b.bin", "gone.txt"}}}}});
  const json& res = r["result"];
  ASSERT_FALSE(res.value("isError", true)) << r.dump();
  std::string texts;
  json image, resource;
  for (const json& c : res["content"]) {
    if (c["type"] == "text") texts += c["text"].get<std::string>() + "\n";
    if (c["type"] == "image") image = c;
    if (c["type"] == "resource") resource = c["resource"];
  }
  EXPECT_NE(texts.find("file r.txt:\nreport"), std::string::npos) << texts;
  EXPECT_NE(texts.find("file gone.txt: not returned (ENOENT"), std::string::npos) << texts;
  EXPECT_EQ(image["mimeType"], "image/png") << res.dump();
  EXPECT_EQ(resource["uri"], "sandbox:b.bin") << res.dump();
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(resource["blob"].get<std::string>(), &bytes));
  EXPECT_EQ(bytes, std::string("\0\xff\x01", 3));
  EXPECT_EQ(res["structuredContent"]["files"]["r.txt"]["text"], "report");
}

TEST(MergeStderr, OneOrderedStreamStreamedAndInTheResult) {
  ServeProcess serve({"--pool-size", "0"});
  ASSERT_TRUE(serve.ok()) << serve.Stderr();
  json req = {{"argv",
               {"sh", "-c",
                "printf 'out1\\n'; printf 'err1\\n' >&2; printf 'out2\\n'; printf 'err2\\n' >&2"}},
              {"mergeStderr", true}};
  for (int i = 0; i < 5; ++i) {
    json j = serve.Post(req).Json();
    ASSERT_EQ(j["stdout"], "out1\nerr1\nout2\nerr2\n") << j.dump();
    ASSERT_EQ(j["stderr"], "");
  }
  HttpReply s = serve.Post(req, "/v1/runs?stream=1");
  ASSERT_EQ(s.status, 200) << s.body;
  std::string streamed;
  size_t start = 0;
  for (size_t end; (end = s.body.find('\n', start)) != std::string::npos; start = end + 1) {
    json line = json::parse(s.body.substr(start, end - start));
    if (line.contains("stream")) {
      EXPECT_EQ(line["stream"], "stdout") << line.dump();
      streamed += line["data"].get<std::string>();
    }
  }
  EXPECT_EQ(streamed, "out1\nerr1\nout2\nerr2\n") << s.body;
  EXPECT_EQ(serve.Post({{"argv", {"true"}}, {"mergeStderr", 1}}).status, 400);
}

}  // namespace
}  // namespace sentry::testing
