// What a run gives back, through the real binary: the clipped --json output,
// stdio, exit codes, the --log audit line, and --limits-file.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/limits/run_outcome.h"
#include "tests/util/json_read.h"
#include "tests/util/subprocess.h"

namespace sentry::limits {
namespace {

// ----------------------------------------------------------------- output --

bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) {
    ++n;
  }
  return n;
}

TEST(Output, TwoHundredMegabytesAreClippedWithExactDropCounts) {
  const std::string head = "\xff\xfe head-invalid \xc3\x28\n";  // 3 invalid bytes
  const std::string tail = "tail-invalid \xff end\n";           // 1 invalid byte
  constexpr uint64_t kChunks = 100, kChunk = 1 << 20;
  Outcome o = RunPy(
      "import os\n"
      "os.write(1, b'\\xff\\xfe head-invalid \\xc3\\x28\\n')\n"
      "b = b'a' * (1 << 20)\n"
      "for i in range(100):\n"
      "    os.write(1, b)\n"
      "    os.write(2, b)\n"
      "os.write(1, b'tail-invalid \\xff end\\n')\n"
      "os.write(2, b'stderr-end\\n')\n",
      {"--max-output", "1000", "--timeout", "60"}, 90);
  ASSERT_TRUE(o.result) << "the result must be valid JSON\n" << Clip(o.f.out, 3000);
  EXPECT_NE(At(o.r(), "timedOut"), true) << o.Describe();
  EXPECT_EQ(o.f.exit_code, 0) << o.Describe();
  EXPECT_LT(o.f.wall, 30) << "200 MB of output must not take long";
  std::string out = Str(At(o.r(), "stdout")), err = Str(At(o.r(), "stderr"));
  EXPECT_LE(out.size(), 1100u) << Clip(out);
  EXPECT_LE(err.size(), 1100u) << Clip(err);
  EXPECT_TRUE(ValidUtf8(o.f.out)) << "the JSON text must be valid UTF-8";
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(Count(out, fffd), 4u) << "each invalid byte becomes U+FFFD: " << Clip(out);
  EXPECT_NE(out.find("head-invalid"), std::string::npos);
  EXPECT_NE(out.find("tail-invalid"), std::string::npos);
  EXPECT_NE(err.find("stderr-end"), std::string::npos);
  // kept + dropped = printed, the drop marker and the U+FFFD widening aside.
  auto kept = [&](const std::string& field, uint64_t dropped) {
    size_t k = field.size() - 2 * Count(field, fffd);
    std::string marker = "\n[... " + std::to_string(dropped) + " bytes dropped by sentry ...]\n";
    if (field.find(marker) != std::string::npos) k -= marker.size();
    return static_cast<uint64_t>(k);
  };
  uint64_t out_dropped = Int(At(o.r(), "stdoutDroppedBytes"));
  uint64_t err_dropped = Int(At(o.r(), "stderrDroppedBytes"));
  EXPECT_EQ(kept(out, out_dropped) + out_dropped, head.size() + kChunks * kChunk + tail.size())
      << "stdout: " << out.size() << " bytes shown, " << out_dropped << " dropped";
  EXPECT_EQ(kept(err, err_dropped) + err_dropped, kChunks * kChunk + 11)
      << "stderr: " << err.size() << " bytes shown, " << err_dropped << " dropped";
  // The reference parser agrees the document is JSON.
  sentry::testing::ProcessResult py = sentry::testing::RunProcess(
      {kPython, "-c", "import json,sys; d=json.loads(sys.stdin.read()); print(len(d['stdout']))"},
      o.f.out);
  EXPECT_EQ(py.exit_code, 0) << py.err;
}

// ------------------------------------------------------------------ stdio --

TEST(Stdio, StdinFileFeedsTheGuest) {
  HostDir dir;
  std::string in = dir.Write("input.txt", "hello from a file\nsecond line\n", 0600);
  Outcome o = RunPy("import sys; print(sys.stdin.read().upper(), end='')", {"--stdin", in});
  ASSERT_TRUE(o.result) << o.Describe();
  EXPECT_EQ(Str(At(o.r(), "stdout")), "HELLO FROM A FILE\nSECOND LINE\n") << o.Describe();
}

