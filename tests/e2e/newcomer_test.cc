// What surprised a newcomer (issue 27), each through the real binary: where a
// relative write lands with --root, private --allow-net refused where it is
// read, file hints true for their call, data files said and notices in the
// result, no default timeout on a terminal, docker's flags, the limits
// file's own words, the census through `| head`, and a did-you-mean.
#include <fcntl.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"
#include "tests/util/json_read.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

json Result(const ProcessResult& r) {
  std::optional<json> j = ParseJson(r.out);
  return j ? *j : json::object();
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The hint of the first denial of `syscall` whose argument holds `part`;
// "<none>" if there is no such denial.
std::string HintFor(const json& result, const std::string& syscall, const std::string& part) {
  if (!result.contains("denied")) return "<none>";
  for (const json& d : result["denied"]) {
    if (Str(At(d, "syscall")) == syscall && Has(Str(At(d, "argument")), part)) {
      return Str(At(d, "hint"));
    }
  }
  return "<none>";
}

// --- 1. --root: relative writes land where the -v recipe says -------------

TEST(Newcomer, RelativeWritesReachTheMountWithAndWithoutRoot) {
  for (bool root : {false, true}) {
    TempDir out;
    chmod(out.path().c_str(), 0777);  // uid 1000 writes there too
    std::vector<std::string> flags = {"-v", out.path() + ":/home/sandbox/out:rw"};
    if (root) flags.push_back("--root");
    ProcessResult r =
        SentryIn("/tmp", flags, {"sh", "-c", "pwd; echo made > out/result.txt; id -u"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, std::string("/home/sandbox\n") + (root ? "0\n" : "1000\n")) << Describe(r);
    EXPECT_EQ(ReadHostFile(out.path() + "/result.txt"), "made\n") << "root=" << root;
  }
}

TEST(Newcomer, ACwdAwayFromTheMountIsSaidAlsoInTheResult) {
  TempDir out;
  ProcessResult r = SentryIn(
      "/tmp", {"--json", "-w", "/work", "-v", out.path() + ":/home/sandbox/out:rw"}, {"true"});
  json j = Result(r);
  ASSERT_TRUE(j.contains("notices")) << Describe(r);
  std::string notices = j["notices"].dump();
  EXPECT_TRUE(Has(notices, "the guest's cwd is /work")) << notices;
  EXPECT_TRUE(Has(notices, "not the -v mount at /home/sandbox/out")) << notices;
  EXPECT_TRUE(Has(r.err, "the guest's cwd is /work")) << Describe(r);
}

// --- 3. private --allow-net refused where it is read -----------------------

TEST(Newcomer, APrivateAllowNetIsRefusedWhenRead) {
  for (const char* rule : {"127.0.0.1:9", "10.1.2.3", "[::1]:80", "169.254.169.254:80"}) {
    ProcessResult r = Sentry({"run", "--allow-net", rule, "--", "true"});
    EXPECT_EQ(r.exit_code, 125) << rule << Describe(r);
    EXPECT_TRUE(Has(r.err, "--unsafe-allow-private-address")) << Describe(r);
    EXPECT_TRUE(Has(r.err, std::string("--allow-net ") + rule)) << Describe(r);
  }
  ProcessResult ok =
      Sentry({"run", "--allow-net", "127.0.0.1:9", "--unsafe-allow-private-address", "--", "true"});
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
  // The servers read the flag too; the help no longer says "never".
  for (const char* cmd : {"serve", "mcp"}) {
    ProcessResult s = Sentry({cmd, "--allow-net", "192.168.1.1:80"});
    EXPECT_EQ(s.exit_code, 125) << cmd << Describe(s);
    EXPECT_TRUE(Has(s.err, "--unsafe-allow-private-address")) << Describe(s);
  }
  std::string help = Sentry({"run", "--help"}).out;
  EXPECT_FALSE(Has(help, "never to loopback")) << help;
}

TEST(Newcomer, ALimitsFilesPrivateRuleAndHugeMemoryAreNamedByTheirKeys) {
  TempDir dir;
  std::string net = dir.Write("net.json", R"({"network": {"allow": ["10.0.0.1:80"]}})");
  ProcessResult r = Sentry({"run", "--json", "--limits-file", net, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  std::string error = Str(At(Result(r), "error"));
  EXPECT_TRUE(Has(error, "limits file: \"network\" allow 10.0.0.1:80")) << error;
  EXPECT_TRUE(Has(error, "--unsafe-allow-private-address")) << error;
  EXPECT_FALSE(Has(error, "--allow-net")) << error;

  std::string mem = dir.Write("mem.json", R"({"memoryMb": 99999999})");
  r = Sentry({"run", "--limits-file", mem, "--", "true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Has(r.err, "limits file: \"memoryMb\" 99999999: this host has")) << Describe(r);
  EXPECT_FALSE(Has(r.err, "at least 8")) << Describe(r);
  EXPECT_FALSE(Has(r.err, "--memory")) << Describe(r);
  // The flag, typed, is named as the flag.
  r = Sentry({"run", "--limits-file", mem, "--memory", "100000g", "--", "true"});
  EXPECT_TRUE(Has(r.err, "--memory")) << Describe(r);
}

TEST(Newcomer, ARefusedConnectionIsInDeniedWithItsReason) {
  ProcessResult r =
      Sentry({"run", "--json", "--allow-net", "example.com:443", "--", "python3", "-c",
              "import socket\ntry: socket.create_connection(('10.1.2.3', 80), timeout=3)\n"
              "except OSError as e: print(e.errno)"});
  json j = Result(r);
  EXPECT_EQ(Str(At(j, "stdout")), "101\n") << Describe(r);  // ENETUNREACH
  std::string hint = HintFor(j, "connect", "10.1.2.3");
  EXPECT_TRUE(Has(hint, "private")) << hint << r.out;
}

// --- 4. file hints true for their call -------------------------------------

TEST(Newcomer, FileHintsAreTrueForTheCallOrAbsent) {
  if (geteuid() != 0) GTEST_SKIP() << "mounts a root-owned host tree";
  TempDir data, ro, rw;
  data.Write("secret.csv", "x\n", 0600);
  chmod(rw.path().c_str(), 0755);  // root's: uid 1000 may not write there
  ProcessResult r = Sentry(
      {"run", "--json", "-v", data.path() + ":/data", "-v", ro.path() + ":/home/sandbox/ro:ro",
       "-v", rw.path() + ":/home/sandbox/rw:rw", "--", "python3", "-c",
       "for p, m in [('/data/secret.csv', 'r'), ('ro/new.txt', 'w'), ('rw/new.txt', 'w'),\n"
       "             ('/etc/passwd', 'a')]:\n"
       "    try: open(p, m)\n"
       "    except OSError as e: print(p, e.errno)\n"});
  json j = Result(r);
  EXPECT_EQ(Str(At(j, "stdout")),
            "/data/secret.csv 13\nro/new.txt 30\nrw/new.txt 13\n/etc/passwd 13\n")
      << Describe(r);
  std::string read_hint = HintFor(j, "openat", "/data/secret.csv");
  EXPECT_TRUE(Has(read_hint, "not readable by others")) << read_hint;
  EXPECT_FALSE(Has(read_hint, "write under")) << read_hint;
  std::string ro_hint = HintFor(j, "openat", "ro/new.txt");
  EXPECT_TRUE(Has(ro_hint, ":ro")) << ro_hint << r.out;
  std::string rw_hint = HintFor(j, "openat", "rw/new.txt");
  EXPECT_FALSE(Has(rw_hint, "write under")) << rw_hint;
  // A write to a system file keeps the advice, which is true there.
  std::string etc_hint = HintFor(j, "openat", "/etc/passwd");
  EXPECT_TRUE(Has(etc_hint, "write under /tmp or the home")) << etc_hint;
}

// --- 5. data files said, notices in the result ------------------------------

TEST(Newcomer, ADataFileArgumentIsSaidAsCatsIs) {
  TempDir dir;
  dir.Write("analyze.py", "import sys\nprint(open(sys.argv[1]).read())\n");
  dir.Write("data.csv", "a,b\n");
  ProcessResult r = SentryIn(dir.path(), {}, {"python3", "analyze.py", "data.csv"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "data.csv not copied in")) << Describe(r);
  r = SentryIn(dir.path(), {"--json"}, {"python3", "analyze.py", "data.csv"});
  std::string notices = At(Result(r), "notices").dump();
  EXPECT_TRUE(Has(notices, "data.csv not copied in")) << Describe(r);
  EXPECT_TRUE(Has(notices, "--copy HOST:GUEST")) << notices;
  // The first argument's notice too (`cat data.csv`).
  r = SentryIn(dir.path(), {"--json"}, {"cat", "data.csv"});
  EXPECT_TRUE(Has(At(Result(r), "notices").dump(), "data.csv not copied in")) << Describe(r);
}

// --- 7. no default timeout on a terminal ------------------------------------

// `sentry run --log LOG FLAGS -- true` on a pty of the test's; the logged
// timeout.
std::string TimeoutOnATerminal(const std::vector<std::string>& flags) {
  TempDir dir;
  std::string log = dir.path() + "/run.log";
  std::vector<std::string> argv = {SentryBinary(), "run", "--log", log};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "true"});
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    execv(args[0], args.data());
    _exit(127);
  }
  char buf[4096];
  while (read(master, buf, sizeof(buf)) > 0) {
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  std::optional<json> line = ParseJson(ReadHostFile(log));
  if (!line) return "no log line";
  return line->dump();
}

TEST(Newcomer, ATerminalHasNoDefaultTimeout) {
  EXPECT_TRUE(Has(TimeoutOnATerminal({}), "\"timeoutSec\":0}")) << TimeoutOnATerminal({});
  EXPECT_TRUE(Has(TimeoutOnATerminal({"--timeout", "7"}), "\"timeoutSec\":7"));
  // Without a terminal, the 30 s default.
  TempDir dir;
  std::string log = dir.path() + "/run.log";
  ProcessResult r = Sentry({"run", "--log", log, "--", "true"});
  EXPECT_TRUE(Has(ReadHostFile(log), "\"timeoutSec\":30")) << ReadHostFile(log);
  std::string help = Sentry({"run", "--help"}).out;
  EXPECT_TRUE(Has(help, "none where the")) << help;
}

// --- 8. docker's flags --------------------------------------------------------

TEST(Newcomer, DockersFlagsSayWhatSentryDoes) {
  TempDir empty;  // no config.json: never runc's run
  ProcessResult d = SentryIn(empty.path(), {"-d"}, {"true"});
  EXPECT_EQ(d.exit_code, 125) << Describe(d);
  EXPECT_TRUE(Has(d.err, "no detached mode")) << Describe(d);
  EXPECT_FALSE(Has(d.err, "config.json")) << Describe(d);
  ProcessResult bare = RunIn(empty.path(), {}, {SentryBinary(), "run", "-d", "python3", "x.py"});
  EXPECT_TRUE(Has(bare.err, "no detached mode")) << Describe(bare);

  ProcessResult u = Sentry({"run", "-u", "1234", "--", "true"});
  EXPECT_EQ(u.exit_code, 125);
  EXPECT_TRUE(Has(u.err, "--root")) << Describe(u);
  ProcessResult u0 = Sentry({"run", "-u", "0", "--", "id", "-u"});
  EXPECT_EQ(u0.out, "0\n") << Describe(u0);

  ProcessResult p = Sentry({"run", "-p", "8080:8080", "--", "true"});
  EXPECT_EQ(p.exit_code, 125);
  EXPECT_TRUE(Has(p.err, "publishes no port")) << Describe(p);

  ProcessResult typo = Sentry({"run", "--tiemout", "3", "--", "true"});
  EXPECT_TRUE(Has(typo.err, "did you mean --timeout?")) << Describe(typo);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"serve", "--listn", "x"},
                                               {"pool", "--sockt", "x"},
                                               {"mcp", "--tiemout", "2"},
                                               {"check", "--jsn"},
                                               {"syscalls", "--jsn"}}) {
    ProcessResult r = Sentry(args);
    EXPECT_EQ(r.exit_code, 125) << args[0];
    EXPECT_TRUE(Has(r.err, "did you mean --")) << Describe(r);
  }
}

