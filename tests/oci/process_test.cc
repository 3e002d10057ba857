// config.json's process and linux.resources fields through the real
// binary: the guest's supplementary groups (getgroups), its rlimits as set
// before its execve, its umask, the CPU shares, quota and period of the
// sandbox's cgroup (v1 here), and its memory and pids limits, as the guest
// reads them and as the host's cgroup holds them.
#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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
  // The sandbox's cgroup of a controller: "sentry-PID" beneath the
  // monitor's own (sentry/run/cgroups.cc), PID the monitor's (the pid file's).
  static std::string SandboxCgroup(pid_t pid, absl::string_view controller) {
    for (absl::string_view line :
         absl::StrSplit(ReadFile("/proc/" + std::to_string(pid) + "/cgroup"), '\n')) {
      std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (f.size() < 3) continue;
      for (absl::string_view c : absl::StrSplit(f[1], ',')) {
        if (c == controller) {
          return absl::StrCat("/sys/fs/cgroup/", controller, f[2] == "/" ? "" : f[2], "/sentry-",
                              pid);
        }
      }
    }
    return "";
  }

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
  std::string cpu_path = SandboxCgroup(pid, "cpu");
  ASSERT_EQ(access(cpu_path.c_str(), F_OK), 0) << cpu_path;
  EXPECT_EQ(ReadFile(cpu_path + "/cpu.shares"), "512\n");
  EXPECT_EQ(ReadFile(cpu_path + "/cpu.cfs_quota_us"), "20000\n");
  EXPECT_EQ(ReadFile(cpu_path + "/cpu.cfs_period_us"), "50000\n");
  ProcessResult del = RunProcess(Argv({"delete", "--force", "c1"}), "", 60);
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_NE(access(cpu_path.c_str(), F_OK), 0) << "the cgroup is left: " << cpu_path;
}

// linux.resources.memory.limit and pids.limit: the guest reads them in its
// /sys/fs/cgroup, and the host's cgroup sentry made holds them while the
// container runs (memory and swap together at the limit). process.user.umask
// is the guest's first umask.
TEST_F(OciProcess, MemoryAndPidsLimitsReachTheGuestAndTheCgroup) {
  if (access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) != 0 ||
      access("/sys/fs/cgroup/pids", F_OK) != 0) {
    GTEST_SKIP() << "no cgroup v1 memory and pids";
  }
  std::string b = Bundle("m",
                         {"sh", "-c",
                          "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max "
                          "/sys/fs/cgroup/memory/memory.limit_in_bytes; umask; "
                          "echo > /tmp/f; stat -c %a /tmp/f; exec sleep 100"},
                         R"("user":{"uid":0,"gid":0,"umask":23})",
                         R"("linux":{"resources":{"memory":{"limit":201326592},)"
                         R"("pids":{"limit":37}}})");
  std::string pid_file = dir_.path() + "/m.pid", out = dir_.path() + "/m.out";
  ASSERT_EQ(SpawnToFiles(Argv({"create", "--bundle", b, "--pid-file", pid_file, "m1"}), out,
                         dir_.path() + "/m.err"),
            0)
      << ReadFile(Log());
  pid_t pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pid_file)), &pid));
  ASSERT_EQ(RunProcess(Argv({"start", "m1"}), "", 60).exit_code, 0);
  const std::string want = "201326592\n37\n201326592\n0027\n640\n";
  for (int i = 0; i < 500 && ReadFile(out).size() < want.size(); ++i) usleep(20 * 1000);
  EXPECT_EQ(ReadFile(out), want) << ReadFile(dir_.path() + "/m.err");
  std::string memory = SandboxCgroup(pid, "memory"), pids = SandboxCgroup(pid, "pids");
  EXPECT_EQ(ReadFile(memory + "/memory.limit_in_bytes"), "201326592\n") << memory;
  if (access((memory + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0) {
    EXPECT_EQ(ReadFile(memory + "/memory.memsw.limit_in_bytes"), "201326592\n");
  }
  EXPECT_EQ(ReadFile(pids + "/pids.max"), "37\n") << pids;
  // The guest's processes are in them.
  EXPECT_NE(ReadFile(pids + "/cgroup.procs"), "");
  ProcessResult del = RunProcess(Argv({"delete", "--force", "m1"}), "", 60);
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(WaitExit(pid, 10), 137);
  EXPECT_NE(access(memory.c_str(), F_OK), 0) << "the cgroup is left: " << memory;
  EXPECT_NE(access(pids.c_str(), F_OK), 0) << "the cgroup is left: " << pids;
}

}  // namespace
}  // namespace sentry::testing
