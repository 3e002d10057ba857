// --trace with --census against strace: native_probe.c run natively under
// `strace -f -o FILE` and under `sentry run --census --trace-file FILE`.
// In a census every call reaches the sentry, so every line strace prints
// must be there, in each task's order, with the same arguments, but for what
// differs by design (README, "Tracing"): a native call is let run by the
// kernel, so the sentry reads none of its memory (a pointer shows as its
// address where strace shows what it points at) and never sees its result
// ("= ?"); a refused row gets the table's errno; pids are the guest's own.
#include <gtest/gtest.h>
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

// One line of a trace: "name(args) = result", or an event ("+++ ...").
struct Line {
  std::string name;
  std::vector<std::string> args;  // top level, split at commas
  std::string result;
  std::string text;  // as printed, padding removed
};

std::vector<std::string> SplitArgs(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quoted) {
      if (c == '\\' && i + 1 < s.size()) {
        cur += c;
        c = s[++i];
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      if (i + 1 < s.size() && s[i + 1] == ' ') ++i;
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Line Parse(const std::string& text) {
  static const std::regex kCall(R"(^(\w+)\((.*)\) += (.*)$)");
  Line l;
  std::smatch m;
  if (std::regex_match(text, m, kCall)) {
    l.name = m[1];
    l.args = SplitArgs(m[2]);
    l.result = m[3];
    l.text = std::string(m[1]) + "(" + std::string(m[2]) + ") = " + l.result;
  } else {
    l.text = text;
  }
  return l;
}

// "PID text" lines → per-task sequences from the probe's begin marker on,
// <unfinished ...>/<... resumed> joined, signals dropped (their place
// against wait4 is a race in both runs).
std::vector<std::vector<Line>> Sequences(const std::string& text) {
  static const std::regex kLine(R"(^(\d+) +(.*)$)"), kResumed(R"(^<\.\.\. \w+ resumed>(.*)$)");
  std::map<int, std::vector<Line>> by_pid;
  std::map<int, std::string> unfinished;
  std::vector<int> order;
  std::istringstream in(text);
  std::string raw;
  bool begun = false;
  while (std::getline(in, raw)) {
    std::smatch m;
    if (!std::regex_match(raw, m, kLine)) continue;
    int pid = std::stoi(m[1]);
    std::string line = m[2];
    if (!begun) {
      begun = line.find("/census-probe-begin") != std::string::npos;
      if (!begun) continue;
    }
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
    if (line.rfind("--- ", 0) == 0) continue;
    if (!by_pid.count(pid)) order.push_back(pid);
    by_pid[pid].push_back(Parse(line));
  }
  std::vector<std::vector<Line>> out;
  for (int pid : order) out.push_back(by_pid[pid]);
  return out;
}

std::string Join(const std::vector<Line>& lines) {
  std::string out;
  for (const Line& l : lines) out += l.text + "\n";
  return out;
}

// Does the sentry's line `got` read as strace's `want`, but for what
// differs by design?
bool SameButByDesign(const Line& got, const Line& want, const std::set<std::string>& refused) {
  static const std::regex kAddr("^0x[0-9a-f]+$");
  if (got.name.empty() || want.name.empty()) return got.text == want.text;
  if (got.name != want.name || got.args.size() != want.args.size()) return false;
  bool native = got.result == "?";
  for (size_t i = 0; i < got.args.size(); ++i) {
    if (got.args[i] == want.args[i]) continue;
    // A pointer the sentry did not read, where strace shows what it points at.
    if (native && std::regex_match(got.args[i], kAddr)) continue;
    // Addresses of the process (strace prints the same kind of value).
    if (std::regex_match(got.args[i], kAddr) && std::regex_match(want.args[i], kAddr)) continue;
    if (got.args[i].find("child_tidptr=") == 0 && want.args[i].find("child_tidptr=") == 0) continue;
    return false;
  }
  if (native || refused.count(got.name)) return true;
  // A child's pid is the guest's own.
  if (got.name == "clone" || got.name == "fork" || got.name == "vfork") return true;
  return got.result == want.result;
}

std::set<std::string> RefusedRows() {
  std::set<std::string> names;
  for (const SyscallRow& row : SyscallTable()) {
    if (row.action == Action::kErrno) names.insert(row.name);
  }
  return names;
}

TEST(CensusTraceTest, NativeCallsReadAsStraceWritesThem) {
  std::string base = "/tmp/census-probe-" + std::to_string(getpid());
  std::string native_file = base + ".strace", sentry_file = base + ".sentry",
              census_file = base + ".census";
  ProcessResult native = RunProcess({"/usr/bin/strace", "-f", "-o", native_file, NATIVE_PROBE});
  ASSERT_EQ(native.exit_code, 0) << native.err;
  ProcessResult sandboxed = RunSentry({"--census", census_file, "--trace-file", sentry_file,
                                       "--copy", std::string(NATIVE_PROBE) + ":/tmp/native_probe"},
                                      {"/tmp/native_probe"});
  ASSERT_EQ(sandboxed.exit_code, 0) << sandboxed.err;
  std::string want_text = ReadFile(native_file), got_text = ReadFile(sentry_file);
  RunProcess({"/bin/rm", "-f", native_file, sentry_file, census_file});

  auto want = Sequences(want_text);
  auto got = Sequences(got_text);
  ASSERT_EQ(got.size(), 2u) << got_text;
  ASSERT_EQ(want.size(), 2u) << want_text;
  const std::set<std::string> refused = RefusedRows();
  for (size_t t = 0; t < 2; ++t) {
    bool same = got[t].size() == want[t].size();
    for (size_t i = 0; same && i < got[t].size(); ++i) {
      same = SameButByDesign(got[t][i], want[t][i], refused);
    }
    EXPECT_TRUE(same) << "task " << t << "\nsentry:\n"
                      << Join(got[t]) << "\nstrace:\n"
                      << Join(want[t]);
  }
  // What the probe calls is all there, decoded from registers alone.
  std::string all = Join(got[0]) + Join(got[1]);
  for (const char* expect : {
           "openat(AT_FDCWD, \"/dev/null\", O_WRONLY) = 3",
           "lseek(3, 0, SEEK_END) = ?",
           "dup2(3, 10) = ?",
           "fcntl(10, F_SETFD, FD_CLOEXEC) = ?",
           "mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = ?",
           "mprotect(0x",
           // Refused by the table: the sentry answers it, so it reads the path.
           "umount2(\"/census-probe-none\", 0) = -1 EPERM (Operation not permitted)",
           "wait4(-1, 0x",
           "exit_group(7) = ?",
           "+++ exited with 7 +++",
           "exit_group(0) = ?",
       }) {
    EXPECT_NE(all.find(expect), std::string::npos) << expect << "\nin:\n" << got_text;
  }
  EXPECT_TRUE(std::regex_search(all, std::regex(R"(write\(3, 0x[0-9a-f]+, 6\) = \?)"))) << all;
}

// To stderr, the native calls of every task carry strace's "[pid N] ".
TEST(CensusTraceTest, NativeCallsOfEveryTaskCarryTheirPid) {
  std::string census = "/tmp/census-pids-" + std::to_string(getpid()) + ".json";
  ProcessResult r =
      RunSentry({"--census", census, "--trace"}, {"/bin/sh", "-c", "/bin/true; exit 4"});
  RunProcess({"/bin/rm", "-f", census});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("[pid     4] brk(NULL)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[pid     4] exit_group(0)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exit_group(4)"), std::string::npos) << r.err;
  // Printed once, by the tracer, with the child's pid.
  std::regex forks(R"((vfork|clone|fork)\()");
  auto n = std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), forks),
                         std::sregex_iterator());
  EXPECT_EQ(n, 1) << r.err;
}

