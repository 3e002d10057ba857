// The command line: help, flag errors, exit codes, and `sentry syscalls`.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/e2e/e2e_util.h"
#include "tests/util/json_read.h"

namespace sentry::testing {
namespace {

const char* const kRunFlags[] = {"--copy",           "--env",   "--timeout", "--disk", "--root",
                                 "--no-copy-script", "--trace", "--help"};

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(CliTest, TopLevelHelp) {
  for (const char* flag : {"--help", "-h", "help"}) {
    ProcessResult r = Sentry({flag});
    EXPECT_EQ(r.exit_code, 0) << flag << "\n" << Describe(r);
    EXPECT_NE(r.out.find("run"), std::string::npos);
    EXPECT_NE(r.out.find("syscalls"), std::string::npos);
    EXPECT_NE(r.out.find("--json"), std::string::npos);
    EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
  }
  ProcessResult none = Sentry({});
  EXPECT_EQ(none.exit_code, 125);
  EXPECT_NE(none.err.find("usage"), std::string::npos);
  for (const char* flag : {"--version", "version"}) {
    ProcessResult v = Sentry({flag});
    EXPECT_EQ(v.exit_code, 0) << Describe(v);
    EXPECT_EQ(v.out.rfind("sentry ", 0), 0u) << v.out;
  }
}

TEST(CliTest, RunHelpMentionsEveryFlagAndExitCode) {
  ProcessResult r = Sentry({"run", "--help"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* flag : kRunFlags) EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  for (const char* code : {"124", "125", "126", "127", "128+N"}) {
    EXPECT_NE(r.out.find(code), std::string::npos) << code;
  }
  EXPECT_EQ(Sentry({"run", "-h"}).out, r.out);
}

TEST(CliTest, EveryFlagTheParserKnowsIsInTheHelp) {
  std::string source = ReadHostFile(std::string(SENTRY_SOURCE_DIR) + "/sentry/cli/run_flags.cc");
  ASSERT_FALSE(source.empty());
  std::string help = Sentry({"run", "--help"}).out;
  // A flag's names, as FlagSet takes them: "--json" or "-m,--memory".
  std::regex flag_re("[\",](--[a-z][a-z-]+)\",");
  int parsed = 0;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), flag_re);
       it != std::sregex_iterator(); ++it) {
    std::string flag = (*it)[1];
    ++parsed;
    EXPECT_NE(help.find(flag), std::string::npos) << flag << " is parsed but not in the help";
  }
  EXPECT_GE(parsed, static_cast<int>(std::size(kRunFlags)));
}

TEST(CliTest, EveryFlagInTheHelpIsAccepted) {
  std::string help = Sentry({"run", "--help"}).out;
  std::regex flag_re("--[a-z][a-z-]+");
  std::set<std::string> flags;
  for (auto it = std::sregex_iterator(help.begin(), help.end(), flag_re);
       it != std::sregex_iterator(); ++it) {
    flags.insert(it->str());
  }
  EXPECT_GE(flags.size(), std::size(kRunFlags));
  for (const std::string& flag : flags) {
    ProcessResult r = Sentry({"run", flag});
    EXPECT_EQ(r.err.find("unknown flag"), std::string::npos) << flag << ": " << r.err;
  }
}

