// --tool's parsing (sentry/tools/host_tool.h): the word split without a
// shell, the names refused, and the depth bound checked before a JSON parse.
#include "sentry/tools/host_tool.h"

#include <gtest/gtest.h>

namespace sentry::tools {
namespace {

std::vector<std::string> Words(const std::string& command) {
  std::vector<std::string> words;
  std::string why;
  EXPECT_TRUE(SplitCommandWords(command, &words, &why)) << command << ": " << why;
  return words;
}

bool Refused(const std::string& command) {
  std::vector<std::string> words;
  std::string why;
  return !SplitCommandWords(command, &words, &why) && !why.empty();
}

TEST(HostToolTest, SplitsLikeAShell) {
  EXPECT_EQ(Words("/bin/tool  a\tb"), (std::vector<std::string>{"/bin/tool", "a", "b"}));
  EXPECT_EQ(Words("t 'a b' \"c \\\" d\" e\\ f"),
            (std::vector<std::string>{"t", "a b", "c \" d", "e f"}));
  EXPECT_EQ(Words("t '$(id) | x'"), (std::vector<std::string>{"t", "$(id) | x"}));
  EXPECT_EQ(Words("t ''"), (std::vector<std::string>{"t", ""}));
}

TEST(HostToolTest, RefusesWhatAShellWouldInterpret) {
  for (const char* c : {"t | id", "t; id", "t && id", "t > f", "t $(id)", "t `id`", "t *",
                        "t \"$HOME\"", "t 'open", "t \"open", "t \\", "", "   "}) {
    EXPECT_TRUE(Refused(c)) << c;
  }
}

TEST(HostToolTest, NamesAreIdentifiers) {
  HostTool t;
  EXPECT_EQ(ParseToolFlag("lookup_2=/bin/true", &t), "");
  EXPECT_EQ(t.name, "lookup_2");
  EXPECT_EQ(t.argv, std::vector<std::string>{"/bin/true"});
  EXPECT_EQ(ParseToolFlag("echo=true", &t), "");  // found on PATH, made absolute
  EXPECT_EQ(t.argv[0][0], '/');
  for (const char* bad : {"=/bin/true", "../x=/bin/true", "a/b=/bin/true", "a-b=/bin/true",
                          "_a=/bin/true", "class=/bin/true", "ToolError=/bin/true", "no_equals",
                          "a=/no/such/program", "a=no-such-program-anywhere"}) {
    EXPECT_NE(ParseToolFlag(bad, &t), "") << bad;
  }
  EXPECT_NE(ParseToolFlag(std::string(65, 'a') + "=/bin/true", &t), "");
}

TEST(HostToolTest, AddToolRefusesDuplicatesAndTooMany) {
  std::vector<HostTool> tools;
  EXPECT_EQ(AddTool(tools, {"a", {"/bin/true"}}), "");
  EXPECT_NE(AddTool(tools, {"a", {"/bin/true"}}), "");
  for (size_t i = 1; i < kMaxTools; ++i) {
    EXPECT_EQ(AddTool(tools, {"t" + std::to_string(i), {"/bin/true"}}), "");
  }
  EXPECT_NE(AddTool(tools, {"one_more", {"/bin/true"}}), "");
}

TEST(HostToolTest, DepthIsCountedOutsideStrings) {
  EXPECT_TRUE(JsonDepthAtMost("{\"a\": [1, {\"b\": 2}]}", 3));
  EXPECT_FALSE(JsonDepthAtMost("{\"a\": [1, {\"b\": 2}]}", 2));
  EXPECT_TRUE(JsonDepthAtMost("\"[[[[[[\\\"[[[[\"", 1));
  EXPECT_FALSE(JsonDepthAtMost(std::string(200, '['), 128));
}

}  // namespace
}  // namespace sentry::tools
