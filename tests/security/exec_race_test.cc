// An execve's path is read by the kernel from guest memory after the sentry
// planned it, so a sibling thread can change it in between. Whatever it makes
// the kernel open, only the binary the sentry planned may run: for a binary,
// that file; for a "#!" script (of the lower layer or in memory), the
// interpreter at the end of its chain. Each race test counts the tries the
// racer actually won (the guest was killed at the exec event), so that none
// passes for want of a race.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

constexpr const char* kGuestRaceProbe = "/tmp/exec_race";
constexpr const char* kSwap = "/usr/bin/false";  // exits 1: "swapped" in the probe's count

std::string RaceProbePath() {
#ifdef EXEC_RACE_PROBE_PATH
  return EXEC_RACE_PROBE_PATH;
#else
  return "exec_race_probe";
#endif
}

// The bar is 10,000 tries a case; the run on the seccomp wall alone takes a
// tenth (it repeats the same code). EXEC_RACE_TRIES overrides both.
long Tries() {
  if (const char* env = getenv("EXEC_RACE_TRIES")) return atol(env);
  return SeccompOnly() ? 1000 : 10000;
}

struct RaceCounts {
  long tries = -1, planned = -1, swapped = -1, killed = -1, failed = -1, other = -1, raced = -1;
};

RaceCounts Parse(const std::string& out) {
  Results r = ParseResults(std::regex_replace(out, std::regex(" "), "\n"));
  auto num = [&](const char* k) { return r.count(k) ? atol(r[k].c_str()) : -1; };
  return {num("tries"),  num("planned"), num("swapped"), num("killed"),
          num("failed"), num("other"),   num("raced")};
}

// Runs `exec_race_probe MODE TRIES /usr/bin/false TARGET ARGS...` in one
// sandbox (scripts: host files copied to /tmp/up.sh etc. first).
void ExpectRaceNeverWins(const std::string& mode, const std::vector<std::string>& target,
                         const std::vector<std::string>& flags = {}, long tries = Tries(),
                         const std::string& swap = kSwap) {
  std::vector<std::string> all = {"--timeout", "850", "--copy",
                                  RaceProbePath() + ":" + kGuestRaceProbe};
  all.insert(all.end(), flags.begin(), flags.end());
  std::vector<std::string> cmd = {kGuestRaceProbe, mode, std::to_string(tries), swap};
  cmd.insert(cmd.end(), target.begin(), target.end());
  ProcessResult r = sentry::testing::RunSentry(all, cmd, "", 900);
  RaceCounts c = Parse(r.out);
  std::printf("  %s %s: %s", mode.c_str(), target[0].c_str(), r.out.c_str());
  ASSERT_EQ(c.tries, tries) << Describe(r);
  EXPECT_EQ(c.swapped, 0) << "the swapped program ran\n" << Describe(r);
  EXPECT_EQ(c.other, 0) << Describe(r);
  EXPECT_GT(c.planned, 0) << Describe(r);
  // The race was run, and won at the kernel's read often enough to count: each
  // of those tries was killed at the exec event.
  EXPECT_GE(c.killed, 10) << "the race was hardly exercised\n" << Describe(r);
  EXPECT_GT(c.raced, 0) << Describe(r);
  if (c.killed > 0) {
    EXPECT_NE(r.err.find("other than the one the sentry"), std::string::npos) << Describe(r);
  }
}

bool HostHas(const char* path) { return access(path, X_OK) == 0; }

// A #! script of the lower layer (gunzip is "#!/bin/sh"; --version prints and
// exits 0 without another exec). The reproduction used /usr/bin/ldd.
TEST(ExecRace, LowerScriptPathSwapNeverWins) {
  if (!HostHas("/usr/bin/gunzip")) GTEST_SKIP() << "no /usr/bin/gunzip";
  ExpectRaceNeverWins("execve", {"/usr/bin/gunzip", "--version"});
}

// The same script run by execveat(fd, "", AT_EMPTY_PATH): the sentry hands the
// kernel a path instead of the fd, which the racer changes the same way.
TEST(ExecRace, LowerScriptByFdSwapNeverWins) {
  if (!HostHas("/usr/bin/gunzip")) GTEST_SKIP() << "no /usr/bin/gunzip";
  ExpectRaceNeverWins("fd", {"/usr/bin/gunzip", "--version"});
}

