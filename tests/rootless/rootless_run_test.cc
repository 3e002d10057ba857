// sentry's everyday use as an ordinary user: run, --json, mounts, limits,
// a script, --no-namespaces, check and serve, through the real binary.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/rootless/rootless_util.h"
#include "tests/util/json_read.h"

namespace sentry::testing {
namespace {

class Rootless : public ::testing::TestWithParam<Caller> {};

std::string Name(const ::testing::TestParamInfo<Caller>& info) {
  if (info.param.name.empty()) return "self";
  return info.param.name == "sentry-rl-subid" ? "with_subid_range" : "single_id";
}

TEST_P(Rootless, RunsWithOutputAndExitCodes) {
  const Caller& c = GetParam();
  ProcessResult r = SentryAs(c, {}, {"/usr/bin/python3", "-c", "print(6 * 7)"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "42\n") << Describe(r);
  r = SentryAs(c, {}, {"/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7) << Describe(r);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST_P(Rootless, GuestIsUser1000OrRootWithOthersOverflow) {
  const Caller& c = GetParam();
  const char* code =
      "import os; print(os.getuid(), os.getgid(), os.stat('/usr').st_uid, os.stat('/usr').st_uid)";
  ProcessResult r = SentryAs(c, {}, {"/usr/bin/python3", "-c", code});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out.substr(0, 10), "1000 1000 ") << Describe(r);
  r = SentryAs(c, {"--root"}, {"/usr/bin/python3", "-c", "import os; print(os.getuid())"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "0\n");
}

TEST_P(Rootless, JsonSaysWhichWallsAndLimitsHold) {
  const Caller& c = GetParam();
  ProcessResult r =
      SentryAs(c, {"--json", "--memory", "256m", "--pids-limit", "32"}, {"/bin/echo", "hi"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << r.out;
  EXPECT_EQ(Str(At(*j, "stdout")), "hi\n");
  std::string walls = At(*j, "walls").dump();
  EXPECT_NE(walls.find("\"namespaces\""), std::string::npos) << walls;
  // The id mode --userns=auto (the default) takes: the range where there is one.
  EXPECT_NE(walls.find("\"rlimit-as\""), std::string::npos) << walls;
  EXPECT_NE(walls.find("\"rlimit-nproc\""), std::string::npos) << walls;
  // No cgroup can be made without root here: none is claimed.
  EXPECT_EQ(walls.find("cgroup"), std::string::npos) << walls;
  // The id mode, and whose ids the guest's are.
  std::string limits = At(*j, "limits").dump();
  if (RangeStart(c) != 0) {
    EXPECT_NE(walls.find("\"userns-subid-range\""), std::string::npos) << walls;
    EXPECT_NE(
        limits.find(absl::StrCat("subid-range: guest uid 1000 is host uid ", RangeStart(c) + 999,
                                 "; processes, inotify and mqueues "
                                 "count against uid ",
                                 c.uid)),
        std::string::npos)
        << limits;
  } else {
    EXPECT_NE(walls.find("\"userns-single-id\""), std::string::npos) << walls;
    EXPECT_NE(limits.find(absl::StrCat("single-id: guest uid 1000 is host uid ", c.uid)),
              std::string::npos)
        << limits;
  }
  EXPECT_NE(limits.find("\"memory\":\"rlimit-as\""), std::string::npos) << limits;
  EXPECT_NE(limits.find("\"pids\":\"sentry-count+rlimit-nproc\""), std::string::npos) << limits;
}

// Seen from the host: the guest's processes run as the range's id for 1000,
// or as the caller itself in single-id mode.
TEST_P(Rootless, GuestRunsAsTheRangesIdOrTheCallers) {
  const Caller& c = GetParam();
  std::string script = absl::StrCat(
      SentryBinary(), " run -- /bin/sleep 4 & s=$!; g=; for i in $(seq 100); do ",
      "l=$(pgrep -P $s | head -1); [ -n \"$l\" ] && g=$(pgrep -P $l | head -1); ",
      "[ -n \"$g\" ] && grep -q '^Name:.*sleep' /proc/$g/status 2>/dev/null && break; ",
      "sleep 0.05; done; grep -E '^(Uid|Gid):' /proc/$g/status; wait $s");
  ProcessResult r = RunAsCaller(c, {"/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  uint32_t range = RangeStart(c);
  uid_t uid = range != 0 ? range + 999 : c.uid;
  EXPECT_NE(r.out.find(absl::StrCat("Uid:\t", uid, "\t", uid, "\t", uid, "\t", uid, "\n")),
            std::string::npos)
      << Describe(r);
  if (range == 0) {
    EXPECT_NE(r.out.find(absl::StrCat("Gid:\t", c.gid, "\t")), std::string::npos) << Describe(r);
  } else {
    EXPECT_EQ(r.out.find(absl::StrCat("Gid:\t", c.gid, "\t")), std::string::npos) << Describe(r);
  }
}

// Another id is a real one with a range: becoming it is refused for want of
// the capability (EPERM), not for want of a mapping (EINVAL, single-id).
TEST_P(Rootless, OtherIdsAreRealWithARange) {
  const Caller& c = GetParam();
  const char* code =
      "import os\n"
      "for f, v in ((os.setuid, 1001), (os.setgid, 65534)):\n"
      "  try:\n"
      "    f(v); print('became', v)\n"
      "  except OSError as e:\n"
      "    print(e.errno)\n"
      "print(os.getuid(), os.getgid())\n";
  ProcessResult r = SentryAs(c, {}, {"/usr/bin/python3", "-c", code});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, RangeStart(c) != 0 ? "1\n1\n1000 1000\n" : "22\n22\n1000 1000\n") << Describe(r);
}

TEST_P(Rootless, UsernsFlagChoosesTheMode) {
  const Caller& c = GetParam();
  ProcessResult r = SentryAs(c, {"--userns=single", "--json"}, {"/usr/bin/id", "-u"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << r.out;
  EXPECT_EQ(Str(At(*j, "stdout")), "1000\n");
  EXPECT_NE(At(*j, "walls").dump().find("\"userns-single-id\""), std::string::npos) << r.out;
  r = SentryAs(c, {"--userns=range", "--json"}, {"/usr/bin/id", "-u"});
  if (RangeStart(c) != 0) {
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_NE(r.out.find("\"userns-subid-range\""), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 125) << Describe(r);
    auto j = ParseJson(r.out);
    ASSERT_TRUE(j.has_value()) << Describe(r);
    std::string error = Str(At(*j, "error"));
    EXPECT_EQ(error.find("the user namespace wall: --userns=range, but "), 0u) << error;
    EXPECT_NE(error.find("usermod --add-subuids"), std::string::npos) << error;
    EXPECT_NE(error.find("--userns=single"), std::string::npos) << error;
    EXPECT_NE(error.find("--no-namespaces"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  r = SentryAs(c, {"--userns=some"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
}

// The guest's own fds through /proc, in each id mode: /proc/self/fd listed,
// /dev/fd/N and /dev/stderr opened anew, bash's <(...), fdinfo, ttyname.
// With a range the guest's /proc/PID/fd is closed to the sentry itself
// (sentry/kernel/guest_proc.h).
TEST_P(Rootless, GuestsOwnFdsThroughProcInEachMode) {
  const Caller& c = GetParam();
  const char* script =
      "echo data > /tmp/f; exec 7</tmp/f; ls /proc/self/fd | tr '\\n' ' '; echo; cat /dev/fd/7; "
      "echo err >/dev/stderr; cat <(echo sub); grep -c '^flags:' /proc/self/fdinfo/7; "
      "python3 -c 'import os, pty; m, s = pty.openpty(); print(os.ttyname(s))'";
  for (const char* mode : {"--userns=auto", "--userns=single"}) {
    ProcessResult r = SentryAs(c, {mode}, {"/bin/bash", "-c", script});
    EXPECT_EQ(r.exit_code, 0) << mode << Describe(r);
    EXPECT_EQ(r.out, "0 1 2 3 7 \ndata\nsub\n1\n/dev/pts/0\n") << mode << Describe(r);
    EXPECT_EQ(r.err, "err\n") << mode << Describe(r);
  }
}

TEST_P(Rootless, MountsReadOnlyAndReadWrite) {
  const Caller& c = GetParam();
  CallerDir dir(c);
  dir.Write("in/data.txt", "input\n");
  mkdir((dir.path() + "/out").c_str(), 0755);
  chown((dir.path() + "/out").c_str(), c.uid, c.gid);
  ProcessResult r =
      SentryAs(c, {"-v", dir.path() + "/in:/data:ro", "-v", dir.path() + "/out:/work:rw"},
               {"/bin/sh", "-c",
                "cat /data/data.txt; (echo x > /data/new) 2>/dev/null && echo "
                "WROTE-RO; echo result > /work/result.txt; stat -c %u /work/result.txt"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  // The guest sees what it wrote as its own (the caller's uid reads as 1000).
  EXPECT_EQ(r.out, "input\n1000\n") << Describe(r);
  struct stat st;
  EXPECT_NE(stat((dir.path() + "/in/new").c_str(), &st), 0);
  ASSERT_EQ(stat((dir.path() + "/out/result.txt").c_str(), &st), 0) << Describe(r);
  // Written as the caller, whose file it is.
  EXPECT_EQ(st.st_uid, c.uid);
}

TEST_P(Rootless, TimeoutEndsTheRun) {
  const Caller& c = GetParam();
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = SentryAs(c, {"--timeout", "1", "--json"}, {"/bin/sleep", "30"});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 124) << Describe(r);
  EXPECT_LT(secs, 10);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << r.out;
  EXPECT_TRUE(At(*j, "timedOut").get<bool>());
}

TEST_P(Rootless, MemoryCapHoldsByRlimit) {
  const Caller& c = GetParam();
  ProcessResult r = SentryAs(c, {"--memory", "128m", "--json"},
                             {"/usr/bin/python3", "-c",
                              "try:\n  b = bytearray(512 << 20)\n  print('GOT')\nexcept "
                              "MemoryError:\n  print('refused')"});
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << Describe(r);
  EXPECT_EQ(Str(At(*j, "stdout")), "refused\n") << r.out;
  EXPECT_NE(At(*j, "walls").dump().find("rlimit-as"), std::string::npos);
}

TEST_P(Rootless, PidsCapHolds) {
  const Caller& c = GetParam();
  const char* code =
      "import os, time\n"
      "kids, refused = [], 0\n"
      "for i in range(40):\n"
      "  try:\n"
      "    pid = os.fork()\n"
      "  except OSError:\n"
      "    refused += 1\n"
      "    continue\n"
      "  if pid == 0:\n"
      "    time.sleep(3); os._exit(0)\n"
      "  kids.append(pid)\n"
      "print(len(kids), refused)\n";
  ProcessResult r = SentryAs(c, {"--pids-limit", "10"}, {"/usr/bin/python3", "-c", code});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> f = absl::StrSplit(absl::StripTrailingAsciiWhitespace(r.out), ' ');
  ASSERT_EQ(f.size(), 2u) << r.out;
  EXPECT_LE(std::stoi(f[0]), 9) << r.out;  // the guest itself counts
  EXPECT_GE(std::stoi(f[1]), 31) << r.out;
}

TEST_P(Rootless, CpuQuotaIsRefusedWithWhatWouldEnableIt) {
  const Caller& c = GetParam();
  ProcessResult r = SentryAs(c, {"--cpus", "0.5"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.err.find("--cpus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cgroup"), std::string::npos) << r.err;
}

TEST_P(Rootless, PythonScript) {
  const Caller& c = GetParam();
  CallerDir dir(c);
  dir.Write("proj/script.py",
            "import json, sys\nprint(json.dumps({'argv': sys.argv[1:], 'sum': sum(range(10))}))\n");
  ProcessResult r = SentryAs(c, {"-v", dir.path() + "/proj:/proj:ro"},
                             {"/usr/bin/python3", "/proj/script.py", "a", "b"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "{\"argv\": [\"a\", \"b\"], \"sum\": 45}\n");
}

TEST_P(Rootless, WithoutNamespaces) {
  const Caller& c = GetParam();
  ProcessResult r = SentryAs(c, {"--no-namespaces", "--json"},
                             {"/usr/bin/python3", "-c",
                              "import os; open('/tmp/f', 'w').write('x'); "
                              "print(os.getuid(), open('/tmp/f').read())"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << r.out;
  EXPECT_EQ(Str(At(*j, "stdout")), "1000 x\n");
  EXPECT_EQ(At(*j, "walls").dump().find("namespaces"), std::string::npos);
  // The private store is gone at the end.
  ProcessResult ls = RunAsCaller(
      c, {"/bin/sh", "-c", absl::StrCat("ls /dev/shm/sentry-", c.uid, " 2>/dev/null | wc -l")});
  EXPECT_EQ(ls.out, "0\n") << ls.out;
  r = SentryAs(c, {"--no-namespaces"}, {"/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
}

TEST_P(Rootless, CheckSaysWhatHolds) {
  const Caller& c = GetParam();
  ProcessResult r = RunAsCaller(c, {SentryBinary(), "check"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out.find("MISSING"), std::string::npos) << r.out;
  if (RangeStart(c) != 0) {
    EXPECT_NE(r.out.find(absl::StrCat(
                  "subordinate-range mode: the guest's ids 1-65536 are host uids ", RangeStart(c))),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("namespaces, userns-subid-range"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.out.find("single-id mode"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("namespaces, userns-single-id"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("RLIMIT_AS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sentry runs here."), std::string::npos) << r.out;
}

// `sentry serve` as the user, in the default id mode and with --userns=single
// (which its runs take, cold).
TEST_P(Rootless, ServeAnswersACall) {
  const Caller& c = GetParam();
  for (const char* userns : {"auto", "single"}) {
    CallerDir dir(c);
    std::string token = dir.Write("token", "rootless-test-token-0123456789\n", 0600);
    std::string sock = dir.path() + "/serve.sock";
    std::string script = absl::StrCat(
        SentryBinary(), " serve --userns=", userns, " --listen unix:", sock, " --token-file ",
        token, " --max-concurrent 1 & pid=$!; for i in $(seq 100); do [ -S ", sock,
        " ] && break; sleep 0.1; done; ",
        "/usr/bin/python3 -c \"import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "body = b'{\\\"language\\\": \\\"python\\\", \\\"code\\\": \\\"print(6*7)\\\"}'\n"
        "s.sendall(b'POST /v1/runs HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer "
        "rootless-test-token-0123456789\\r\\nContent-Type: application/json\\r\\nConnection: "
        "close\\r\\nContent-Length: ' + str(len(body)).encode() + b'\\r\\n\\r\\n' + body)\n"
        "d = b''\n"
        "while True:\n"
        "  c = s.recv(65536)\n"
        "  if not c: break\n"
        "  d += c\n"
        "print(d.decode())\" ",
        sock, "; kill $pid; wait $pid");
    ProcessResult r = RunAsCaller(c, {"/bin/sh", "-c", script}, {}, "", 120);
    EXPECT_NE(r.out.find("200 OK"), std::string::npos) << Describe(r);
    EXPECT_NE(r.out.find("\"stdout\":\"42\\n\""), std::string::npos) << Describe(r);
    bool range = RangeStart(c) != 0 && std::string(userns) == "auto";
    EXPECT_NE(r.out.find(range ? "\"userns-subid-range\"" : "\"userns-single-id\""),
              std::string::npos)
        << userns << Describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, Rootless, ::testing::ValuesIn(RootlessCallers()), Name);

// Where newuidmap refuses (here: the caller's real gid is not its passwd
// entry's, which newuidmap checks), --userns=range stops with one line:
// which wall, the helper's reason, the choices; --userns=single runs, and
// so does the default, in single-id mode.
TEST(RootlessRange, HelperRefusalIsOneLineWithTheChoices) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run as sentry-rl-subid with another gid";
  Caller subid, single;
  for (const Caller& c : RootlessCallers()) (c.name == "sentry-rl-subid" ? subid : single) = c;
  if (RangeStart(subid) == 0) GTEST_SKIP() << "newuidmap/newgidmap are not installed (uidmap)";
  ASSERT_NE(subid.gid, single.gid);
  auto run = [&](const std::string& flag) {
    return RunProcess({"/usr/bin/setpriv", absl::StrCat("--reuid=", subid.uid),
                       absl::StrCat("--regid=", single.gid), "--clear-groups", "/usr/bin/env", "-i",
                       "PATH=/usr/bin:/bin", absl::StrCat("HOME=", subid.home), SentryBinary(),
                       "run", "--json", flag, "--", "/bin/true"},
                      "", 60);
  };
  ProcessResult r = run("--userns=range");
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << Describe(r);
  std::string error = Str(At(*j, "error"));
  EXPECT_NE(error.find("the user namespace wall: the subordinate range of uid "), std::string::npos)
      << error;
  EXPECT_NE(error.find("newuidmap"), std::string::npos) << error;
  EXPECT_NE(error.find("; choices: "), std::string::npos) << error;
  EXPECT_NE(error.find("--userns=single"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  r = run("--userns=single");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  // The default takes the range where the helpers map it, else the single
  // id: the run goes on, and its walls say which.
  r = run("--userns=auto");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("\"userns-single-id\""), std::string::npos) << Describe(r);
}

// `sentry pool --userns=single` as a caller with a range: a run of that mode
// is served warm in single-id mode; a run of the default mode (the range)
// is refused by the pool and starts cold, saying why.
TEST(RootlessRange, PoolKeepsItsIdMode) {
  Caller subid;
  for (const Caller& c : RootlessCallers()) {
    if (RangeStart(c) != 0) subid = c;
  }
  if (RangeStart(subid) == 0) GTEST_SKIP() << "no caller with a subordinate range";
  CallerDir dir(subid);
  std::string sock = dir.path() + "/pool.sock";
  std::string run = absl::StrCat(SentryBinary(), " run --pool ", sock, " --json");
  std::string script = absl::StrCat(
      SentryBinary(), " pool --socket ", sock, " --size 1 --userns=single & p=$!; ",
      "for i in $(seq 100); do [ -S ", sock, " ] && break; sleep 0.1; done; ", run,
      " --userns=single -- /usr/bin/id -u; echo; ", run, " -- /usr/bin/id -u; kill $p; wait $p");
  ProcessResult r = RunAsCaller(subid, {"/bin/sh", "-c", script}, {}, "", 120);
  std::vector<std::string> results = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(results.size(), 2u) << Describe(r);
  EXPECT_NE(results[0].find("\"userns-single-id\""), std::string::npos) << Describe(r);
  EXPECT_NE(results[1].find("\"userns-subid-range\""), std::string::npos) << Describe(r);
  EXPECT_NE(r.err.find("a cold start (the pool's sandboxes are not of this run's shape"),
            std::string::npos)
      << Describe(r);
  EXPECT_EQ(r.err.find("a cold start", r.err.find("a cold start") + 1), std::string::npos)
      << "the single-id run was served warm" << Describe(r);
}

}  // namespace
}  // namespace sentry::testing
