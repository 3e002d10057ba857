// sentry run --census FILE through the real binary: the counts of a program
// whose calls are known (census_probe.c), by action and errno, and a phase.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/util/subprocess.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

// A fresh census file path, removed at the end.
class CensusFile final {
 public:
  CensusFile() {
    char tmpl[] = "/tmp/census_test.XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    path_ = tmpl;
  }
  ~CensusFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  json Read() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
  }

 private:
  std::string path_;
};

const json* Row(const json& census, const std::string& name) {
  for (const json& r : census["syscalls"]) {
    if (r["name"] == name) return &r;
  }
  return nullptr;
}

uint64_t Count(const json* row, const char* key) {
  return row && row->contains(key) ? (*row)[key].get<uint64_t>() : 0;
}

uint64_t ErrnoCount(const json* row, const char* err) {
  return row && (*row)["errnos"].contains(err) ? (*row)["errnos"][err].get<uint64_t>() : 0;
}

std::string Probe() { return CENSUS_PROBE; }

// The probe, copied in and run under --census (with extra flags).
json CensusOfProbe(const std::vector<std::string>& flags, int n, int m, std::string* out) {
  CensusFile file;
  std::vector<std::string> all = {"--census", file.path(), "--copy",
                                  Probe() + ":/home/sandbox/probe"};
  all.insert(all.end(), flags.begin(), flags.end());
  ProcessResult r = RunSentry(all, {"/home/sandbox/probe", std::to_string(n), std::to_string(m)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  *out = r.out;
  return file.Read();
}

void ExpectProbeCounts(const json& c, int n, int m) {
  ASSERT_TRUE(c.is_object()) << "no census written";
  EXPECT_EQ(c["format"], "sentry-census/1");
  EXPECT_NE(c["counting"].get<std::string>().find("SECCOMP_USER_NOTIF_FLAG_CONTINUE"),
            std::string::npos);
  const json* getpid = Row(c, "getpid");
  EXPECT_EQ(Count(getpid, "calls"), n);
  EXPECT_EQ(Count(getpid, "native"), n);
  EXPECT_EQ(Count(getpid, "resultNotSeen"), n);
  const json* openat = Row(c, "openat");
  EXPECT_EQ(Count(openat, "trapped"), m);
  EXPECT_EQ(ErrnoCount(openat, "ENOENT"), m);
  EXPECT_GT(Count(openat, "trapNs"), 0u);
  const json* ptrace = Row(c, "ptrace");
  EXPECT_EQ(Count(ptrace, "refused"), 3u);
  EXPECT_EQ(ErrnoCount(ptrace, "EPERM"), 3u);
  const json* socket = Row(c, "socket");
  EXPECT_EQ(Count(socket, "refused"), 2u);
  EXPECT_EQ(ErrnoCount(socket, "EAFNOSUPPORT"), 2u);
  const json* unknown = Row(c, "syscall_1000");
  EXPECT_EQ(Count(unknown, "refused"), 1u);
  EXPECT_EQ(ErrnoCount(unknown, "ENOSYS"), 1u);
  const json* execve = Row(c, "execve");
  EXPECT_EQ(Count(execve, "traced"), 1u);
  EXPECT_EQ(Row(c, "syscall_5457230"), nullptr) << "a phase mark is no call";
  // The phase holds exactly the probe's calls.
  ASSERT_TRUE(c.contains("phases"));
  ASSERT_EQ(c["phases"].size(), 1u);
  const json& phase = c["phases"][0];
  EXPECT_EQ(phase["label"], "probe");
  EXPECT_EQ(phase["calls"]["getpid"], n);
  EXPECT_EQ(phase["calls"]["openat"], m);
  EXPECT_EQ(phase["calls"]["ptrace"], 3);
  EXPECT_EQ(phase["calls"]["socket"], 2);
  EXPECT_EQ(phase["calls"]["syscall_1000"], 1);
  EXPECT_EQ(phase["calls"].size(), 5u) << phase.dump();
  // Totals add up.
  uint64_t calls = 0;
  for (const json& r : c["syscalls"]) {
    EXPECT_EQ(r["calls"].get<uint64_t>(),
              r["native"].get<uint64_t>() + r["trapped"].get<uint64_t>() +
                  r["traced"].get<uint64_t>() + r["refused"].get<uint64_t>())
        << r.dump();
    calls += r["calls"].get<uint64_t>();
  }
  EXPECT_EQ(c["totals"]["calls"].get<uint64_t>(), calls);
}

TEST(CensusTest, CountsAKnownProgramByActionAndErrno) {
  std::string out;
  json c = CensusOfProbe({}, 37, 11, &out);
  // The guest saw what it sees without a census.
  EXPECT_EQ(out, "enoent=11 eperm=3 eafnosupport=2 enosys=1\n");
  ExpectProbeCounts(c, 37, 11);
}

TEST(CensusTest, CountsOnTheSeccompWallAlone) {
  std::string out;
  json c = CensusOfProbe({"--no-namespaces"}, 5, 4, &out);
  EXPECT_EQ(out, "enoent=4 eperm=3 eafnosupport=2 enosys=1\n");
  ExpectProbeCounts(c, 5, 4);
  EXPECT_EQ(c["table"], "seccomp wall alone");
}

TEST(CensusTest, AShellPipelineCountsEveryProcess) {
  CensusFile file;
  ProcessResult r =
      RunSentry({"--census", file.path()}, {"/bin/sh", "-c", "echo a | /bin/cat; /bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a\n");
  json c = file.Read();
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(Count(Row(c, "execve"), "traced"), 3u);  // sh, cat, true
  EXPECT_GE(Count(Row(c, "write"), "native"), 1u);
  EXPECT_FALSE(c.contains("phases"));
  EXPECT_GT(c["totals"]["native"].get<uint64_t>(), c["totals"]["trapped"].get<uint64_t>());
}

TEST(CensusTest, WithoutCensusNothingIsWritten) {
  CensusFile file;
  ProcessResult r = RunSentry({}, {"/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(file.Read().is_object());
}

TEST(CensusTest, AnUnwritableFileIsSaidAndTheRunStillEnds) {
  ProcessResult r = RunSentry({"--census", "/no/such/dir/census.json"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("--census /no/such/dir/census.json"), std::string::npos) << r.err;
}

TEST(CensusTest, NeedsAFile) {
  ProcessResult r = RunSentry({"--census"}, {});
  EXPECT_EQ(r.exit_code, 125);
}

}  // namespace
}  // namespace sentry::testing