TEST(ExecRace, InMemoryScriptPathSwapNeverWins) {
  TempDir dir("/tmp/exec-race-");
  WriteFileOrDie(dir.path() + "/up.sh", "#!/bin/sh\nexit 0\n", 0755);
  ExpectRaceNeverWins("execve", {"/tmp/up.sh"}, {"--copy", dir.path() + "/up.sh:/tmp/up.sh"});
}

TEST(ExecRace, BinaryPathSwapNeverWins) { ExpectRaceNeverWins("execve", {"/usr/bin/true"}); }

// Swapped for another script of the same interpreter, the kernel would run
// the planned binary (dash) on that script: no more than `sh OTHER`, which the
// guest may do anyway, but the sentry checks the path the kernel read as well
// (AT_EXECFN), so even that never runs. Here dash would run gunzip on the
// argument /tmp/up.sh, which ends in exit 2 (an "other": 428 of 2,000 tries
// before that check).
TEST(ExecRace, SameInterpreterScriptSwapNeverRuns) {
  if (!HostHas("/usr/bin/gunzip")) GTEST_SKIP() << "no /usr/bin/gunzip";
  TempDir dir("/tmp/exec-race-");
  WriteFileOrDie(dir.path() + "/up.sh", "#!/bin/sh\nexit 0\n", 0755);
  ExpectRaceNeverWins("execve", {"/tmp/up.sh"}, {"--copy", dir.path() + "/up.sh:/tmp/up.sh"},
                      std::min(Tries(), 2000L), "/usr/bin/gunzip");
}

// The chain binfmt_script walks, as the sentry now walks it itself: a script
// whose interpreter is a script whose interpreter is a script, with a "#!"
// argument holding blanks, gives the final interpreter the argv Linux gives it.
// Run natively and in the sandbox, the outputs must match.
TEST(ExecScripts, ChainArgvAsLinux) {
  auto write_chain = [](const std::string& host_dir, const std::string& named_dir) {
    WriteFileOrDie(host_dir + "/show.sh",
                   "#!/bin/sh\nfor a in \"$0\" \"$@\"; do echo \"[$a]\"; done\n", 0755);
    WriteFileOrDie(host_dir + "/mid", "#! " + named_dir + "/show.sh \t two  words \t\n", 0755);
    WriteFileOrDie(host_dir + "/top", "#!" + named_dir + "/mid\n", 0755);
    WriteFileOrDie(host_dir + "/noarg", "#!" + named_dir + "/show.sh", 0755);  // no newline
    // Six scripts deep: one more than Linux follows.
    for (int i = 1; i <= 6; ++i) {
      WriteFileOrDie(
          host_dir + "/deep" + std::to_string(i),
          "#!" + named_dir + (i == 1 ? "/show.sh" : "/deep" + std::to_string(i - 1)) + "\n", 0755);
    }
  };
  const std::string py =
      "import subprocess, sys, os\n"
      "d = sys.argv[1]\n"
      "for argv in ([d + '/top', 'x y'], [d + '/noarg', 'z'], [d + '/deep5'], [d + '/deep6']):\n"
      "    try:\n"
      "        out = subprocess.run(argv, capture_output=True, text=True).stdout\n"
      "        print(argv[0].replace(d, 'D'), out.replace(d, 'D').replace('\\n', ' '))\n"
      "    except OSError as e:\n"
      "        print(argv[0].replace(d, 'D'), 'errno', e.errno)\n";
  TempDir native("/tmp/exec-chain-");
  write_chain(native.path(), native.path());
  ProcessResult n = sentry::testing::RunProcess({"/usr/bin/python3", "-c", py, native.path()});
  ASSERT_EQ(n.exit_code, 0) << Describe(n);
  TempDir sandboxed("/tmp/exec-chain-");
  write_chain(sandboxed.path(), "/tmp/c");
  ProcessResult s = sentry::testing::RunSentry({"--copy", sandboxed.path() + ":/tmp/c"},
                                               {"/usr/bin/python3", "-c", py, "/tmp/c"});
  ASSERT_EQ(s.exit_code, 0) << Describe(s);
  EXPECT_EQ(s.out, n.out);
  EXPECT_NE(n.out.find("[D/show.sh] [two  words] [D/mid] [D/top] [x y]"), std::string::npos)
      << n.out;
  EXPECT_NE(n.out.find("D/deep6 errno 40"), std::string::npos) << n.out;  // ELOOP
}

}  // namespace
}  // namespace sentry::security
