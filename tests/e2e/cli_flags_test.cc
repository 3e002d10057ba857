// The command line as docker users type it (issue 18): short forms, units,
// the host's figures, errors as one line or a JSON result, -v mounts,
// --log-level, and serve/mcp/pool parsed as run is.
#include <gtest/gtest.h>
#include <sched.h>
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

// sentry run declares only the flags its command line names (FlagSet::Only,
// ParseRunFlags): each form that names a flag must still reach it, and what
// follows the command stays the command's.
TEST(CliDockerHabits, EveryFormOfAFlagIsParsedAsBefore) {
  // Grouped short switches (-it), a short flag's attached value (-eA=1), a
  // long flag's (--workdir=), a flag after `run` given twice under both names.
  ProcessResult r = SentryIn(TempDir().path(), {"-it", "-eA=1", "--env", "B=2", "--workdir=/work"},
                             {"/bin/sh", "-c", "echo A=$A B=$B; pwd"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "A=1 B=2\r\n/work\r\n");  // -t: a terminal's onlcr
  // Without `--`, the first word that is no flag's is the command, and the
  // flags after it are its own (though the scan saw their names).
  ProcessResult own = Sentry({"run", "--timeout", "20", "/bin/echo", "--timeout", "-e", "x", "-h"});
  ASSERT_EQ(own.exit_code, 0) << Describe(own);
  EXPECT_EQ(own.out, "--timeout -e x -h\n");
  // A bad value, a typo and help read as with every flag declared.
  ProcessResult bad = Sentry({"run", "--timeout=soon", "--", "/bin/true"});
  EXPECT_EQ(bad.exit_code, 125) << Describe(bad);
  EXPECT_NE(bad.err.find("--timeout soon: needs a number of seconds"), std::string::npos)
      << bad.err;
  ProcessResult typo = Sentry({"run", "--timout", "1", "--", "/bin/true"});
  EXPECT_EQ(typo.exit_code, 125) << Describe(typo);
  EXPECT_NE(typo.err.find("did you mean --timeout?"), std::string::npos) << typo.err;
  ProcessResult help = Sentry({"run", "-e", "A=1", "--help"});
  EXPECT_EQ(help.exit_code, 0) << Describe(help);
  EXPECT_NE(help.out.find("--no-landlock"), std::string::npos) << help.out;
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
