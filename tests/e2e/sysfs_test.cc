// /sys and the /proc files that go with it (sentry/kernel/sysfs.h): the CPU
// count and the cgroup limits programs read to size themselves show the
// sandbox's limits, never the host's, and every reader agrees.
#include <gtest/gtest.h>
#include <sched.h>

#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kReaders = R"py(import os, subprocess
def read(p):
    try:
        return open(p).read().strip()
    except OSError as e:
        return "errno %d" % e.errno
print("cpu_count=%s" % os.cpu_count())
print("affinity=%d" % len(os.sched_getaffinity(0)))
print("nproc=%s" % subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
print("onln=%d" % os.sysconf("SC_NPROCESSORS_ONLN"))
print("conf=%d" % os.sysconf("SC_NPROCESSORS_CONF"))
for p in ["devices/system/cpu/online", "devices/system/cpu/possible", "devices/system/cpu/present",
          "fs/cgroup/memory.max", "fs/cgroup/cpu.max", "fs/cgroup/pids.max",
          "fs/cgroup/cgroup.controllers", "fs/cgroup/memory/memory.limit_in_bytes",
          "fs/cgroup/cpu/cpu.cfs_quota_us", "fs/cgroup/cpu/cpu.cfs_period_us"]:
    print("%s=%s" % (p, read("/sys/" + p)))
print("cgroup=%s" % read("/proc/self/cgroup"))
print("cgroup2=%s" % [l.split()[4] for l in open("/proc/self/mountinfo") if " - cgroup2 " in l])
print("mounts=%s" % [l.split()[1] for l in open("/proc/self/mounts") if l.startswith(("sysfs", "cgroup2"))])
print("cgroups=%s" % read("/proc/cgroups").splitlines()[1:])
print("cpuinfo=%d" % read("/proc/cpuinfo").count("processor"))
cpus = sorted(n for n in os.listdir("/sys/devices/system/cpu") if n.startswith("cpu"))
print("cpudirs=%s" % cpus)
for p in ["/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/memory.max"]:
    try:
        open(p, "w").write("max\n")
        print("write %s=OK" % p)
    except OSError as e:
        print("write %s=errno %d" % (p, e.errno))
)py";

int HostCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  return CPU_COUNT(&set);
}

TEST(Sysfs, CpusAndCgroupFilesShowTheLimits) {
  if (HostCpus() < 2) GTEST_SKIP() << "one CPU: --cpus 1 shows nothing different";
  ProcessResult r =
      SandboxScript(kReaders, {"--cpus", "0.5", "--memory", "300m", "--pids-limit", "50"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  for (const char* k : {"cpu_count", "affinity", "nproc", "onln", "conf", "cpuinfo"}) {
    EXPECT_EQ(kv[k], "1") << k << "\n" << r.out;
  }
  std::string cpu = kv["devices/system/cpu/online"];
  EXPECT_EQ(cpu.find_first_not_of("0123456789"), std::string::npos) << cpu;
  EXPECT_EQ(kv["devices/system/cpu/possible"], cpu);
  EXPECT_EQ(kv["devices/system/cpu/present"], cpu);
  EXPECT_EQ(kv["cpudirs"], "['cpu" + cpu + "']");
  EXPECT_EQ(kv["fs/cgroup/memory.max"], "314572800");
  EXPECT_EQ(kv["fs/cgroup/cpu.max"], "50000 100000");
  EXPECT_EQ(kv["fs/cgroup/pids.max"], "50");
  EXPECT_EQ(kv["fs/cgroup/cgroup.controllers"], "cpu memory pids");
  EXPECT_EQ(kv["fs/cgroup/memory/memory.limit_in_bytes"], "314572800");
  EXPECT_EQ(kv["fs/cgroup/cpu/cpu.cfs_quota_us"], "50000");
  EXPECT_EQ(kv["fs/cgroup/cpu/cpu.cfs_period_us"], "100000");
  EXPECT_EQ(kv["cgroup"], "0::/");
  EXPECT_EQ(kv["cgroup2"], "['/sys/fs/cgroup']");
  EXPECT_EQ(kv["mounts"], "['/sys', '/sys/fs/cgroup']");
  EXPECT_EQ(kv["cgroups"], "['cpu\\t0\\t1\\t1', 'memory\\t0\\t1\\t1', 'pids\\t0\\t1\\t1']");
  EXPECT_EQ(kv["write /sys/fs/cgroup/cpu.max"], "errno 13");
  EXPECT_EQ(kv["write /sys/fs/cgroup/memory.max"], "errno 13");
}

// Without --cpus, every CPU the sandbox may run on, as natively; without
// limits the cgroup files say "max".
TEST(Sysfs, WithoutAQuotaEveryReaderAgreesWithNative) {
  ProcessResult native = NativeScript(kReaders);
  ASSERT_EQ(native.exit_code, 0) << Describe(native);
  ProcessResult r = SandboxScript(kReaders);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  auto nkv = KeyValues(native.out);
  for (const char* k :
       {"cpu_count", "affinity", "nproc", "onln", "cpuinfo", "devices/system/cpu/online"}) {
    EXPECT_EQ(kv[k], nkv[k]) << k << "\n" << r.out;
  }
  EXPECT_EQ(kv["cpu_count"], std::to_string(HostCpus()));
  EXPECT_EQ(kv["fs/cgroup/cpu.max"], "max 100000");
  EXPECT_EQ(kv["fs/cgroup/cpu/cpu.cfs_quota_us"], "-1");
  EXPECT_EQ(kv["fs/cgroup/pids.max"], "128");           // the default --pids-limit
  EXPECT_EQ(kv["fs/cgroup/memory.max"], "1073741824");  // the default --memory
}

TEST(Sysfs, RootCannotWriteTheLimitsEither) {
  ProcessResult r = SandboxScript(kReaders, {"--root", "--cpus", "1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  EXPECT_NE(kv["write /sys/fs/cgroup/cpu.max"], "OK");
  EXPECT_NE(kv["write /sys/fs/cgroup/memory.max"], "OK");
  EXPECT_EQ(kv["fs/cgroup/cpu.max"], "100000 100000");
}

}  // namespace
}  // namespace sentry::testing
