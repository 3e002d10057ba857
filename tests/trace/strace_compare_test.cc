// --trace against strace: the same probe (trace_probe.c) run natively under
// `strace -f -o FILE` and under `sentry run --trace-file FILE`, and every
// line the sentry prints because it answered the call (the table's trap and
// trace rows), plus clone/fork/vfork, signals and exits, must read the same.
//
// What differs by design is normalised away: pids (the guest's own, against
// the host's), addresses, the environment's size, a child's uid in SIGCHLD,
// strace's <unfinished ...>/<... resumed> splits (joined again), and the
// calls the sentry does not see outside a census (native rows, glibc's
// clone3 for threads, which the sandbox refuses so glibc falls back to clone).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "syscalls/table.h"
#include "tests/util/subprocess.h"

namespace sentry::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names whose calls the sentry answers, so --trace prints them always.
std::set<std::string> AnsweredBySentry() {
  std::set<std::string> names = {"clone", "fork", "vfork"};
  for (const SyscallRow& row : SyscallTable()) {
    if (row.action == Action::kTrap || row.action == Action::kTrace) names.insert(row.name);
  }
  return names;
}

std::string Normalise(std::string line) {
  static const std::regex kAddr("0x[0-9a-f]+"), kVars(R"(/\* \d+ vars \*/)"),
      kSiPid(R"(si_pid=\d+)"), kSiUid(R"(si_uid=\d+)"), kTimes(R"(si_utime=\d+, si_stime=\d+)"),
      kChild(R"(^((clone|fork|vfork)\(.*\)) = \d+$)"), kPad(R"(\) +=)");
  line = std::regex_replace(line, kAddr, "0xADDR");
  line = std::regex_replace(line, kVars, "/* N vars */");
  line = std::regex_replace(line, kSiPid, "si_pid=PID");
  line = std::regex_replace(line, kSiUid, "si_uid=UID");
  line = std::regex_replace(line, kTimes, "si_utime=T, si_stime=T");
  line = std::regex_replace(line, kChild, "$1 = PID");
  return std::regex_replace(line, kPad, ") =");
}

// "PID text" lines (strace -f -o, and --trace-file) → per-pid sequences of
// the calls the sentry answers, normalised. The first pid's lines before the
// probe's begin marker (its exec and the dynamic loader's) are dropped.
std::vector<std::vector<std::string>> Sequences(const std::string& text) {
  static const std::set<std::string> kNames = AnsweredBySentry();
  static const std::regex kLine(R"(^(\d+) +(.*)$)"), kResumed(R"(^<\.\.\. \w+ resumed>(.*)$)"),
      kName(R"(^(\w+)\()");
  std::map<int, std::vector<std::string>> by_pid;
  std::map<int, std::string> unfinished;
  std::vector<int> order;
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) {
    std::smatch m;
    if (!std::regex_match(raw, m, kLine)) continue;
    int pid = std::stoi(m[1]);
    std::string line = m[2];
    if (!by_pid.count(pid)) order.push_back(pid);
    by_pid[pid];
    const std::string kCut = " <unfinished ...>";
    if (line.size() >= kCut.size() &&
        line.compare(line.size() - kCut.size(), kCut.size(), kCut) == 0) {
      unfinished[pid] = line.substr(0, line.size() - kCut.size());
      continue;
    }
    if (std::regex_match(line, m, kResumed)) {
      line = unfinished[pid] + std::string(m[1]);
      unfinished.erase(pid);
    }
    bool event = line.rfind("+++ ", 0) == 0 || line.rfind("--- ", 0) == 0;
    if (!event && !(std::regex_search(line, m, kName) && kNames.count(m[1]))) continue;
    if (line.rfind("clone(", 0) == 0 && line.find("CLONE_THREAD") != std::string::npos) continue;
    by_pid[pid].push_back(Normalise(line));
  }
  std::vector<std::vector<std::string>> out;
  for (int pid : order) {
    std::vector<std::string> seq = by_pid[pid];
    if (pid == order.front()) {
      auto begin = std::find_if(seq.begin(), seq.end(), [](const std::string& l) {
        return l.find("/trace-probe-begin") != std::string::npos;
      });
      seq.erase(seq.begin(), begin);
    }
    out.push_back(seq);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class StraceCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    umask(022);  // the probe's umask(022) returns what it inherited: 022 in the sandbox
    dir_ = "/tmp/trace-probe-" + std::to_string(getpid());
    native_file_ = dir_ + ".strace";
    sentry_file_ = dir_ + ".sentry";
  }
  void TearDown() override { RunProcess({"/bin/rm", "-rf", dir_, native_file_, sentry_file_}); }
  std::string dir_, native_file_, sentry_file_;
};

