// --trace's strace-like log and --copy of files and directories.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

TEST(TraceTest, LogsTrappedSyscallsStraceStyle) {
  // /tmp's listing trapped (with upper answers the guest's library reads it
  // from the fast-metadata region).
  ProcessResult r = RunSentry({"--trace", "--no-fast-upper"}, {"/bin/ls", "-la", "/tmp"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("total"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("openat("), std::string::npos);
  EXPECT_NE(r.err.find("getdents64("), std::string::npos);
  EXPECT_NE(r.err.find(" = "), std::string::npos);
  EXPECT_NE(r.err.find("\"/tmp\""), std::string::npos) << "paths are decoded";
  EXPECT_NE(r.err.find("ENOENT"), std::string::npos) << "errors are named";
  // Every line is strace -f's: "[pid N] " once a second task exists, then
  // "name(args) = result", or an event ("+++ exited with 0 +++", "--- SIG...").
  std::regex line_re(R"(^(\[pid +\d+\] )?(\w+\(.*\) += .+|\+\+\+ .* \+\+\+|--- .* ---)$)");
  std::istringstream in(r.err);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line.rfind("sentry:", 0) == 0) continue;  // notices
    EXPECT_TRUE(std::regex_match(line, line_re)) << line;
    ++lines;
  }
  EXPECT_GT(lines, 10);
}

TEST(TraceTest, NothingWithoutTheFlag) {
  ProcessResult r = RunSentry({}, {"/bin/ls", "-la", "/tmp"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.err, "");
}

TEST(CopyTest, FileAndDirectory) {
  TempDir host;
  std::string file = host.Write("input.csv", "a,b\n1,2\n");
  host.Write("tree/one.txt", "one\n");
  host.Write("tree/sub/two.txt", "two\n");
  host.Write("tree/sub/deeper/three.txt", "three\n", 0600);
  ProcessResult r = RunSentry(
      {"--copy", file + ":/home/sandbox/input.csv", "--copy",
       host.path() + "/tree:/home/sandbox/data/tree"},
      {"/bin/sh", "-c",
       "cat input.csv && cd data/tree && find . | sort && cat sub/two.txt sub/deeper/three.txt "
       "&& stat -c %a sub/deeper/three.txt && echo more >> one.txt && cat one.txt"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out,
            "a,b\n1,2\n"
            ".\n./one.txt\n./sub\n./sub/deeper\n./sub/deeper/three.txt\n./sub/two.txt\n"
            "two\nthree\n600\none\nmore\n");
  EXPECT_EQ(ReadHostFile(host.path() + "/tree/one.txt"), "one\n");
}

TEST(CopyTest, IntoADirectoryOutsideHome) {
  TempDir host;
  host.Write("tree/f.txt", "f\n");
  ProcessResult r = RunSentry({"--copy", host.path() + "/tree:/data"}, {"/bin/cat", "/data/f.txt"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "f\n");
}

TEST(CopyTest, MissingHostPathIs125) {
  ProcessResult r = RunSentry({"--copy", "/no/such/file:/home/sandbox/x"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.err.find("/no/such/file"), std::string::npos) << r.err;
}

TEST(CopyTest, RelativeGuestPathIs125) {
  TempDir host;
  std::string file = host.Write("f", "x");
  ProcessResult r = RunSentry({"--copy", file + ":relative/f"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
}

TEST(CopyTest, CopiedExecutableRuns) {
  TempDir host;
  std::string script = host.Write("run.sh", "#!/bin/sh\necho ran \"$@\"\n", 0755);
  ProcessResult r =
      RunSentry({"--copy", script + ":/home/sandbox/run.sh"}, {"/home/sandbox/run.sh", "a", "b"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "ran a b\n");
}

TEST(WorkdirTest, IsMadeForTheGuestAndIsItsCwd) {
  ProcessResult r = RunSentry({"--workdir", "/work/project"},
                              {"/bin/sh", "-c", "pwd; stat -c '%U %a' .; touch x && ls"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "/work/project\nsandbox 755\nx\n");
  ProcessResult existing = RunSentry({"--workdir", "/tmp"}, {"/bin/pwd"});
  EXPECT_EQ(existing.out, "/tmp\n") << Describe(existing);
}

TEST(WorkdirTest, TheScriptArgumentIsCopiedThere) {
  TempDir host;
  host.Write("script.py", "import os\nprint(os.getcwd(), os.path.abspath(__file__))\n");
  ProcessResult r = SentryIn(host.path(), {"--workdir", "/w"}, {"/usr/bin/python3", "script.py"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "/w /w/script.py\n");
}

TEST(WorkdirTest, RelativeOrNotADirectoryIs125) {
  ProcessResult rel = RunSentry({"--workdir", "work"}, {"/bin/true"});
  EXPECT_EQ(rel.exit_code, 125) << Describe(rel);
  EXPECT_NE(rel.err.find("--workdir"), std::string::npos) << rel.err;
  ProcessResult file = RunSentry({"--workdir", "/etc/passwd/x"}, {"/bin/true"});
  EXPECT_EQ(file.exit_code, 125) << Describe(file);
  EXPECT_NE(file.err.find("not a directory"), std::string::npos) << file.err;
}

}  // namespace
}  // namespace sentry::testing