// A program not found says --copy only where --copy exists.
TEST(Newcomer, OnlySentryRunSuggestsCopy) {
  ProcessResult r = Sentry({"run", "--", "nosuchprogram"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_TRUE(Has(r.err, "--copy")) << Describe(r);
}

// --- the small ones -------------------------------------------------------------

TEST(Newcomer, TheCensusIsWrittenWhenTheReaderGoes) {
  TempDir dir;
  std::string census = dir.path() + "/c.json";
  ProcessResult r =
      RunIn(dir.path(), {},
            {"/bin/sh", "-c",
             SentryBinary() + " run --census " + census + " -- seq 1000000 | head -1; echo $?"});
  EXPECT_EQ(r.out, "1\n0\n") << Describe(r);
  EXPECT_TRUE(ParseJson(ReadHostFile(census)).has_value()) << Describe(r);
}

TEST(Newcomer, SyscallsTakesNamesAndSaysWhyNot) {
  ProcessResult r = Sentry({"syscalls", "openat"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Has(r.out, "openat")) << r.out;
  EXPECT_FALSE(Has(r.out, "connect")) << r.out;
  r = Sentry({"syscalls", "opnat"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Has(r.err, "no x86-64 syscall is named opnat (did you mean openat?)")) << r.err;
}

}  // namespace
}  // namespace sentry::testing