TEST_F(StraceCompareTest, TrappedCallsReadAsStraceWritesThem) {
  ProcessResult native =
      RunProcess({"/usr/bin/strace", "-f", "-o", native_file_, TRACE_PROBE, dir_});
  ASSERT_EQ(native.exit_code, 0) << native.err;
  // Without the preload library of fast metadata: its loading at each exec
  // is calls the native run does not make.
  ProcessResult sandboxed = RunSentry({"--no-fast-metadata", "--trace-file", sentry_file_, "--copy",
                                       std::string(TRACE_PROBE) + ":/tmp/trace_probe"},
                                      {"/tmp/trace_probe", dir_});
  ASSERT_EQ(sandboxed.exit_code, 0) << sandboxed.err;
  EXPECT_EQ(sandboxed.err, "") << "the trace goes to the file only";

  auto want = Sequences(ReadFile(native_file_));
  auto got = Sequences(ReadFile(sentry_file_));
  ASSERT_EQ(got.size(), want.size()) << "tasks seen\nstrace:\n"
                                     << ReadFile(native_file_) << "\nsentry:\n"
                                     << ReadFile(sentry_file_);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(Join(got[i]), Join(want[i]));
  // The probe's own lines are all there (not merely equal because empty).
  std::string all;
  for (const auto& seq : got) all += Join(seq);
  for (
      const char* expect : {
          R"(openat(AT_FDCWD, "f1", O_WRONLY|O_CREAT|O_TRUNC, 0640) = 3)",
          R"(openat(AT_FDCWD, "we\"ird\n\t\1name", O_RDWR|O_CREAT|O_EXCL|O_APPEND, 0600) = 3)",
          R"(access("f1", R_OK|W_OK) = 0)",
          R"(newfstatat(AT_FDCWD, "f1", {st_mode=S_IFREG|0600, st_size=5, ...}, 0) = 0)",
          R"(newfstatat(AT_FDCWD, "missing", 0xADDR, AT_SYMLINK_NOFOLLOW) = -1 ENOENT)",
          R"(readlink("sl", "d/f2", 128) = 4)",
          R"(rmdir("d") = -1 ENOTEMPTY (Directory not empty))",
          R"(utimensat(AT_FDCWD, "d/f2", [{tv_sec=1, tv_nsec=0} /* 1970-01-01T00:00:01)",
          R"(bind(4, {sa_family=AF_UNIX, sun_path="sock"}, 7) = 0)",
          R"(sun_path="dg"}, msg_namelen=5, msg_iov=[{iov_base="a message of more than thirty-tw"..., iov_len=39}])",
          R"(connect(8, {sa_family=AF_INET, sin_port=htons(1), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 ECONNREFUSED)",
          R"(inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ECONNREFUSED)",
          R"(execve("/bin/true", ["true", "two words", "an argument longer than thirty-t"...], 0xADDR /* N vars */) = 0)",
          "+++ exited with 3 +++",
          "+++ killed by SIGKILL +++",
          "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_KILLED",
      }) {
    EXPECT_NE(all.find(expect), std::string::npos) << expect << "\nin:\n" << all;
  }
}

// The decoder reads guest memory only for display, bounded: arguments made
// to fault or to be huge change no result, and the trace stays small.
TEST(TraceSecurityTest, HostileArgumentsChangeNothingAndStayBounded) {
  std::string copy = std::string(TRACE_PROBE) + ":/tmp/trace_probe";
  ProcessResult plain = RunSentry({"--copy", copy}, {"/tmp/trace_probe", "--hostile"});
  ProcessResult traced = RunSentry({"--trace", "--copy", copy}, {"/tmp/trace_probe", "--hostile"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_NE(plain.out.find("execve many -1"), std::string::npos) << plain.out;
  EXPECT_LT(traced.err.size(), 64u << 10) << "the trace of a few hostile calls stays small";
  EXPECT_NE(traced.err.find(R"(execve("/nonexistent", [0x)"), std::string::npos) << traced.err;
  EXPECT_NE(traced.err.find(R"(, ...], 0x)"), std::string::npos) << "argv clipped at 32";
}

// To stderr, strace's "[pid N] " prefix appears once a second task exists.
TEST(TraceLayoutTest, PidPrefixOnceASecondTaskExists) {
  ProcessResult r = RunSentry({"--trace"}, {"/bin/sh", "-c", "/bin/true; exit 4"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.err.rfind("execve(\"/bin/sh\", [\"/bin/sh\", \"-c\", \"/bin/true; exit 4\"], ", 0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("[pid     4] execve(\"/bin/true\", [\"/bin/true\"], "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[pid     4] +++ exited with 0 +++"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\n+++ exited with 4 +++\n"), std::string::npos) << r.err;
}

// The loader's calls between its filter and the guest's execve (its rlimits,
// trapped without namespaces) are the sentry's own: the trace starts at execve.
TEST(TraceLayoutTest, TheTraceStartsAtTheGuestsExecve) {
  for (const char* mode : {"--require-namespaces", "--no-namespaces"}) {
    ProcessResult r = RunSentry({"--trace", mode}, {"/bin/true"});
    ASSERT_EQ(r.exit_code, 0) << mode << "\n" << r.err;
    std::string first;
    std::istringstream in(r.err);
    while (std::getline(in, first) && first.rfind("sentry:", 0) == 0) {
    }
    EXPECT_EQ(first.rfind("execve(\"/bin/true\", [\"/bin/true\"], ", 0), 0u) << mode << "\n"
                                                                             << r.err;
  }
}

TEST(TraceLayoutTest, TimestampsAndJsonStayApart) {
  ProcessResult r =
      RunSentry({"--json", "--trace-timestamps"}, {"/bin/sh", "-c", "echo out; echo err >&2"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find(R"("stdout":"out\n","stderr":"err\n")"), std::string::npos) << r.out;
  std::regex stamped(R"(^\d\d:\d\d:\d\d\.\d{6} execve\("/bin/sh", )");
  EXPECT_TRUE(std::regex_search(r.err, stamped)) << r.err;
  EXPECT_EQ(r.out.find("execve"), std::string::npos) << "the trace is never in the result";
}

TEST(TraceLayoutTest, BadFlagsAreUsageErrors) {
  EXPECT_EQ(RunSentry({"--trace-timestamps=sometimes"}, {"/bin/true"}).exit_code, 125);
  EXPECT_EQ(RunSentry({"--trace-file"}, {}).exit_code, 125);
  ProcessResult r = RunSentry({"--trace-file", "/nonexistent-dir/trace"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("--trace-file /nonexistent-dir/trace: No such file or directory"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace sentry::testing