// Security: in a census, --trace reads no memory of a call the kernel then
// runs (a native one shows its pointers as addresses, asserted above), and
// what it reads of refused calls is bounded: trace_probe's hostile arguments
// (unterminated strings against an unreadable page, huge counts, a
// 200,000-entry argv) give the same results traced or not, and a small trace.
TEST(CensusTraceTest, HostileArgumentsChangeNothingAndStayBounded) {
  std::string copy = std::string(TRACE_PROBE) + ":/tmp/trace_probe";
  std::string census = "/tmp/census-hostile-" + std::to_string(getpid()) + ".json";
  ProcessResult plain =
      RunSentry({"--census", census, "--copy", copy}, {"/tmp/trace_probe", "--hostile"});
  ProcessResult traced =
      RunSentry({"--census", census, "--trace", "--copy", copy}, {"/tmp/trace_probe", "--hostile"});
  RunProcess({"/bin/rm", "-f", census});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_NE(plain.out.find("execve many -1"), std::string::npos) << plain.out;
  EXPECT_LT(traced.err.size(), 256u << 10) << "every call of the probe, each line bounded";
}

// Without namespaces the sentry checks a pid-naming call's registers and lets
// the kernel run it (syscalls/sys_pid.cc): like a census's native calls, it
// is printed from its registers alone (setrlimit's new limits as an address).
TEST(TraceContinuedCallTest, ACallTheKernelRunsIsNotReadForTheTrace) {
  ProcessResult r =
      RunSentry({"--no-namespaces", "--trace"}, {"/bin/sh", "-c", "ulimit -n 512; echo ok"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(prlimit64\(0, RLIMIT_NOFILE, 0x[0-9a-f]+, NULL\) += \?)")))
      << r.err;
  EXPECT_EQ(r.err.find("rlim_cur"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sentry::testing