TEST(CliTest, UnknownFlagIs125AndNamesIt) {
  ProcessResult r = RunSentry({"--frobnicate"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(FirstLine(r.err).find("--frobnicate"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  ProcessResult cmd = Sentry({"frobnicate"});
  EXPECT_EQ(cmd.exit_code, 125);
  EXPECT_NE(FirstLine(cmd.err).find("frobnicate"), std::string::npos) << cmd.err;
}

TEST(CliTest, BadFlagValuesAre125) {
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--timeout", "soon"}, {"--timeout", "-1"}, {"--disk", "0"}, {"--copy", "nocolon"}}) {
    ProcessResult r = RunSentry(flags, {"/bin/true"});
    EXPECT_EQ(r.exit_code, 125) << flags[0] << " " << flags[1] << "\n" << Describe(r);
    EXPECT_NE(r.err.find(flags[0]), std::string::npos) << r.err;
  }
  ProcessResult missing_value = Sentry({"run", "--timeout"});
  EXPECT_EQ(missing_value.exit_code, 125);
}

TEST(CliTest, NoCommandIs125) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run"}, {"run", "--"}, {"run", "--env", "A=B", "--"}}) {
    ProcessResult r = Sentry(args);
    EXPECT_EQ(r.exit_code, 125) << Describe(r);
    EXPECT_NE(r.err.find("no command"), std::string::npos) << r.err;
  }
}

TEST(CliTest, MissingProgramIs127WithAMessage) {
  ProcessResult abs = RunSentry({}, {"/no/such/program"});
  EXPECT_EQ(abs.exit_code, 127) << Describe(abs);
  EXPECT_NE(abs.err.find("/no/such/program"), std::string::npos) << abs.err;
  ProcessResult bare = RunSentry({}, {"no-such-program-anywhere"});
  EXPECT_EQ(bare.exit_code, 127) << Describe(bare);
  EXPECT_NE(bare.err.find("no-such-program-anywhere"), std::string::npos) << bare.err;
  // A program that exists on the host but not in the sandbox.
  ProcessResult hidden = RunSentry({}, {SentryBinary()});
  EXPECT_EQ(hidden.exit_code, 127) << Describe(hidden);
}

TEST(CliTest, ProgramsFoundOnThePath) {
  ProcessResult r = RunSentry({}, {"echo", "found"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "found\n");
}

// The case the bug check below recognises: sentry said nothing and gave 127.
bool SilentNotFound(const ProcessResult& r) { return r.exit_code == 127 && r.err.empty(); }

TEST(CliTest, DirectoryAsProgramIs126) {
  ProcessResult r = RunSentry({}, {"/usr/bin"});
  EXPECT_EQ(r.exit_code, 126) << Describe(r);
  EXPECT_NE(r.err.find("/usr/bin"), std::string::npos) << r.err;
}

TEST(CliTest, NonExecutableFileAsProgramIs126) {
  TempDir dir;
  std::string data = dir.Write("data.txt", "not a program\n", 0644);
  ProcessResult r =
      RunSentry({"--copy", data + ":/home/sandbox/data.txt"}, {"/home/sandbox/data.txt"});
  if (SilentNotFound(r)) {
    GTEST_SKIP() << "BUG: a file without x permission as the program exits 127 with no "
                    "message; expected 126 with a message. Repro: sentry run -- "
                    "/usr/lib/os-release; echo $?";
  }
  EXPECT_EQ(r.exit_code, 126) << Describe(r);
  EXPECT_NE(r.err.find("data.txt"), std::string::npos) << r.err;
}

TEST(CliTest, GuestExitCodePassesThrough) {
  ProcessResult r = RunPython("import sys; sys.exit(3)");
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_EQ(RunSentry({}, {"/bin/sh", "-c", "exit 42"}).exit_code, 42);
  EXPECT_EQ(RunSentry({}, {"/bin/false"}).exit_code, 1);
}

// The phases --timings printed (in order), their sum and the total, or
// nothing if there is no timings line.
struct Timings {
  std::vector<std::string> phases;
  double sum = 0, total = -1;
};
Timings ParseTimings(const std::string& err) {
  Timings t;
  std::smatch m;
  if (!std::regex_search(err, m, std::regex("sentry: timings \\(ms\\): (.*), total ([0-9.]+)\n"))) {
    return t;
  }
  t.total = std::stod(m[2]);
  std::string list = m[1];
  std::regex item("([a-z ]+) ([0-9.]+)(, |$)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), item); it != std::sregex_iterator();
       ++it) {
    t.phases.push_back((*it)[1]);
    t.sum += std::stod((*it)[2]);
  }
  return t;
}

// --timings names every phase once, in order, and they add up to the total,
// also when the guest is killed at its timeout.
TEST(CliTest, TimingsListEveryPhaseOfTheRun) {
  const std::vector<std::string> expected = {"prepare", "namespaces", "cgroups",    "vfs",
                                             "kernel",  "network",    "mount view", "admit",
                                             "loader",  "supervisor", "guest",      "sandbox exit",
                                             "drain",   "cleanup",    "log"};
  ProcessResult r = RunSentry({"--timings"}, {"/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7) << Describe(r);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err.find("err\n"), 0u) << r.err;  // the guest's own output comes first
  Timings t = ParseTimings(r.err);
  EXPECT_EQ(t.phases, expected) << r.err;
  EXPECT_NEAR(t.sum, t.total, 0.05 * t.phases.size() + 0.01);

  ProcessResult slow = RunSentry({"--timings", "--timeout", "0.5"}, {"sleep", "10"}, "", 20);
  EXPECT_EQ(slow.exit_code, 124) << Describe(slow);
  Timings ts = ParseTimings(slow.err);
  EXPECT_EQ(ts.phases, expected) << slow.err;
  EXPECT_NEAR(ts.sum, ts.total, 0.05 * ts.phases.size() + 0.01);
}

TEST(CliTest, GuestKilledBySignalIs128PlusN) {
  ProcessResult r = RunPython("import os; os.kill(os.getpid(), 9)");
  EXPECT_EQ(r.exit_code, 137) << Describe(r);
  ProcessResult segv = RunPython("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)");
  EXPECT_EQ(segv.exit_code, 139) << Describe(segv);
  // SIGTERM: see SignalTest.
}

TEST(CliTest, RunEndsWhenTheGuestDoesEvenWithBackgroundChildren) {
  double start = Now();
  ProcessResult r = RunSentry({}, {"/bin/sh", "-c", "sleep 100 & echo started"}, "", 20);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_LT(Now() - start, 5);
}

TEST(CliTest, TimeoutIs124) {
  double start = Now();
  ProcessResult r = RunSentry({"--timeout", "1"}, {"sleep", "10"}, "", 20);
  double elapsed = Now() - start;
  EXPECT_EQ(r.exit_code, 124) << Describe(r);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(elapsed, 2.5);
  EXPECT_GE(elapsed, 0.9);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
}

TEST(CliTest, TimeoutKillsTheGuestsChildrenToo) {
  double start = Now();
  ProcessResult r =
      RunSentry({"--timeout", "0.5"}, {"/bin/sh", "-c", "sleep 10 & sleep 10 & wait"}, "", 20);
  EXPECT_EQ(r.exit_code, 124) << Describe(r);
  EXPECT_LT(Now() - start, 2.5);
}

TEST(CliTest, DiskFlagCapsWhatTheGuestStores) {
  ProcessResult r =
      RunSentry({"--disk", "1"}, {"/usr/bin/python3", "-c",
                                  "try:\n"
                                  "    open('/tmp/big', 'wb').write(b'x' * (2 << 20))\n"
                                  "    print('wrote')\n"
                                  "except OSError as e:\n"
                                  "    print('errno', e.errno)\n"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "errno 28\n");  // ENOSPC
}

TEST(CliTest, JsonResult) {
  ProcessResult r =
      RunSentry({"--json"}, {"/usr/bin/python3", "-c",
                             "import sys; print('out'); print('err', file=sys.stderr); "
                             "sys.exit(3)"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  ProcessResult check =
      RunProcess({"/usr/bin/python3", "-c",
                  "import json, sys\n"
                  "lines = sys.stdin.read().splitlines()\n"
                  "assert len(lines) == 1, lines\n"
                  "d = json.loads(lines[0])\n"
                  "print(repr(d['stdout']), repr(d['stderr']), d['exitCode'], d['timedOut'])\n"},
                 r.out);
  EXPECT_EQ(check.exit_code, 0) << Describe(check) << "\ninput was:\n" << r.out;
  EXPECT_EQ(check.out, "'out\\n' 'err\\n' 3 False\n");
}

// Refusals the filter makes itself (errno rows, failed argument filters) are
// listed too, with a hint the model can act on; ENOSYS probes are not.
TEST(CliTest, JsonResultListsTheTablesOwnRefusals) {
  ProcessResult r = RunSentry(
      {"--json"}, {"/usr/bin/python3", "-c",
                   "import ctypes, errno\n"
                   "libc = ctypes.CDLL(None, use_errno=True)\n"
                   "for nr, args in [(101, (0, 0, 0, 0)), (272, (0x10000000,)), (56, (0x10000011, "
                   "0, 0, 0, 0)),\n"
                   "                 (435, (0, 0)), (425, (1, 0))]:\n"
                   "    libc.syscall(nr, *args); print(errno.errorcode[ctypes.get_errno()])\n"});
  ProcessResult check = RunProcess(
      {"/usr/bin/python3", "-c",
       "import json, sys\n"
       "d = json.loads(sys.stdin.read())\n"
       "print(d['stdout'].split())\n"
       "for x in d['denied']: print(x['syscall'], x['error'], 'not permitted' in x['hint'])\n"},
      r.out);
  EXPECT_EQ(check.out,
            "['EPERM', 'EPERM', 'EPERM', 'ENOSYS', 'ENOSYS']\n"
            "ptrace EPERM True\nunshare EPERM True\nclone EPERM True\n")
      << Describe(check) << r.out;
}

std::string SeccompName(int nr) {
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
  std::string out = name ? name : "";
  free(name);
  return out;
}

// `sentry check` tries each feature for real; on this host all of them work.
// The sentry-* cgroups under the pids controller's root (the probe's among them).
TEST(CliTest, CheckFindsEverythingSentryNeedsOnThisHost) {
  std::set<std::string> cgroups_before = SentryCgroups();
  ProcessResult r = Sentry({"check"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("sentry runs here."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISSING"), std::string::npos) << r.out;
  ProcessResult j = Sentry({"check", "--json"});
  ASSERT_EQ(j.exit_code, 0) << Describe(j);
  std::optional<nlohmann::json> v = ParseJson(j.out);
  ASSERT_TRUE(v.has_value()) << j.out;
  EXPECT_EQ(At(*v, "runs"), true);
  std::set<std::string> names;
  for (const nlohmann::json& c : At(*v, "checks")) {
    names.insert(Str(At(c, "name")));
    EXPECT_EQ(At(c, "ok"), true) << Str(At(c, "name")) << ": " << Str(At(c, "detail"));
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"root", "seccomp listener", "fd donation", "synchronous wake-up",
                                   "openat2", "ptrace", "namespaces", "cgroups"}));
  EXPECT_EQ(j.err, "");
  EXPECT_EQ(SentryCgroups(), cgroups_before);  // the probe cgroup is gone again
  EXPECT_EQ(Sentry({"check", "--bogus"}).exit_code, 125);
}

// Where a seccomp profile refuses namespaces (a container's default), check
// says which are missing and what to do, and that runs stand on the seccomp
// wall alone (seccomp_only_test.cc tests such runs).
TEST(CliTest, WithoutNamespacesCheckSaysWhatIsMissing) {
  ProcessResult r = RunProcess({WITHOUT_NAMESPACES, SentryBinary(), "check"}, "");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("missing  namespaces"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("user (EPERM)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("allow user namespaces"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sentry runs here, on the seccomp wall alone"), std::string::npos) << r.out;
  ProcessResult j = RunProcess({WITHOUT_NAMESPACES, SentryBinary(), "check", "--json"}, "");
  EXPECT_EQ(j.exit_code, 0) << Describe(j);
  EXPECT_NE(j.out.find(R"("runs":true,"walls":["seccomp"])"), std::string::npos) << j.out;
}

TEST(CliTest, SyscallsListsEveryX86_64Syscall) {
  ProcessResult r = Sentry({"syscalls"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::set<std::string> listed;
  std::istringstream in(r.out);
  std::string line;
  std::regex row_re(R"(^\s*(\d+)\s+(\w+)\s+(.+)$)");
  std::map<std::string, std::string> action;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row_re)) {
      listed.insert(m[2]);
      action[m[2]] = m[3];
    }
  }
  for (int nr = 0; nr < 1024; ++nr) {
    std::string name = SeccompName(nr);
    if (!name.empty()) {
      EXPECT_TRUE(listed.count(name)) << name << " is not listed";
    }
  }
  EXPECT_EQ(action["openat"].substr(0, 4), "trap") << action["openat"];
  EXPECT_NE(action["ptrace"].find("EPERM"), std::string::npos) << action["ptrace"];
  EXPECT_NE(action["read"].find("native"), std::string::npos);
  EXPECT_NE(action["execve"].find("trace"), std::string::npos);
  EXPECT_NE(action["ioctl"].find("ENOTTY"), std::string::npos);
}

TEST(CliTest, SyscallsJsonIsValid) {
  ProcessResult r = Sentry({"syscalls", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  ProcessResult check =
      RunProcess({"/usr/bin/python3", "-c",
                  "import json, sys\n"
                  "rows = json.load(sys.stdin)\n"
                  "by_name = {r['name']: r for r in rows}\n"
                  "assert len(by_name) == len(rows), 'duplicate names'\n"
                  "assert len({r['nr'] for r in rows}) == len(rows), 'duplicate numbers'\n"
                  "assert by_name['kill']['wall'] == 'pid namespace', by_name['kill']\n"
                  "assert all(r.get('why') for r in rows if r['action'].startswith('native'))\n"
                  "assert by_name['openat']['status'] in ('full', 'partial')\n"
                  "assert by_name['ioctl']['filter']['otherwise'] == 'ENOTTY'\n"
                  "print(len(rows), by_name['openat']['action'], by_name['ptrace']['action'],\n"
                  "      by_name['ptrace']['errno'])\n"},
                 r.out);
  EXPECT_EQ(check.exit_code, 0) << Describe(check);
  int known = 0;
  for (int nr = 0; nr < 1024; ++nr) known += !SeccompName(nr).empty();
  EXPECT_EQ(check.out, std::to_string(known) + " trap errno EPERM\n");
  EXPECT_EQ(Sentry({"syscalls", "--bogus"}).exit_code, 125);
}

// --- docker's habits, units, the host's figures, errors (issue 18) ---

namespace docker_habits {

TEST(CliDockerHabits, ShortFlagsAndEqualsForms) {
  TempDir dir;
  ProcessResult r =
      SentryIn(dir.path(),
               {"-e", "A=1", "-e", "PASSED", "-e", "UNSET_HERE", "-w", "/work", "-m", "256m",
                "--timeout=20", "--memory=300m", "-i", "-t", "--rm", "--env=B=2"},
               {"/bin/sh", "-c", "echo A=$A B=$B PASSED=$PASSED UNSET=${UNSET_HERE-unset}; pwd"},
               {"PASSED=from-host", "SECRET_HERE=no"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  // -t: the guest's output is a terminal's (onlcr), as under docker run -t.
  EXPECT_EQ(r.out, "A=1 B=2 PASSED=from-host UNSET=unset\r\n/work\r\n");
  ProcessResult env =
      SentryIn(dir.path(), {"-e", "PASSED"}, {"/usr/bin/env"}, {"PASSED=x", "SECRET_HERE=no"});
  EXPECT_EQ(env.out.find("SECRET_HERE"), std::string::npos) << env.out;
}

TEST(CliDockerHabits, EnvFileAsDockerReadsIt) {
  TempDir dir;
  std::string file = dir.Write("vars.env", "# a comment\n\nA=1\n  B=two words\nPASSED\r\nC=x=y\n");
  ProcessResult r = SentryIn(dir.path(), {"--env-file", file},
                             {"/bin/sh", "-c", "echo \"$A|$B|$PASSED|$C\""}, {"PASSED=p"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "1|two words|p|x=y\n");
  std::string bad = dir.Write("bad.env", "OK=1\n=novalue\n");
  ProcessResult b = RunSentry({"--env-file", bad}, {"/bin/true"});
  EXPECT_EQ(b.exit_code, 125) << Describe(b);
  EXPECT_NE(b.err.find("line 2"), std::string::npos) << b.err;
  ProcessResult missing = RunSentry({"--env-file", dir.path() + "/none.env"}, {"/bin/true"});
  EXPECT_EQ(missing.exit_code, 125);
  EXPECT_NE(missing.err.find("No such file"), std::string::npos) << missing.err;
}

// The limits a run had, from its --log line.
nlohmann::json LoggedLimits(const std::vector<std::string>& flags) {
  TempDir dir;
  std::string log = dir.path() + "/log.jsonl";
  std::vector<std::string> f = flags;
  f.insert(f.end(), {"--log", log});
  ProcessResult r = RunSentry(f, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  nlohmann::json line = ParseJson(ReadHostFile(log)).value_or(nullptr);
  return line.is_object() ? line["limits"] : nlohmann::json();
}

TEST(CliDockerHabits, SizesAndDurationsAsDockerReadsThem) {
  EXPECT_EQ(LoggedLimits({"-m", "1.5g"})["memoryBytes"], 1536ull << 20);
  EXPECT_EQ(LoggedLimits({"--memory", "256MiB"})["memoryBytes"], 256ull << 20);
  EXPECT_EQ(LoggedLimits({"--memory", "300"})["memoryBytes"], 300ull << 20);  // sentry: MiB
  EXPECT_EQ(LoggedLimits({"--memory=524288k"})["memoryBytes"], 512ull << 20);
  EXPECT_EQ(LoggedLimits({"--disk", "64mb"})["diskBytes"], 64ull << 20);
  EXPECT_EQ(LoggedLimits({"--timeout", "1500ms"})["timeoutSec"], 1.5);
  EXPECT_EQ(LoggedLimits({"--timeout", "2m"})["timeoutSec"], 120);
  // docker reads a bare -m as bytes; sentry will not guess.
  ProcessResult bare = RunSentry({"-m", "1000000"}, {"/bin/true"});
  EXPECT_EQ(bare.exit_code, 125);
  EXPECT_NE(bare.err.find("bytes"), std::string::npos) << bare.err;
  for (const char* v : {"12q", "1.2.3g", "-5m", "g"}) {
    ProcessResult r = RunSentry({"--memory", v}, {"/bin/true"});
    EXPECT_EQ(r.exit_code, 125) << v;
    EXPECT_NE(r.err.find("--memory"), std::string::npos) << r.err;
  }
}

TEST(CliDockerHabits, WhatTheHostCannotHonourIsRefusedWithItsFigure) {
  // The CPUs sentry may use: its affinity, which it inherits from this test.
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int cpus = CPU_COUNT(&set);
  ProcessResult c = RunSentry({"--cpus", std::to_string(cpus * 50)}, {"/bin/true"});
  EXPECT_EQ(c.exit_code, 125) << Describe(c);
  EXPECT_NE(c.err.find("gives sentry " + std::to_string(cpus) + " CPUs"), std::string::npos)
      << c.err;
  struct sysinfo si;
  ASSERT_EQ(sysinfo(&si), 0);
  char memory[64];
  snprintf(memory, sizeof(memory), "this host has %.1fg",
           std::ldexp(static_cast<double>(si.totalram) * si.mem_unit, -30));
  ProcessResult m = RunSentry({"-m", "900t"}, {"/bin/true"});
  EXPECT_EQ(m.exit_code, 125) << Describe(m);
  EXPECT_NE(m.err.find(memory), std::string::npos) << m.err;
  EXPECT_EQ(std::count(c.err.begin(), c.err.end(), '\n'), 1) << c.err;
}

TEST(CliDockerHabits, HelpGroupsTheFlagsAndSaysWhatDashVDoes) {
  std::string help = Sentry({"run", "--help"}).out;
  size_t out = help.find("\nOutput:"), lim = help.find("\nLimits"),
         files = help.find("\nFiles and environment:"), net = help.find("\nNetwork:");
  ASSERT_NE(out, std::string::npos) << help;
  EXPECT_LT(out, lim);
  EXPECT_LT(lim, files);
  EXPECT_LT(files, net);
  EXPECT_NE(help.find("host is unchanged"), std::string::npos);
  EXPECT_NE(help.find("docker's default writes"), std::string::npos);
  for (const char* f : {"-e,--env", "-v,--volume", "-w,--workdir", "-m,--memory", "--env-file"}) {
    EXPECT_NE(help.find(f), std::string::npos) << f;
  }
}

// --- errors: one line, the right code, and with --json one object ---

TEST(CliErrors, WithJsonEveryErrorIsAResultObject) {
  TempDir dir;
  std::string dup = dir.Write("dup.json", R"({"timeoutMs": 1000, "timeoutMs": 2000})");
  for (const auto& flags :
       std::vector<std::vector<std::string>>{{"--frobnicate"},
                                             {"--timeout", "soon"},
                                             {"--timeout"},
                                             {"-m", "12"},
                                             {"--limits-file", dir.path() + "/missing.json"},
                                             {"--limits-file", dup},
                                             {"--cpus", "100000"},
                                             {"--log", dir.path() + "/no/such/dir/log"},
                                             {"-v", "nosuchvolume:/data"}}) {
    std::vector<std::string> args = {"run", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/echo", "ran"});
    ProcessResult r = Sentry(args);
    EXPECT_EQ(r.exit_code, 125) << flags[0] << "\n" << Describe(r);
    nlohmann::json j = ParseJson(r.out).value_or(nullptr);
    ASSERT_TRUE(j.is_object()) << flags[0] << ": " << r.out;
    EXPECT_EQ(j["exitCode"], 125);
    ASSERT_TRUE(j["error"].is_string()) << r.out;
    EXPECT_FALSE(j["error"].get<std::string>().empty());
    EXPECT_EQ(j["stdout"], "");
  }
}

TEST(CliErrors, WithoutJsonAnErrorIsOneLine) {
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--frobnicate"}, {"--timeout", "soon"}, {"--cpus", "100000"}, {"-v", "x"}}) {
    ProcessResult r = RunSentry(flags, {"/bin/true"});
    EXPECT_EQ(r.exit_code, 125) << flags[0];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliErrors, AnUnwritableLogFailsBeforeTheGuestRuns) {
  TempDir dir;
  std::string marker = dir.path() + "/ran";
  ProcessResult r = RunSentry(
      {"--log", "/proc/no-such-dir/log", "--copy", dir.Write("x.sh", "echo ran\n") + ":/tmp/x.sh"},
      {"/bin/sh", "/tmp/x.sh"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_EQ(r.out, "");  // the guest never ran
  EXPECT_NE(r.err.find("--log /proc/no-such-dir/log"), std::string::npos) << r.err;
}

TEST(CliErrors, ANonProgramSaysNotExecutable) {
  ProcessResult r = RunSentry({}, {"/etc/passwd"});
  EXPECT_EQ(r.exit_code, 126) << Describe(r);
  EXPECT_NE(r.err.find("not executable"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("regular file"), std::string::npos) << r.err;
  ProcessResult d = RunSentry({}, {"/etc"});
  EXPECT_EQ(d.exit_code, 126) << Describe(d);
  EXPECT_NE(d.err.find("directory"), std::string::npos) << d.err;
}

TEST(CliErrors, LimitsFileDuplicateKeyAndUnreadableFileSayWhy) {
  TempDir dir;
  std::string dup = dir.Write("dup.json", R"({"memoryMb": 64, "memoryMb": 2048})");
  ProcessResult r = RunSentry({"--limits-file", dup}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.err.find("\"memoryMb\" is given twice"), std::string::npos) << r.err;
  std::string nested = dir.Write("nested.json", R"({"network": {"allow": [], "allow": []}})");
  EXPECT_EQ(RunSentry({"--limits-file", nested}, {"/bin/true"}).exit_code, 125);
  ProcessResult missing = RunSentry({"--limits-file", dir.path() + "/none.json"}, {"/bin/true"});
  EXPECT_EQ(missing.exit_code, 125);
  EXPECT_NE(missing.err.find("cannot read the limits file"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
  ProcessResult isdir = RunSentry({"--limits-file", dir.path()}, {"/bin/true"});
  EXPECT_EQ(isdir.exit_code, 125);
  EXPECT_NE(isdir.err.find("Is a directory"), std::string::npos) << isdir.err;
}

// --- -v mounts ---

TEST(CliMounts, DefaultWritesStayInMemory) {
  TempDir dir;
  dir.Write("host/in.txt", "from the host\n", 0666);
  chmod((dir.path() + "/host").c_str(), 0777);
  ProcessResult r = RunSentry({"-v", dir.path() + "/host:/data"},
                              {"/bin/sh", "-c",
                               "cat /data/in.txt; echo new > /data/new.txt; echo more >> "
                               "/data/in.txt; rm /data/in.txt; ls /data; cat /data/new.txt"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "from the host\nnew.txt\nnew\n");
  EXPECT_EQ(ReadHostFile(dir.path() + "/host/in.txt"), "from the host\n");
  EXPECT_EQ(access((dir.path() + "/host/new.txt").c_str(), F_OK), -1);
}

TEST(CliMounts, ReadOnlyIsErofsAndNestsOverTheTree) {
  TempDir dir;
  dir.Write("host/in.txt", "ro\n", 0666);
  chmod((dir.path() + "/host").c_str(), 0777);
  ProcessResult r = RunSentry(
      {"--volume", dir.path() + "/host:/usr/share/ro:ro", "-w", "/usr/share/ro"},
      {"/usr/bin/python3", "-c",
       "import os, errno\n"
       "print(open('in.txt').read(), end='')\n"
       "for f in (lambda: open('in.txt', 'a'), lambda: open('x', 'w'), lambda: os.mkdir('d'),\n"
       "          lambda: os.unlink('in.txt'), lambda: os.rename('in.txt', '/tmp/y')):\n"
       "    try:\n"
       "        f(); print('ok')\n"
       "    except OSError as e:\n"
       "        print(errno.errorcode[e.errno])\n"
       "print(os.path.exists('/usr/share/doc'))\n"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "ro\nEROFS\nEROFS\nEROFS\nEROFS\nEROFS\nTrue\n");
}

// :rw writes through to the host: new files, appends, mkdir, rename, chmod,
// unlink and rmdir are what the host then holds, owned by the guest's uid.
TEST(CliMounts, ReadWriteReachesTheHost) {
  TempDir dir;
  dir.Write("host/in.txt", "from the host\n", 0666);
  dir.Write("host/gone.txt", "x", 0666);
  mkdir((dir.path() + "/host/old").c_str(), 0777);
  chmod((dir.path() + "/host").c_str(), 0777);
  chmod((dir.path() + "/host/old").c_str(), 0777);
  std::string host = dir.path() + "/host";
  ProcessResult r = RunSentry(
      {"-v", host + ":/data:rw", "-w", "/data"},
      {"/bin/sh", "-c",
       "cat in.txt; echo new > new.txt; echo more >> in.txt; mkdir d; mv new.txt d/moved.txt; "
       "chmod 600 d/moved.txt; rm gone.txt; rmdir old; ls; stat -c '%a %u' d/moved.txt"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "from the host\nd\nin.txt\n600 1000\n");
  EXPECT_EQ(ReadHostFile(host + "/in.txt"), "from the host\nmore\n");
  EXPECT_EQ(ReadHostFile(host + "/d/moved.txt"), "new\n");
  struct stat st;
  ASSERT_EQ(stat((host + "/d/moved.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(access((host + "/gone.txt").c_str(), F_OK), -1);
  EXPECT_EQ(access((host + "/old").c_str(), F_OK), -1);
  EXPECT_EQ(access((host + "/new.txt").c_str(), F_OK), -1);
  // A host change shows at once in a running guest's next look.
  ProcessResult fresh =
      RunSentry({"-v", host + ":/data:rw"}, {"/bin/sh", "-c", "cat /data/d/moved.txt; ls /data/d"});
  EXPECT_EQ(fresh.out, "new\nmoved.txt\n") << Describe(fresh);
}

TEST(CliMounts, BadMountsAre125AndSayWhy) {
  TempDir dir;
  std::string file = dir.Write("f.txt", "x");
  mkdir((dir.path() + "/d").c_str(), 0755);
  for (const auto& [spec, says] : std::vector<std::pair<std::string, std::string>>{
           {"named:/data", "named volumes"},
           {dir.path() + "/missing:/data", "No such file"},
           {file + ":/data", "directory"},
           {dir.path() + "/d:relative", "absolute"},
           {dir.path() + "/d:/proc/x", "/proc"},
           {dir.path() + "/d:/data:z", "ro and rw"}}) {
    ProcessResult r = RunSentry({"-v", spec}, {"/bin/true"});
    EXPECT_EQ(r.exit_code, 125) << spec << "\n" << Describe(r);
    EXPECT_NE(r.err.find(says), std::string::npos) << spec << ": " << r.err;
  }
}

// The sentry's own diagnostics go through spdlog at --log-level (or
// SENTRY_LOG_LEVEL); the guest's output and the --json result never change.
TEST(CliLogLevel, DebugSaysWhatTheSentryDoesAndLeavesTheResultAlone) {
  TempDir dir;
  ProcessResult r = SentryIn(dir.path(), {"--json", "--log-level", "debug"}, {"/bin/echo", "hi"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("\"stdout\":\"hi\\n\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("sentry: run: /bin/echo hi"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sentry: run: sandbox built"), std::string::npos) << r.err;
  ProcessResult quiet = SentryIn(dir.path(), {"--json"}, {"/bin/echo", "hi"});
  EXPECT_EQ(quiet.err.find("sentry: run:"), std::string::npos) << quiet.err;  // info: silent
  ProcessResult env = SentryIn(dir.path(), {}, {"/bin/true"}, {"SENTRY_LOG_LEVEL=debug"});
  EXPECT_NE(env.err.find("sentry: run: /bin/true"), std::string::npos) << env.err;
}

TEST(CliLogLevel, OffSilencesDiagnosticsAndABadLevelIs125) {
  TempDir dir;
  std::vector<std::string> census = {"--census", dir.path() + "/no/such/dir/c.json"};
  ProcessResult loud = SentryIn(dir.path(), census, {"/bin/true"});
  EXPECT_NE(loud.err.find("sentry: --census"), std::string::npos) << loud.err;
  census.insert(census.end(), {"--log-level", "off"});
  ProcessResult off = SentryIn(dir.path(), census, {"/bin/true"});
  EXPECT_EQ(off.exit_code, 0) << Describe(off);
  EXPECT_EQ(off.err.find("--census"), std::string::npos) << off.err;
  ProcessResult bad = SentryIn(dir.path(), {"--log-level", "loud"}, {"/bin/true"});
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_NE(bad.err.find("--log-level loud"), std::string::npos) << bad.err;
}

// --- serve, mcp and pool: the same parser, units and host checks as run ---

// The CPUs this process may use, as CheckAgainstHost counts them.
int HostCpus() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

TEST(CliServers, BadValuesAre125InOneLineNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"serve", "--memory", "1.5q"}, "--memory 1.5q"},
      {{"serve", "--memory=12parsecs"}, "--memory 12parsecs"},
      {{"serve", "--timeout=soon"}, "--timeout soon"},
      {{"serve", "--max-request-bytes=2g"}, "--max-request-bytes 2g"},
      {{"serve", "--frobnicate=1"}, "unknown flag --frobnicate"},
      {{"mcp", "--disk", "5x"}, "--disk 5x"},
      {{"mcp", "--pool-size=65"}, "--pool-size 65"},
      {{"mcp", "--preload=os;x"}, "--preload os;x"},
      {{"mcp", "--log-level=loud"}, "--log-level loud"},
      {{"mcp", "stray"}, "unexpected argument stray"},
      {{"pool", "--socket=/tmp/x.sock", "--size=0"}, "--size 0"},
      {{"pool", "--socket=/tmp/x.sock", "--refill-nice=20"}, "--refill-nice 20"},
      {{"pool", "--socket", "/tmp/x.sock", "--log-level", "loud"}, "--log-level loud"},
      {{"pool", "--socket=/tmp/x.sock", "--preload=numpy"}, "--preload needs --python"},
  };
  for (const auto& [args, says] : cases) {
    ProcessResult r = Sentry(args);
    EXPECT_EQ(r.exit_code, 125) << args[1] << "\n" << Describe(r);
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(CliServers, WhatTheHostCannotHonourIsRefusedWithItsFigure) {
  std::string figure = "this host gives sentry " + std::to_string(HostCpus()) + " CPUs";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"serve", "--listen", "127.0.0.1:0", "--token", "0123456789abcdef0123", "--cpus", "100"},
           {"mcp", "--cpus=100"}}) {
    ProcessResult r = Sentry(args);
    EXPECT_EQ(r.exit_code, 125) << Describe(r);
    EXPECT_NE(r.err.find("--cpus 100: " + figure), std::string::npos) << r.err;
  }
  ProcessResult m = Sentry({"mcp", "--memory=900t"});
  EXPECT_EQ(m.exit_code, 125) << Describe(m);
  EXPECT_NE(m.err.find("this host has"), std::string::npos) << m.err;
}

TEST(CliServers, HelpGroupsTheFlagsAndListsEveryOne) {
  std::string serve = Sentry({"serve", "--help"}).out;
  std::vector<size_t> at;
  for (const char* group : {"\nHTTP:", "\nServer:", "\nLimits of each run", "\nNetwork",
                            "\nSandbox:", "\nWarm interpreters", "\nExit codes"}) {
    at.push_back(serve.find(group));
    ASSERT_NE(at.back(), std::string::npos) << group << "\n" << serve;
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end())) << serve;
  std::string mcp = Sentry({"mcp", "-h"}).out;
  EXPECT_EQ(mcp.find("\nHTTP:"), std::string::npos);
  EXPECT_NE(mcp.find("\nServer:"), std::string::npos) << mcp;
  std::string pool = Sentry({"pool", "--help"}).out;
  EXPECT_LT(pool.find("\nPool:"), pool.find("\nWarm interpreters:")) << pool;
  // Every flag each parser declares is in its command's help.
  std::regex flag_re("[\",](--[a-z][a-z-]+)\",");
  const std::pair<const char*, const std::string*> sources[] = {
      {"/sentry/cli/server_flags.cc", &mcp},
      {"/sentry/cli/server_flags.cc", &serve},
      {"/sentry/cli/serve_command.cc", &serve},
      {"/sentry/cli/pool_command.cc", &pool}};
  int parsed = 0;
  for (const auto& [file, help] : sources) {
    std::string source = ReadHostFile(std::string(SENTRY_SOURCE_DIR) + file);
    ASSERT_FALSE(source.empty()) << file;
    for (auto it = std::sregex_iterator(source.begin(), source.end(), flag_re);
         it != std::sregex_iterator(); ++it) {
      std::string flag = (*it)[1];
      ++parsed;
      EXPECT_NE(help->find("  " + flag), std::string::npos) << flag << " (" << file << ")";
    }
  }
  EXPECT_GE(parsed, 40);
}

}  // namespace docker_habits

}  // namespace
}  // namespace sentry::testing