TEST(Stdio, OutputStreamsLiveWithoutJson) {
  std::string marker = UniqueMarker("limits-stream");
  Child c = StartMarked(marker, {"--timeout", "20"},
                        {kPython, "-c",
                         "import sys, time\n"
                         "print('first line', flush=True)\n"
                         "time.sleep(3)\n"
                         "print('second line', flush=True)\n"});
  std::string early = ReadUntil(c.out, "first line", 2.5);
  double first_at = Now() - c.started;
  int status;
  bool still_running = waitpid(c.pid, &status, WNOHANG) == 0;
  EXPECT_NE(early.find("first line"), std::string::npos)
      << "the first line must arrive while the guest sleeps (got " << early.size() << " bytes)";
  EXPECT_LT(first_at, 2.5);
  EXPECT_TRUE(still_running) << "the run should still be going when the first line arrives";
  Outcome o = Finish(c, marker, 30);
  EXPECT_EQ(o.f.exit_code, 0) << o.Describe();
  EXPECT_NE((early + o.f.out).find("second line"), std::string::npos) << o.Describe();
  EXPECT_GE(o.f.wall, 2.9);
}

TEST(Stdio, ExitCodeIsTheGuests) {
  Outcome plain = RunCmd({kPython, "-c", "import sys; sys.exit(42)"}, {});
  EXPECT_EQ(plain.f.exit_code, 42) << plain.Describe();
  Outcome json = RunPy("import sys; sys.exit(7)", {});
  EXPECT_EQ(json.f.exit_code, 7) << json.Describe();
  EXPECT_EQ(Int(At(json.r(), "exitCode")), 7) << json.Describe();
  Outcome killed = RunPy("import os; os.kill(os.getpid(), 9)", {});
  EXPECT_EQ(killed.f.exit_code, 137) << killed.Describe();
  EXPECT_EQ(Str(At(killed.r(), "signal")), "SIGKILL") << killed.Describe();
}

// Inputs placed where a user would put them: a new top-level directory.
TEST(Stdio, CopyToANewTopLevelDirectory) {
  HostDir dir;
  std::string in = dir.Write("data.csv", "a,b\n1,2\n");
  Outcome o =
      RunCmd({"/bin/sh", "-c", "cat /data/data.csv"}, {"--json", "--copy", in + ":/data/data.csv"});
  EXPECT_EQ(o.f.exit_code, 0) << o.Describe();
  EXPECT_EQ(Str(At(o.r(), "stdout")), "a,b\n1,2\n") << o.Describe();
}

// --------------------------------------------------------------- --log --

std::vector<nlohmann::json> LogLines(const std::string& path, std::vector<std::string>* bad) {
  std::vector<nlohmann::json> lines;
  std::stringstream ss(ReadFile(path));
  std::string line;
  while (std::getline(ss, line)) {
    try {
      nlohmann::json v = nlohmann::json::parse(line);
      if (v.is_object()) {
        lines.push_back(std::move(v));
      } else {
        bad->push_back("not an object: " + Clip(line, 300));
      }
    } catch (const nlohmann::json::exception& e) {
      bad->push_back(std::string(e.what()) + ": " + Clip(line, 300));
    }
  }
  return lines;
}

constexpr const char* kScript =
    "import sys\n"
    "print('audited run', sys.argv[1:])\n"
    "sys.exit(3)\n";

