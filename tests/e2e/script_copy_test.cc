// The script argument through the real binary: what is copied in (a script
// named below the caller's cwd), what is not, and the one line that says so.
// tests/security/script_copy_test.cc has the attacks.
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// sentry's own lines on stderr ("sentry: ..."), in order.
std::vector<std::string> SentryLines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream lines(err);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("sentry: ", 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(ScriptCopy, ARelativeScriptIsCopiedAndRuns) {
  TempDir dir;
  dir.Write("x.py", "print('x ran')\n");
  dir.Write("sub/y.py", "import os; print(os.path.abspath(__file__))\n");
  dir.Write("tool", "#!/bin/sh\necho tool ran \"$@\"\n");  // a #! line, no suffix
  struct Case {
    std::vector<std::string> cmd;
    std::string out;
  };
  for (const Case& c : {Case{{kPython, "x.py"}, "x ran\n"}, Case{{kPython, "./x.py"}, "x ran\n"},
                        Case{{kPython, "-u", "sub/y.py"}, "/home/sandbox/sub/y.py\n"},
                        Case{{kPython, ".//sub/./y.py"}, "/home/sandbox/sub/y.py\n"},
                        Case{{"/bin/sh", "tool", "a"}, "tool ran a\n"}}) {
    ProcessResult r = SentryIn(dir.path(), {}, c.cmd);
    EXPECT_EQ(r.exit_code, 0) << c.cmd[1] << Describe(r);
    EXPECT_EQ(r.out, c.out) << c.cmd[1];
    EXPECT_TRUE(SentryLines(r.err).empty()) << Describe(r);
  }
}

TEST(ScriptCopy, AFileThatIsNoScriptIsNotCopiedButSaidSo) {
  TempDir dir;
  dir.Write("data.txt", "some data\n");
  ProcessResult r = SentryIn(dir.path(), {}, {"/bin/cat", "data.txt"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "");
  std::vector<std::string> lines = SentryLines(r.err);
  ASSERT_EQ(lines.size(), 1u) << Describe(r);
  EXPECT_NE(lines[0].find("data.txt not copied in: it does not look like a script"),
            std::string::npos)
      << lines[0];
  // What the notice points to.
  r = SentryIn(dir.path(), {"--copy", "data.txt:/home/sandbox/data.txt"}, {"/bin/cat", "data.txt"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "some data\n");
  EXPECT_TRUE(SentryLines(r.err).empty()) << Describe(r);
}

// One script is copied; later ones are said, not silently left out.
TEST(ScriptCopy, LaterScriptsAreNotCopiedButSaidSo) {
  TempDir dir;
  dir.Write("x.py", "import sys; print('x ran', sys.argv[1:])\n");
  dir.Write("h.py", "");
  dir.Write("g.sh", "");
  ProcessResult r = SentryIn(dir.path(), {}, {kPython, "x.py", "h.py", "g.sh", "nosuch.py"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "x ran ['h.py', 'g.sh', 'nosuch.py']\n");
  std::vector<std::string> lines = SentryLines(r.err);
  ASSERT_EQ(lines.size(), 1u) << Describe(r);
  EXPECT_NE(lines[0].find("h.py not copied in: only one script is"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("(1 more like it)"), std::string::npos) << lines[0];
  // An option's value taken for the script: the script itself is said.
  r = SentryIn(dir.path(), {}, {kPython, "-W", "ignore", "x.py"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  lines = SentryLines(r.err);
  ASSERT_EQ(lines.size(), 1u) << Describe(r);
  EXPECT_NE(lines[0].find("x.py not copied in: only one script is"), std::string::npos) << lines[0];
}

// Words that name nothing on the host, directories, and what the sandbox
// already has are the program's business: no notice.
TEST(ScriptCopy, NoNoticeForWhatIsNoHostFile) {
  TempDir dir;
  dir.Write("sub/keep", "");
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{kPython, "nosuch.py"},
                                             {"/bin/echo", "hello"},
                                             {"/bin/ls", "sub"},
                                             {"/bin/cat", "/etc/passwd"},
                                             {kPython, "-c", "print(1)"}}) {
    ProcessResult r = SentryIn(dir.path(), {}, cmd);
    EXPECT_TRUE(SentryLines(r.err).empty()) << cmd[1] << Describe(r);
  }
}

TEST(ScriptCopy, NoCopyScriptCopiesNothingAndSaysNothing) {
  TempDir dir;
  dir.Write("x.py", "print('x ran')\n");
  ProcessResult r = SentryIn(dir.path(), {"--no-copy-script"}, {kPython, "x.py"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(SentryLines(r.err).empty()) << Describe(r);
}

// Whatever the name holds, the notice is one line on stderr; with --json,
// stdout is still exactly the result object.
TEST(ScriptCopy, TheNoticeIsOneLineAndLeavesTheJsonAlone) {
  TempDir dir;
  std::string odd = dir.Write("two\nlines.py", "print('no')\n");
  ProcessResult r = SentryIn("/", {"--json"}, {kPython, odd});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{') << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one JSON line: " << r.out;
  EXPECT_NE(r.out.find("\"exitCode\":2"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("\n"), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find("two?lines.py not copied in: it is an absolute path"), std::string::npos)
      << r.err;
}

TEST(ScriptCopy, TheSizeCapIsFourMebibytes) {
  TempDir dir;
  dir.Write("fits.py", std::string(4 << 20, '#'));
  dir.Write("over.py", std::string((4 << 20) + 1, '#'));
  ProcessResult fits = SentryIn(dir.path(), {}, {kPython, "fits.py"});
  EXPECT_EQ(fits.exit_code, 0) << Describe(fits);
  EXPECT_TRUE(SentryLines(fits.err).empty()) << Describe(fits);
  ProcessResult over = SentryIn(dir.path(), {}, {kPython, "over.py"});
  EXPECT_EQ(over.exit_code, 2) << Describe(over);
  std::vector<std::string> lines = SentryLines(over.err);
  ASSERT_EQ(lines.size(), 1u) << Describe(over);
  EXPECT_NE(lines[0].find("over.py not copied in: it is larger than 4 MiB"), std::string::npos)
      << lines[0];
}

}  // namespace
}  // namespace sentry::testing
