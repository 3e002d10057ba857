// config.json's process and linux.resources.cpu fields through the real
// binary: the guest's supplementary groups (getgroups), its rlimits as set
// before its execve, and the CPU shares, quota and period of the sandbox's
// cgroup (v1 here).
#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

class OciProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  void SetUp() override {
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
  }
  std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        SentryBinary(), "--root", dir_.path() + "/state", "--log", Log(), "--log-format", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  std::string Bundle(const std::string& name, const std::vector<std::string>& args,
                     const std::string& extra_process, const std::string& extra_top = "") {
    std::string b = dir_.path() + "/" + name;
    WriteBundle(b, rootfs_, args, extra_process, extra_top);
    return b;
  }
  std::string Log() { return dir_.path() + "/log.json"; }

  ScratchDir dir_;
  std::string rootfs_;
};

TEST_F(OciProcess, AdditionalGidsAndRlimitsAreTheGuests) {
  std::string b = Bundle("g", {"python3", "-c", R"(
import os, resource as r
print(sorted(os.getgroups()))
for n in ("NOFILE", "STACK", "CORE", "MSGQUEUE"):
    print(n, *r.getrlimit(getattr(r, "RLIMIT_" + n)))
)"},
                         R"("user":{"uid":1000,"gid":1000,"additionalGids":[27,4242]},)"
                         R"("rlimits":[{"type":"RLIMIT_NOFILE","soft":100,"hard":200},)"
                         R"({"type":"RLIMIT_STACK","soft":4194304,"hard":8388608},)"
                         R"({"type":"RLIMIT_CORE","soft":1000,"hard":1000},)"
                         R"({"type":"RLIMIT_MSGQUEUE","soft":1000,"hard":2000}])");
  ProcessResult r = RunProcess(Argv({"run", "--bundle", b, "g1"}), "", 60);
  EXPECT_EQ(r.exit_code, 0) << r.err << ReadFile(Log());
  EXPECT_EQ(r.out,
            "[27, 4242]\nNOFILE 100 200\nSTACK 4194304 8388608\nCORE 0 0\nMSGQUEUE 1000 2000\n");
  // What was lowered is said once.
  EXPECT_NE(ReadFile(Log()).find("RLIMIT_CORE->0"), std::string::npos) << ReadFile(Log());
  // sentry's own permission checks count them too: a file may be given to
  // one of the guest's groups (chown's rule for the unprivileged), not to another.
  std::string f = Bundle("f", {"python3", "-c", R"(
import errno, os
open("/tmp/g", "w").close()
os.chown("/tmp/g", -1, 4242)
print(os.stat("/tmp/g").st_gid)
try:
    os.chown("/tmp/g", -1, 5555)
except OSError as e:
    print(errno.errorcode[e.errno])
)"},
                         R"("user":{"uid":1000,"gid":1000,"additionalGids":[4242]})");
  ProcessResult file = RunProcess(Argv({"run", "--bundle", f, "g2"}), "", 60);
  EXPECT_EQ(file.exit_code, 0) << file.err << ReadFile(Log());
  EXPECT_EQ(file.out, "4242\nEPERM\n");
}

// The sandbox's cpu cgroup (cgroup v1: cpu.shares, cpu.cfs_quota_us,
// cpu.cfs_period_us), read from the host while the container waits created.
TEST_F(OciProcess, CpuSharesQuotaAndPeriodReachTheCgroup) {
  if (access("/sys/fs/cgroup/cpu/cpu.shares", F_OK) != 0) GTEST_SKIP() << "no cgroup v1 cpu";
  std::string b = Bundle("c", {"true"}, "",
                         R"("linux":{"resources":{"cpu":{"shares":512,"quota":20000,)"
                         R"("period":50000}}})");
  std::string pid_file = dir_.path() + "/c.pid";
  ASSERT_EQ(SpawnToFiles(Argv({"create", "--bundle", b, "--pid-file", pid_file, "c1"}),
                         dir_.path() + "/c.out", dir_.path() + "/c.err"),
            0)
      << ReadFile(Log());
  pid_t pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pid_file)), &pid));
  // The pid is the monitor's; the sandbox's cgroup is "sentry-PID" beneath
  // the monitor's own (sentry/run/cgroups.cc).
  std::string cpu_path;
  for (absl::string_view line :
       absl::StrSplit(ReadFile("/proc/" + std::to_string(pid) + "/cgroup"), '\n')) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() < 3) continue;
    for (absl::string_view c : absl::StrSplit(f[1], ',')) {
      if (c == "cpu") {
        cpu_path =
            "/sys/fs/cgroup/cpu" + (f[2] == "/" ? "" : f[2]) + "/sentry-" + std::to_string(pid);
      }
    }
  }
  ASSERT_EQ(access(cpu_path.c_str(), F_OK), 0) << cpu_path;
  EXPECT_EQ(ReadFile(cpu_path + "/cpu.shares"), "512\n");
  EXPECT_EQ(ReadFile(cpu_path + "/cpu.cfs_quota_us"), "20000\n");
  EXPECT_EQ(ReadFile(cpu_path + "/cpu.cfs_period_us"), "50000\n");
  ProcessResult del = RunProcess(Argv({"delete", "--force", "c1"}), "", 60);
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_NE(access(cpu_path.c_str(), F_OK), 0) << "the cgroup is left: " << cpu_path;
}

}  // namespace
}  // namespace sentry::testing