TEST(AuditLog, OneLineWithArgvCodeHashLimitsAndResult) {
  HostDir dir(01777);  // writable by anyone: see PrivateDirectories below
  std::string script = dir.Write("script.py", kScript);
  std::string log = dir.path() + "/runs.jsonl";
  // The script named relative to the cwd, the way it is copied in.
  Outcome o = RunCmd({kPython, "script.py"}, {"--log", log, "--timeout", "20", "--memory", "300m"},
                     120, {.cwd = dir.path()});
  EXPECT_EQ(o.f.exit_code, 3) << o.Describe();
  std::vector<std::string> bad;
  std::vector<nlohmann::json> lines = LogLines(log, &bad);
  ASSERT_EQ(lines.size(), 1u) << ReadFile(log);
  EXPECT_TRUE(bad.empty()) << bad.front();
  const nlohmann::json& rec = lines[0];
  EXPECT_FALSE(Str(At(rec, "runId")).empty()) << ReadFile(log);
  ASSERT_EQ(At(rec, "argv").size(), 3u) << ReadFile(log);
  EXPECT_EQ(Str(At(rec, "argv").at(0)), kPython);
  EXPECT_EQ(Str(At(rec, "argv").at(1)), "script.py");
  EXPECT_EQ(Str(At(rec, "code")), kScript);
  EXPECT_EQ(Str(At(rec, "codeSha256")), Sha256OfFile(script));
  EXPECT_EQ(Num(At(At(rec, "limits"), "timeoutSec")), 20);
  EXPECT_EQ(Num(At(At(rec, "limits"), "memoryBytes")), 300.0 * kMiB);
  EXPECT_TRUE(At(rec, "limits").contains("pids")) << ReadFile(log);
  EXPECT_TRUE(At(rec, "limits").contains("diskBytes")) << ReadFile(log);
  EXPECT_EQ(Int(At(At(rec, "result"), "exitCode")), 3) << ReadFile(log);
  EXPECT_GT(Num(At(rec, "sentryMaxRssBytes")), 0) << ReadFile(log);
  // Where the run's time went, phase by phase (as --timings prints it).
  EXPECT_TRUE(At(rec, "phasesMs").is_object()) << ReadFile(log);
  EXPECT_GT(Num(At(At(rec, "phasesMs"), "guest")), 0) << ReadFile(log);
  EXPECT_GT(Num(At(At(rec, "phasesMs"), "namespaces")), 0) << ReadFile(log);
}

