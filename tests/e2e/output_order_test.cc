// The order of stdout and stderr through the real binary: where the caller's
// two streams are one file (`>out.log 2>&1`, `2>&1 | cat`) the guest's
// writes reach it in the order written, as natively; --merge-stderr gives a
// --json caller the same one ordered stream.
#include <string>

#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

// Four writes, alternating streams, each its own write(2) (dash's printf).
constexpr const char* kAlternate =
    "printf 'out1\\n'; printf 'err1\\n' >&2; printf 'out2\\n'; printf 'err2\\n' >&2";
constexpr const char* kInOrder = "out1\nerr1\nout2\nerr2\n";

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

// sentry run -- sh -c kAlternate, with the shell redirections given.
ProcessResult Shell(const std::string& redirect) {
  // kAlternate's quotes, escaped for the outer shell.
  std::string program =
      "printf \"out1\\n\"; printf \"err1\\n\" >&2; printf \"out2\\n\"; "
      "printf \"err2\\n\" >&2";
  std::string cmd =
      Quoted(SentryBinary()) + " run -- /bin/sh -c " + Quoted(program) + " " + redirect;
  return RunProcess({"/bin/sh", "-c", cmd});
}

TEST(OutputOrder, OneFileForBothKeepsTheOrderWritten) {
  TempDir dir;
  std::string log = dir.path() + "/out.log";
  // Natively first: the test's program is what it claims.
  ProcessResult native =
      RunProcess({"/bin/sh", "-c", std::string("(") + kAlternate + ") >" + log + " 2>&1"});
  ASSERT_EQ(native.exit_code, 0);
  ASSERT_EQ(ReadHostFile(log), kInOrder);
  for (int i = 0; i < 20; ++i) {
    ProcessResult r = Shell(">" + log + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    ASSERT_EQ(ReadHostFile(log), kInOrder) << "repetition " << i;
  }
  // The guest holds one pipe of the sentry's on both, never the caller's file.
  ProcessResult r = RunProcess({"/bin/sh", "-c",
                                "'" + SentryBinary() +
                                    "' run -- /bin/sh -c 'stat -L -c \"%F %i\" /proc/self/fd/1 " +
                                    "/proc/self/fd/2' >" + log + " 2>&1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string both = ReadHostFile(log);
  ASSERT_EQ(both.rfind("fifo ", 0), 0u) << both;
  size_t nl = both.find('\n');
  EXPECT_EQ(both.substr(0, nl + 1), both.substr(nl + 1)) << both;
}

TEST(OutputOrder, OnePipeForBothKeepsTheOrderWritten) {
  for (int i = 0; i < 5; ++i) {
    ProcessResult r = Shell("2>&1 | cat");
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    ASSERT_EQ(r.out, kInOrder) << "repetition " << i;
  }
}

TEST(OutputOrder, SeparateFilesStaySeparate) {
  ProcessResult r = RunSentry({}, {"/bin/sh", "-c", kAlternate});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "out1\nout2\n");
  EXPECT_EQ(r.err, "err1\nerr2\n");
}

TEST(OutputOrder, MergeStderrGivesJsonOneOrderedStream) {
  for (int i = 0; i < 5; ++i) {
    ProcessResult r = RunSentry({"--json", "--merge-stderr"}, {"/bin/sh", "-c", kAlternate});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    ASSERT_NE(r.out.find(R"("stdout":"out1\nerr1\nout2\nerr2\n")"), std::string::npos) << r.out;
    ASSERT_NE(r.out.find(R"("stderr":"")"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace sentry::testing