TEST(AuditLog, TwentyParallelRunsWriteTwentyIntactLines) {
  HostDir dir(01777);
  dir.Write("script.py", kScript);
  std::string log = dir.path() + "/runs.jsonl";
  std::vector<std::thread> threads;
  std::vector<int> codes(20, -1);
  for (int i = 0; i < 20; ++i) {
    threads.emplace_back([&, i] {
      Outcome o = RunCmd({kPython, "script.py", "run" + std::to_string(i)},
                         {"--log", log, "--timeout", "60"}, 120, {.cwd = dir.path()});
      codes[i] = o.f.exit_code;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(codes[i], 3) << "run " << i;
  std::vector<std::string> bad;
  std::vector<nlohmann::json> lines = LogLines(log, &bad);
  EXPECT_EQ(lines.size(), 20u);
  EXPECT_TRUE(bad.empty()) << (bad.empty() ? "" : bad.front());
  std::set<std::string> ids, args;
  for (const nlohmann::json& rec : lines) {
    ids.insert(Str(At(rec, "runId")));
    if (At(rec, "argv").size() > 2) args.insert(Str(At(rec, "argv").at(2)));
    EXPECT_EQ(Str(At(rec, "codeSha256")).size(), 64u);
  }
  EXPECT_EQ(ids.size(), 20u) << "runIds must be distinct";
  EXPECT_EQ(args.size(), 20u) << "each run's own argv";
}

// The ordinary way to keep a log: a root-owned file or directory that only
// root may write, and scripts in a private directory.
TEST(AuditLog, PrivateDirectories) {
  HostDir dir(0700);
  dir.Write("script.py", kScript, 0600);
  std::string log = dir.path() + "/runs.jsonl";
  Outcome o = RunCmd({kPython, "script.py"}, {"--log", log}, 120, {.cwd = dir.path()});
  std::string text = ReadFile(log);
  std::string repro = "D=$(mktemp -d); echo 'print(1)' > $D/s.py; cd $D; " + Sentry() +
                      " run --log $D/log -- python3 s.py; cat $D/log";
  if (text.empty() && o.f.err.find("Permission denied") != std::string::npos) {
    GTEST_SKIP() << "BUG: --log in a root-only directory fails (" << Clip(o.f.err, 200)
                 << "): the log is written after the sentry took the guest's unprivileged "
                    "file identity (DropFsIdentity in Run::StartGuest), so it cannot write "
                    "where root can, and a log it creates is owned by uid 2000000001. Repro: "
                 << repro;
  }
  std::vector<std::string> bad;
  std::vector<nlohmann::json> lines = LogLines(log, &bad);
  ASSERT_EQ(lines.size(), 1u) << text << o.Describe();
  // The log keeps the bytes the script copy read (as root, before the guest
  // ran), not a second read of the host file.
  EXPECT_EQ(Str(At(lines[0], "code")), kScript);
}

// ----------------------------------------------------------- --limits-file --

TEST(LimitsFile, SetsTheLimitsAndTheLogRecordsThem) {
  HostDir dir;
  std::string limits = dir.Write(
      "limits.json",
      R"({"timeoutMs": 1000, "memoryMb": 200, "maxProcesses": 40, "cpus": 1.5, "diskMb": 64,
          "maxOutputBytes": 100, "nofile": 64, "network": "none"})");
  std::string log = dir.path() + "/runs.jsonl";
  Outcome o = RunPy(
      "import resource, sys, time\n"
      "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 'x' * 500)\n"
      "sys.stdout.flush(); time.sleep(30)\n",
      {"--limits-file", limits, "--log", log}, 30);
  EXPECT_EQ(o.f.exit_code, 124) << o.Describe();
  EXPECT_LT(o.f.wall, 5) << o.Describe();
  EXPECT_EQ(Str(At(o.r(), "limit")), "timeout") << o.Describe();
  EXPECT_EQ(Str(At(o.r(), "stdout")).rfind("64 x", 0), 0u) << o.Describe();
  EXPECT_GT(Num(At(o.r(), "stdoutDroppedBytes")), 300) << "maxOutputBytes 100\n" << o.Describe();
  std::vector<std::string> bad;
  std::vector<nlohmann::json> lines = LogLines(log, &bad);
  ASSERT_EQ(lines.size(), 1u) << ReadFile(log);
  const nlohmann::json& l = At(lines[0], "limits");
  EXPECT_EQ(Num(At(l, "timeoutSec")), 1) << ReadFile(log);
  EXPECT_EQ(Num(At(l, "memoryBytes")), 200.0 * kMiB) << ReadFile(log);
  EXPECT_EQ(Num(At(l, "pids")), 40) << ReadFile(log);
  EXPECT_EQ(Num(At(l, "cpus")), 1.5) << ReadFile(log);
  EXPECT_EQ(Num(At(l, "diskBytes")), 64.0 * kMiB) << ReadFile(log);
}

TEST(LimitsFile, FlagsWinWhereverTheyStand) {
  HostDir dir;
  std::string limits = dir.Write("limits.json", R"({"timeoutMs": 500, "maxProcesses": 3})");
  // --timeout before the file, --pids-limit after it: both override it.
  Outcome o = RunPy("import time; time.sleep(1.5); print('slept')",
                    {"--timeout", "20", "--limits-file", limits, "--pids-limit", "50"}, 30);
  EXPECT_EQ(o.f.exit_code, 0) << o.Describe();
  EXPECT_EQ(Str(At(o.r(), "stdout")), "slept\n") << o.Describe();
}

TEST(LimitsFile, MistakesAreErrorsThatNameTheKey) {
  HostDir dir;
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {R"({"timeoutMS": 5000})", "unknown key \"timeoutMS\""},
      {R"({"memoryMb": "256"})", "\"memoryMb\" must be"},
      {R"({"memoryMb": 2})", "\"memoryMb\" must be"},
      {R"({"maxProcesses": 1.5})", "\"maxProcesses\" must be"},
      {R"({"cpus": -1})", "\"cpus\" must be"},
      {R"({"network": "host"})", "\"network\" must be"},
      {R"([{"timeoutMs": 1}])", "one JSON object"},
      {R"({"timeoutMs": 1000)", "not JSON"},
  };
  for (const Case& c : cases) {
    std::string limits = dir.Write("limits.json", c.text);
    Finished f = RunSentryFull({"--limits-file", limits}, {"/bin/true"}, 30);
    EXPECT_EQ(f.exit_code, 125) << c.text << "\n" << f.err;
    EXPECT_NE(f.err.find(c.says), std::string::npos) << c.text << "\n" << f.err;
  }
  Finished missing = RunSentryFull({"--limits-file", dir.path() + "/nope.json"}, {"/bin/true"});
  EXPECT_EQ(missing.exit_code, 125) << missing.err;
  EXPECT_NE(missing.err.find("cannot read the limits file"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace sentry::limits
